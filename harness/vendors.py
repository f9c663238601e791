"""The model vendors: who serves a model API, where, and which variables and headers hold
its key (docs/plugins.md#a-model-api-from-a-plugin).

The built-in vendors' facts are written here and nowhere else: ``harness.secrets`` masks
their variables and drops their headers, the recording proxy (``harness.external``) sends
a recorded request to their upstream with their key, a target's environment points their
SDKs' variables at harness's server, and the ``openai``, ``anthropic`` and ``gemini``
sources read their keys as their SDKs do. A plugin's vendor is a ``WireVendor`` too,
registered with its wire (``harness_register_wires``, read by ``harness.modelwires``).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["ANTHROPIC", "BUILTIN_VENDORS", "GEMINI", "OPENAI", "WireVendor", "vendor_of_host"]


@dataclass(frozen=True)
class WireVendor:
    """Who serves a model API: ``name`` (several wires may share one), ``base_url`` (the
    API's root, where the recording proxy sends a request's path, less ``served_prefix``),
    the SDK's base-URL variable (set to harness's server in a target's environment, read by
    the proxy before ``base_url``), the variables that hold the key (the first one set is
    sent; all masked in cassettes and replaced by a dummy for a target), the header the key
    goes in (``key_format`` makes its value: ``"Bearer {}"``), query parameters that carry
    a key, other request headers that are secret, and other variables whose values are
    secret (an account's ids, another credential: masked, never sent)."""

    name: str
    base_url: str
    base_url_variable: str | None = None
    key_variables: tuple[str, ...] = ()
    key_header: str | None = None
    key_format: str = "{}"
    key_params: tuple[str, ...] = ()
    secret_headers: tuple[str, ...] = ()
    served_prefix: str = ""
    secret_variables: tuple[str, ...] = ()


OPENAI = WireVendor(
    "openai",
    "https://api.openai.com/v1",
    "OPENAI_BASE_URL",
    ("OPENAI_API_KEY",),
    "authorization",
    "Bearer {}",
    secret_headers=("openai-organization", "openai-project"),
    served_prefix="/v1",
    secret_variables=("OPENAI_ORG_ID", "OPENAI_PROJECT_ID"),
)
# ANTHROPIC_AUTH_TOKEN is the SDK's other credential (sent as a bearer token).
ANTHROPIC = WireVendor(
    "anthropic",
    "https://api.anthropic.com",
    "ANTHROPIC_BASE_URL",
    ("ANTHROPIC_API_KEY",),
    "x-api-key",
    secret_variables=("ANTHROPIC_AUTH_TOKEN",),
)
# Gemini's paths hold their API version (/v1beta/models/...): the root goes before them.
# google-genai reads either key variable, GOOGLE_API_KEY first when both are set; the
# Gemini API also takes a key as ``?key=``.
GEMINI = WireVendor(
    "gemini",
    "https://generativelanguage.googleapis.com",
    "GOOGLE_GEMINI_BASE_URL",
    ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "x-goog-api-key",
    key_params=("key",),
)
BUILTIN_VENDORS: tuple[WireVendor, ...] = (OPENAI, ANTHROPIC, GEMINI)


def vendor_of_host(host: str | None) -> WireVendor | None:
    """The built-in vendor whose public API is at ``host``, if any."""
    return next((v for v in BUILTIN_VENDORS if urlsplit(v.base_url).hostname == host), None)
