"""Secrets never reach disk or a message: headers kept by name, secret values masked.

Cassettes keep only the headers named below (``REQUEST_HEADERS_KEPT``,
``RESPONSE_HEADERS_KEPT``): whatever else a client or a gateway sends is dropped, so a
credential under a header harness has never heard of is not written. Everything else
harness writes or prints — cassettes, frozen scenarios, results.json, the HTML report,
pytest failure text, messages, the ``harness`` logger — passes through
:meth:`Scrubber.text` (``scrub_text``): the values of ``SECRET_ENV_VARS``, OpenAI
organization and project ids, and credentials in URLs are masked. A streamed body is
masked on the joined text of its pieces (``Scrubber.stream``), so a key cut between two
chunks goes too; a message that shortens a value masks it first (``masked_repr``).

Values shorter than ``MIN_SECRET_LENGTH`` are not masked: see there.
"""

from __future__ import annotations

import builtins
import json
import logging
import os
import re
import reprlib
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

from harness._modeljson import dump_json
from harness._vendors import BUILTIN_VENDORS

M = TypeVar("M", bound=BaseModel)

__all__ = [
    "HEADER_PREFIXES_KEPT",
    "MIN_SECRET_LENGTH",
    "REQUEST_HEADERS_KEPT",
    "REQUEST_SECRET_HEADERS",
    "RESPONSE_HEADERS_KEPT",
    "RESPONSE_SECRET_HEADERS",
    "SECRET_ENV_VARS",
    "URL_SECRET_PARAMS",
    "Scrubber",
    "ScrubbingFilter",
    "add_secret_names",
    "masked_repr",
    "scrub_model",
    "scrub_text",
]

# Request headers a cassette keeps: what the body is and who sent it. The role marker
# (harness.llm._base.ROLE_HEADER) is what a judge's replay matches on.
REQUEST_HEADERS_KEPT = frozenset(
    {
        "accept",
        "content-type",
        "user-agent",
        "openai-beta",
        "anthropic-version",
        "anthropic-beta",
        "x-harness-role",
    }
)
# Response headers a cassette keeps: what the body is, and the request id a provider's
# support asks for. A gateway's token, the account, cookies: none of them is needed to
# replay, and any of them may be a secret.
RESPONSE_HEADERS_KEPT = frozenset(
    {"content-type", "content-encoding", "x-request-id", "request-id"}
)
# Kept by prefix: the SDKs describing themselves (x-stainless-lang, -os, -retry-count...).
HEADER_PREFIXES_KEPT = ("x-stainless-",)
# Credentials and the account they belong to: dropped even where a list above would keep them.
REQUEST_SECRET_HEADERS = frozenset(
    {
        *(h for v in BUILTIN_VENDORS for h in (v.key_header or "", *v.secret_headers) if h),
        "api-key",
        "cookie",
    }
)
# What a server says back about the account, and session cookies.
RESPONSE_SECRET_HEADERS = frozenset(
    {"set-cookie", "openai-organization", "openai-project", "anthropic-organization-id"}
)
# Environment variables whose values are replaced wherever they appear: each built-in
# vendor's key and secret variables (harness._vendors). Sorted within a vendor: where two
# hold the same value (Gemini's two often do), the mask names the first.
SECRET_ENV_VARS: tuple[str, ...] = tuple(
    name
    for v in BUILTIN_VENDORS
    for name in sorted((*v.key_variables, *v.secret_variables, *v.account_variables))
)
# Query parameters that carry a key (``?key=...``): their values are masked in any URL.
URL_SECRET_PARAMS = frozenset(
    {"api-key", "api_key", "access_token", *(p for v in BUILTIN_VENDORS for p in v.key_params)}
)
# A value shorter than this is a placeholder, not a secret: local OpenAI-compatible
# servers take any key, and people set their key to x, "dummy" or "ollama". Masking
# such a value would replace every occurrence of that text in a cassette (header names,
# JSON keys, model text: "x-stainless-lang" becomes "<..._API_KEY>-stainless-lang"),
# and a replay without the variable set could not put it back. Real credentials are far
# longer (OpenAI keys have over 50 characters, org and project ids about 28), so
# nothing secret is left unmasked. The secret *headers* are dropped whatever they hold.
MIN_SECRET_LENGTH = 8


# OpenAI organization and project ids (``org-`` / ``proj_`` and 24 letters and digits).
_ACCOUNT_IDS = re.compile(r"\b(org-|proj_)[A-Za-z0-9]{16,}\b")
_ACCOUNT_MASKS = {"org-": "<an org id>", "proj_": "<a project id>"}
# The user information of a URL (``scheme://user:password@host``), all of it: a token
# alone (``https://TOKEN@host``) is a credential as often as a user name is. The pattern
# starts with a literal, which re finds fast in a large text (a lookbehind first made it
# ten times slower); the query pattern runs only when a parameter's name is in the text.
_URL_USERINFO = re.compile(r"://([^\s/?#@<>\"'\\]+)@")


def _url_param(params: frozenset[str]) -> tuple[tuple[str, ...], re.Pattern[str]]:
    names = tuple(f"{name}=" for name in sorted(params))
    pattern = r"[?&](?:" + "|".join(re.escape(p) for p in names) + r")([^&#\s<>\"'\\]+)"
    return names, re.compile(pattern)


_URL_PARAMS, _URL_PARAM = _url_param(URL_SECRET_PARAMS)
_CREDENTIALS = "<credentials>"

Span = tuple[int, int, str]


def add_secret_names(
    *,
    variables: tuple[str, ...] = (),
    request_headers: tuple[str, ...] = (),
    params: tuple[str, ...] = (),
) -> None:
    """Mask these too, from now on in this process: the values of ``variables``, the
    request headers (dropped from cassettes) and the URL query parameters a plugin's model
    API carries its key in (``harness_register_wires``: docs/plugins.md). Names only
    ever add: a name masked once stays masked."""
    global SECRET_ENV_VARS, REQUEST_SECRET_HEADERS, URL_SECRET_PARAMS, _URL_PARAMS, _URL_PARAM
    SECRET_ENV_VARS = tuple(dict.fromkeys((*SECRET_ENV_VARS, *variables)))
    REQUEST_SECRET_HEADERS = REQUEST_SECRET_HEADERS | {h.lower() for h in request_headers}
    if not set(params) <= URL_SECRET_PARAMS:
        URL_SECRET_PARAMS = URL_SECRET_PARAMS | set(params)
        _URL_PARAMS, _URL_PARAM = _url_param(URL_SECRET_PARAMS)


def _disjoint(spans: list[Span]) -> list[Span]:
    """``spans`` in order, without those overlapping an earlier (or, from the same start,
    a longer) one."""
    kept: list[Span] = []
    for span in sorted(spans, key=lambda s: (s[0], s[0] - s[1])):
        if not kept or span[0] >= kept[-1][1]:
            kept.append(span)
    return kept


def _masked(text: str, spans: list[Span]) -> str:
    parts, at = [], 0
    for start, end, mask in spans:
        parts += [text[at:start], mask]
        at = end
    parts.append(text[at:])
    return "".join(parts)


def _resplit(pieces: list[str], joined: str, spans: list[Span]) -> list[str]:
    """``pieces`` of ``joined`` with ``spans`` masked, cut where the pieces were: a mask
    goes where its secret starts, and the rest of the secret leaves the pieces after it."""
    out, start = [], 0
    for piece in pieces:
        end = start + len(piece)
        parts, at = [], start
        for first, last, mask in spans:
            if last <= start or first >= end:
                continue
            if first >= start:
                parts += [joined[at:first], mask]
            at = max(at, min(last, end))
        parts.append(joined[at:end])
        out.append("".join(parts))
        start = end
    return out


def _strings(value: Any, channel: tuple = (), path: tuple = ()) -> Iterator[tuple]:
    """``(channel, path, text)`` of every string in a streamed event's JSON.

    The channel is the path with each object's own ``index`` / ``*_index`` fields in place
    of list positions: the pieces of one text (choice 0's content, tool call 1's arguments,
    a Responses output's deltas) share a channel across the events of a stream, whatever
    else the events interleave.
    """
    if isinstance(value, str):
        yield channel, path, value
    elif isinstance(value, dict):
        own = tuple(
            (k, v)
            for k, v in value.items()
            if (k == "index" or k.endswith("_index")) and type(v) is int
        )
        for key, item in value.items():
            yield from _strings(item, (*channel, own, key), (*path, key))
    elif isinstance(value, list):
        for position, item in enumerate(value):
            numbered = isinstance(item, dict) and any(
                k == "index" or k.endswith("_index") for k in item
            )
            yield from _strings(item, (*channel, "[]" if numbered else position), (*path, position))


def _put(value: Any, path: tuple, text: str) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = text


def _is_stream(text: str) -> bool:
    return text.startswith(("data:", "event:")) or "\ndata:" in text


class Scrubber:
    """Keeps known headers and masks secret values (read from the environment when built)."""

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        pairs = [(env.get(name, ""), f"<{name}>") for name in SECRET_ENV_VARS]
        # Longest first, so a value that contains another is replaced whole.
        self.values = sorted(
            ((value, mask) for value, mask in pairs if len(value) >= MIN_SECRET_LENGTH),
            key=lambda p: -len(p[0]),
        )

    def spans(self, text: str) -> list[Span]:
        """``(start, end, mask)`` of each secret in ``text``, in order, none overlapping."""
        found: list[Span] = []
        for value, mask in self.values:
            at = text.find(value)
            while at != -1:
                found.append((at, at + len(value), mask))
                at = text.find(value, at + len(value))
        if "org-" in text or "proj_" in text:
            # The API names the account in its messages ("Rate limit reached ... in
            # organization org-..."), whatever the environment holds.
            found += [
                (m.start(), m.end(), _ACCOUNT_MASKS[m[1]]) for m in _ACCOUNT_IDS.finditer(text)
            ]
        if "://" in text:
            found += [(m.start(1), m.end(1), _CREDENTIALS) for m in _URL_USERINFO.finditer(text)]
        if any(name in text for name in _URL_PARAMS):
            found += [(m.start(1), m.end(1), _CREDENTIALS) for m in _URL_PARAM.finditer(text)]
        return _disjoint(found) if len(found) > 1 else found

    def text(self, text: str) -> str:
        """``text`` with every secret value replaced by ``<VARIABLE_NAME>``, any OpenAI
        organization or project id by ``<an org id>`` / ``<a project id>``, and a URL's
        user and password, or a key in its query, by ``<credentials>``."""
        spans = self.spans(text)
        return _masked(text, spans) if spans else text

    def stream(self, text: str) -> str:
        """A Server-Sent Events body with its secrets masked, also those cut between events.

        The strings of the events' JSON are joined per channel (see ``_strings``: choice
        0's content, one tool call's arguments, ...) and masked on the joined text; each
        event keeps its piece, so the stream still adds up to the masked reply. An event
        that changed is written again as JSON; the others keep their bytes.
        """
        lines = text.split("\n")
        events: list[tuple[int, Any]] = []
        for number, line in enumerate(lines):
            payload = line[5:].strip() if line.startswith("data:") else ""
            if payload.startswith(("{", "[")):
                try:
                    events.append((number, json.loads(payload)))
                except ValueError:
                    continue
        channels: dict[tuple, list[tuple[int, tuple, str]]] = {}
        for index, (_, event) in enumerate(events):
            for channel, path, piece in _strings(event):
                channels.setdefault(channel, []).append((index, path, piece))
        changed: set[int] = set()
        for entries in channels.values():
            pieces = [piece for _, _, piece in entries]
            joined = "".join(pieces)
            spans = self.spans(joined) if len(entries) > 1 else []
            for (index, path, piece), new in zip(
                entries, _resplit(pieces, joined, spans) if spans else pieces, strict=True
            ):
                if new != piece:
                    _put(events[index][1], path, new)
                    changed.add(index)
        for index in changed:
            number, event = events[index]
            line = lines[number]
            compact = '": ' not in line and '", ' not in line
            dumped = json.dumps(
                event, ensure_ascii=False, separators=(",", ":") if compact else None
            )
            end = "\r" if line.endswith("\r") else ""
            lines[number] = f"data: {dumped}{end}"
        return self.text("\n".join(lines))

    def value(self, value: Any) -> Any:
        """A copy of a nested value (dicts, lists, str, bytes) with secret values replaced
        (a string holding a Server-Sent Events body as a stream, ``stream()``)."""
        if isinstance(value, str):
            return self.stream(value) if _is_stream(value) else self.text(value)
        if isinstance(value, bytes):
            try:
                return self.value(value.decode("utf-8")).encode("utf-8")
            except UnicodeDecodeError:
                for secret, mask in self.values:
                    value = value.replace(secret.encode(), mask.encode())
                return value
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def restore(self, value: Any) -> Any:
        """The reverse of ``value()`` for the environment's values: masks back to the
        current secret values (account ids and URL credentials have no way back).

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
    def headers(
        headers: Mapping[str, Any] | None,
        secret: frozenset[str],
        kept: frozenset[str] | None = None,
    ) -> dict[str, Any]:
        """The headers without the secret ones and, given ``kept``, only those it names
        (or ``HEADER_PREFIXES_KEPT`` begins); names compared case-insensitively."""
        out = {}
        for name, value in (headers or {}).items():
            lower = name.lower()
            if lower in secret:
                continue
            if kept is None or lower in kept or lower.startswith(HEADER_PREFIXES_KEPT):
                out[name] = value
        return out

    def interaction(self, interaction: dict[str, Any]) -> dict[str, Any]:
        """A serialized interaction (vcrpy's dict form) made safe to write: the known
        headers only, secrets masked everywhere else (the URI and the bodies too)."""
        request = dict(interaction.get("request") or {})
        response = dict(interaction.get("response") or {})
        request["headers"] = self.headers(
            request.get("headers"), REQUEST_SECRET_HEADERS, REQUEST_HEADERS_KEPT
        )
        response["headers"] = self.headers(
            response.get("headers"), RESPONSE_SECRET_HEADERS, RESPONSE_HEADERS_KEPT
        )
        return self.value({**interaction, "request": request, "response": response})


def scrub_text(text: str) -> str:
    """``text`` with the current environment's secret values, account ids and URL
    credentials masked (``Scrubber.text``): the one masking every message goes through.

    Secrets are matched as they appear in the text; the values these variables hold
    (API keys, org and project ids) have no characters that JSON or HTML escape.
    """
    return Scrubber().text(text)


class _MaskingRepr(reprlib.Repr):
    """reprlib's shortened repr, with every string masked before it is shortened."""

    def __init__(self, scrubber: Scrubber, limit: int) -> None:
        super().__init__()
        self.scrubber = scrubber
        self.maxstring = self.maxother = limit

    def repr_str(self, x: str, level: int) -> str:
        return super().repr_str(self.scrubber.text(x), level)

    def repr_instance(self, x: Any, level: int) -> str:
        try:
            text = self.scrubber.text(builtins.repr(x))
        except Exception:
            return f"<{type(x).__name__} instance>"
        if len(text) > self.maxother:
            head = max(0, (self.maxother - 3) // 2)
            tail = max(0, self.maxother - 3 - head)
            text = text[:head] + self.fillvalue + text[len(text) - tail :]
        return text


def masked_repr(value: Any, limit: int = 30) -> str:
    """``repr(value)`` for a message, each string at most about ``limit`` characters, as
    ``reprlib`` shortens it, but masked first: a shortened secret is a prefix nothing
    would match any more."""
    return _MaskingRepr(Scrubber(), limit).repr(value)


def scrub_model(model: M) -> M:
    """``model`` itself, or a copy with secret values masked if it holds any.

    For output that shortens long texts (the HTML report, pytest's failure text): masking
    before shortening, so no clipped prefix of a secret is left behind. Costs one JSON
    dump (account ids and URL credentials are masked whatever the environment holds).
    """
    text = dump_json(model)
    clean = Scrubber().text(text)
    return model if clean == text else type(model).model_validate_json(clean)


class ScrubbingFilter(logging.Filter):
    """A logging filter that masks secret values in a record's message and traceback.

    On the ``harness`` logger, and on the handlers of a pytest session (its live log,
    log file and captured logs: what ``--log-cli-level=DEBUG`` shows of the SDKs and
    vcrpy). Filters run only for records the logger is enabled for, so a disabled
    logger costs nothing per round; a record with nothing to mask is left as it is.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        scrubber = Scrubber()
        try:
            text = record.getMessage()
        except Exception:  # a record whose arguments do not fit its message
            return True
        clean = scrubber.text(text)
        if clean != text:
            record.msg, record.args = clean, None
        if record.exc_info:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = scrubber.text(text)
        return True
