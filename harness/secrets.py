"""Secrets never reach disk: headers dropped and secret values replaced before writing.

Cassettes drop secret headers and mask secret values. Everything else harness writes or
prints — results.json, the HTML report, pytest failure text, the ``harness`` logger —
passes through :func:`scrub_text` as a last line of defence: a tool that echoes the API
key, or an error message quoting it, is masked as ``<OPENAI_API_KEY>``.

Values shorter than ``MIN_SECRET_LENGTH`` are not masked: see there.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

__all__ = [
    "MIN_SECRET_LENGTH",
    "REQUEST_SECRET_HEADERS",
    "RESPONSE_SECRET_HEADERS",
    "SECRET_ENV_VARS",
    "Scrubber",
    "ScrubbingFilter",
    "scrub_model",
    "scrub_text",
]

# Credentials and the account they belong to.
REQUEST_SECRET_HEADERS = frozenset(
    {"authorization", "api-key", "x-api-key", "openai-organization", "openai-project", "cookie"}
)
# What a server says back about the account, and session cookies.
RESPONSE_SECRET_HEADERS = frozenset({"set-cookie", "openai-organization", "openai-project"})
# Environment variables whose values are replaced wherever they appear.
SECRET_ENV_VARS = ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID")
# A value shorter than this is a placeholder, not a secret: local OpenAI-compatible
# servers take any key, and people set OPENAI_API_KEY=x, "dummy" or "ollama". Masking
# such a value would replace every occurrence of that text in a cassette (header names,
# JSON keys, model text: "x-stainless-lang" becomes "<OPENAI_API_KEY>-stainless-lang"),
# and a replay without the variable set could not put it back. Real credentials are far
# longer (OpenAI keys have over 50 characters, org and project ids about 28), so
# nothing secret is left unmasked. The secret *headers* are dropped whatever they hold.
MIN_SECRET_LENGTH = 8


# OpenAI organization and project ids (``org-`` / ``proj_`` and 24 letters and digits).
_ACCOUNT_IDS = re.compile(r"\b(org-|proj_)[A-Za-z0-9]{16,}\b")
_ACCOUNT_MASKS = {"org-": "<an org id>", "proj_": "<a project id>"}


class Scrubber:
    """Removes secret headers and replaces secret values (read from the environment when built)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        pairs = [(env.get(name, ""), f"<{name}>") for name in SECRET_ENV_VARS]
        # Longest first, so a value that contains another is replaced whole.
        self.values = sorted(
            ((value, mask) for value, mask in pairs if len(value) >= MIN_SECRET_LENGTH),
            key=lambda p: -len(p[0]),
        )

    def text(self, text: str) -> str:
        """``text`` with every secret value replaced by ``<VARIABLE_NAME>``, and any
        OpenAI organization or project id by ``<an org id>`` / ``<a project id>``."""
        for value, mask in self.values:
            if value in text:
                text = text.replace(value, mask)
        if "org-" in text or "proj_" in text:
            # The API names the account in its messages ("Rate limit reached ... in
            # organization org-..."), whatever the environment holds.
            text = _ACCOUNT_IDS.sub(lambda m: _ACCOUNT_MASKS[m.group(1)], text)
        return text

    def value(self, value: Any) -> Any:
        """A copy of a nested value (dicts, lists, str, bytes) with secret values replaced."""
        if not self.values:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bytes):
            for secret, mask in self.values:
                value = value.replace(secret.encode(), mask.encode())
            return value
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def restore(self, value: Any) -> Any:
        """The reverse of ``value()``: masks back to the current secret values.

        Used when a cassette is loaded, so a conversation that held a secret (a key
        echoed in an error message, say) replays unchanged under the same environment.
        """
        if not self.values:
            return value
        if isinstance(value, str):
            for secret, mask in self.values:
                if mask in value:
                    value = value.replace(mask, secret)
            return value
        if isinstance(value, bytes):
            for secret, mask in self.values:
                value = value.replace(mask.encode(), secret.encode())
            return value
        if isinstance(value, dict):
            return {k: self.restore(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.restore(v) for v in value]
        return value

    @staticmethod
    def headers(headers: Mapping[str, Any] | None, secret: frozenset[str]) -> dict[str, Any]:
        """The headers without the secret ones (names compared case-insensitively)."""
        return {k: v for k, v in (headers or {}).items() if k.lower() not in secret}

    def interaction(self, interaction: dict[str, Any]) -> dict[str, Any]:
        """A serialized interaction (vcrpy's dict form) made safe to write."""
        request = dict(interaction.get("request") or {})
        response = dict(interaction.get("response") or {})
        request["headers"] = self.headers(request.get("headers"), REQUEST_SECRET_HEADERS)
        response["headers"] = self.headers(response.get("headers"), RESPONSE_SECRET_HEADERS)
        return self.value({**interaction, "request": request, "response": response})


def scrub_text(text: str) -> str:
    """``text`` with the current environment's secret values masked.

    Secrets are matched as they appear in the text; the values these variables hold
    (API keys, org and project ids) have no characters that JSON or HTML escape.
    """
    return Scrubber().text(text)


def scrub_model(model: M) -> M:
    """``model`` itself, or a copy with secret values masked if it holds any.

    For output that shortens long texts (the HTML report, pytest's failure text): masking
    before shortening, so no clipped prefix of a secret is left behind. Costs one JSON
    dump only when secrets are set in the environment.
    """
    scrubber = Scrubber()
    if not scrubber.values:
        return model
    text = model.model_dump_json()
    clean = scrubber.text(text)
    return model if clean == text else type(model).model_validate_json(clean)


class ScrubbingFilter(logging.Filter):
    """A logging filter that masks secret values in a record's message and traceback.

    Filters run only for records the logger is enabled for, so a disabled ``harness``
    logger costs nothing per round.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        scrubber = Scrubber()
        if not scrubber.values:
            return True
        record.msg = scrubber.text(record.getMessage())
        record.args = None
        if record.exc_info:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = scrubber.text(text)
            record.exc_info = None
        return True
