"""The environment a target runs in (docs/external.md#the-targets-environment): the
served URL and a dummy key, none of the user's own model settings, and the frameworks'
telemetry switched off, so that no request of a target leaves 127.0.0.1.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from harness.vendors import BUILTIN_VENDORS

__all__ = ["DUMMY_API_KEY", "TELEMETRY", "WIRE_VARIABLES", "served_variables", "target_environment"]

# What the target's SDK sends as its key: harness needs none, and this is no secret.
DUMMY_API_KEY = "sk-harness-target"

# The user's own settings of the model APIs: a client that read them would talk to the
# real API with the real key. Removed for the target (prefixes, and whole names).
WIRE_PREFIXES = ("OPENAI_", "AZURE_OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_GENAI_")
# ... and the built-in vendors' variables no prefix above covers (Google's).
WIRE_VARIABLES = tuple(
    name
    for vendor in BUILTIN_VENDORS
    for name in (vendor.base_url_variable or "", *vendor.key_variables)
    if name and not name.startswith(WIRE_PREFIXES)
)

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
    Anthropic's SDK wants the root, and so does google-genai (it adds ``/v1beta`` or
    ``/v1`` itself)."""
    root = url.removesuffix("/v1")
    return {**_plugged_variables(root), **_builtin_variables(root)}


def _builtin_variables(root: str) -> dict[str, str]:
    """harness's own vendors' (harness.vendors): the base-URL variable and one dummy key.
    One: google-genai warns on every client when both of Gemini's are set; the first is
    the one every Python client reads (google-genai and pydantic-ai prefer it, llama-index
    and langchain-google read only it); the user's others are removed all the same
    (``target_environment``)."""
    served: dict[str, str] = {}
    for vendor in BUILTIN_VENDORS:
        served[vendor.base_url_variable or ""] = root + vendor.served_prefix
        served[vendor.key_variables[0]] = DUMMY_API_KEY
    return served


def _plugged_variables(root: str) -> dict[str, str]:
    """The base-URL variable (the server's root, and its ``served_prefix``) and a dummy
    for each key variable of every vendor a plugin registered with its wire."""
    from harness.modelwires import plugin_vendors

    served: dict[str, str] = {}
    for vendor in plugin_vendors():
        if vendor.base_url_variable:
            served[vendor.base_url_variable] = root + vendor.served_prefix
        served.update(dict.fromkeys(vendor.key_variables, DUMMY_API_KEY))
    return served


def _is_wire_variable(name: str, plugged: frozenset[str] = frozenset()) -> bool:
    return name.startswith(WIRE_PREFIXES) or name in WIRE_VARIABLES or name in plugged


def target_environment(
    served: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> dict[str, str | None]:
    """The changes to ``environ`` (default ``os.environ``) for a target: ``None`` removes a
    variable; ``served`` (the served URLs and dummy keys) is set last."""
    environ = os.environ if environ is None else environ
    from harness.modelwires import plugin_vendors

    plugged = frozenset(
        name
        for vendor in plugin_vendors()
        for name in (vendor.base_url_variable or "", *vendor.key_variables)
        if name
    )
    removed: dict[str, str | None] = {
        name: None for name in environ if _is_wire_variable(name, plugged)
    }
    return {**removed, **TELEMETRY, **served}
