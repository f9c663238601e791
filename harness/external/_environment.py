"""The environment a target runs in (docs/external.md#the-targets-environment): the
served URL and a dummy key, none of the user's own model settings, and the frameworks'
telemetry switched off, so that no request of a target leaves 127.0.0.1.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

__all__ = ["DUMMY_API_KEY", "TELEMETRY", "served_variables", "target_environment"]

# What the target's SDK sends as its key: harness needs none, and this is no secret.
DUMMY_API_KEY = "sk-harness-target"

# Set for every target: the frameworks' uploads of traces and telemetry, each to its
# vendor's public endpoint, whatever base URL the model client has.
TELEMETRY = {
    # The Agents SDK posts traces to OpenAI's own API (/v1/traces/ingest) with the key.
    "OPENAI_AGENTS_DISABLE_TRACING": "1",
    # LangChain / LangGraph to LangSmith.
    "LANGSMITH_TRACING": "false",
    "LANGCHAIN_TRACING_V2": "false",
    # pydantic-ai's instrumentation through logfire.
    "LOGFIRE_SEND_TO_LOGFIRE": "false",
    "CREWAI_DISABLE_TELEMETRY": "true",
    "AGNO_TELEMETRY": "false",
}


def served_variables(url: str) -> dict[str, str]:
    """Each SDK's base-URL variable pointing at the server and a dummy key for each
    (docs/external.md#the-targets-environment): ``url`` is its OpenAI base, ``.../v1``;
    each vendor's base-URL variable gets the server's root and its ``served_prefix``
    (Anthropic's SDK wants the root, and so does google-genai: it adds ``/v1beta`` or
    ``/v1`` itself), its first key variable the dummy. One: google-genai warns on every
    client when both of Gemini's are set; the first is the one every Python client reads
    (google-genai and pydantic-ai prefer it, llama-index and langchain-google read only
    it); the user's others are removed all the same (``target_environment``). Every
    vendor registered with a wire (harness_register_wires), the built-ins first: where two
    name one variable, the first's is kept."""
    from harness._modelwires import vendors

    root = url.removesuffix("/v1")
    served: dict[str, str] = {}
    for vendor in vendors():
        if vendor.base_url_variable:
            served.setdefault(vendor.base_url_variable, root + vendor.served_prefix)
        if vendor.key_variables:
            served.setdefault(vendor.key_variables[0], DUMMY_API_KEY)
    return served


def target_environment(
    served: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> dict[str, str | None]:
    """The changes to ``environ`` (default ``os.environ``) for a target: ``None`` removes a
    variable (the user's own settings of every registered vendor's API: its base-URL,
    key, secret and account variables and those its SDK's prefixes name, ``OPENAI_``...:
    a client that read them would talk to the real API with the real key); ``served``
    (the served URLs and dummy keys) is set last."""
    environ = os.environ if environ is None else environ
    from harness._modelwires import vendors

    known = vendors()
    prefixes = tuple(prefix for vendor in known for prefix in vendor.env_prefixes)
    named = {
        name
        for vendor in known
        for name in (
            vendor.base_url_variable or "",
            *vendor.key_variables,
            *vendor.secret_variables,
            *vendor.account_variables,
        )
        if name
    }
    removed: dict[str, str | None] = {
        name: None for name in environ if name.startswith(prefixes) or name in named
    }
    return {**removed, **TELEMETRY, **served}
