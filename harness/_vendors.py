"""The model vendors: who serves a model API, where, and which variables and headers hold
its key (docs/plugins.md#a-model-api-from-a-plugin).

The built-in vendors' facts are written here and nowhere else. They reach harness's
modules as a plugin's vendor does: registered with their wires through
``harness_register_wires`` (by the built-in plugin ``harness._modelwires``), where the
recording proxy, a target's environment, ``harness serve`` and the cassettes' key checks
read them. ``harness._secrets`` also reads ``BUILTIN_VENDORS`` itself, to mask their keys
from the start of a process, before any wire is loaded; the ``openai``, ``anthropic``
and ``gemini`` sources read their own rows, as their SDKs read their variables.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["ANTHROPIC", "BUILTIN_VENDORS", "GEMINI", "OPENAI", "WireVendor"]


@dataclass(frozen=True)
class WireVendor:
    """Who serves a model API: ``name`` (several wires may share one), ``base_url`` (the
    API's root, where the recording proxy sends a request's path, less ``served_prefix``),
    the SDK's base-URL variable (set to harness's server in a target's environment, read by
    the proxy before ``base_url``), the variables that hold the key, in the order the SDK
    reads them (the first one set is sent; all masked in cassettes; a target gets a dummy
    in the first, the others removed), the header the key goes in (``key_format`` makes
    its value: ``"Bearer {}"``), query parameters that carry a key, other request headers
    that are secret, and other variables whose values are secret (another credential:
    masked, never sent).

    The rest says how the vendor's API and SDK behave, each with a default that suits
    most: ``account_variables`` (an account's ids, masked, named when the API refuses a
    key), ``refused_reasons`` (an error's ``details[].reason`` saying the key was refused
    whatever the status; 401 and 403 always are), ``key_label`` (how messages name the
    key, by default its first variable), ``env_prefixes`` (the prefixes of the SDK's other
    variables, removed from a target's environment), ``own_paths`` (path prefixes no other
    vendor's API uses) and ``client_headers`` (request headers only its SDK sends): the
    last two tell whose a request is that no wire reads (``GET /v1/models/{id}``)."""

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
    account_variables: tuple[str, ...] = ()
    refused_reasons: tuple[str, ...] = ()
    key_label: str = ""
    env_prefixes: tuple[str, ...] = ()
    own_paths: tuple[str, ...] = ()
    client_headers: tuple[str, ...] = ()

    @property
    def host(self) -> str | None:
        """The host of the vendor's public API."""
        return urlsplit(self.base_url).hostname

    @property
    def key_named(self) -> str:
        """How messages name the key: ``key_label``, else its first variable."""
        return self.key_label or (self.key_variables[0] if self.key_variables else "its key")

    def key(self) -> str | None:
        """The key in the environment now (the first of its variables set), if any."""
        return next((os.environ[n] for n in self.key_variables if os.environ.get(n)), None)


OPENAI = WireVendor(
    "openai",
    "https://api.openai.com/v1",
    "OPENAI_BASE_URL",
    ("OPENAI_API_KEY",),
    "authorization",
    "Bearer {}",
    secret_headers=("openai-organization", "openai-project"),
    served_prefix="/v1",
    # OpenAI's key belongs to an organization and a project, which can refuse it too.
    account_variables=("OPENAI_ORG_ID", "OPENAI_PROJECT_ID"),
    env_prefixes=("OPENAI_", "AZURE_OPENAI_"),
)
# ANTHROPIC_AUTH_TOKEN is the SDK's other credential (sent as a bearer token). Anthropic's
# SDK always sends anthropic-version, and /v1/messages/... (count_tokens) is its alone.
ANTHROPIC = WireVendor(
    "anthropic",
    "https://api.anthropic.com",
    "ANTHROPIC_BASE_URL",
    ("ANTHROPIC_API_KEY",),
    "x-api-key",
    secret_variables=("ANTHROPIC_AUTH_TOKEN",),
    env_prefixes=("ANTHROPIC_",),
    own_paths=("/v1/messages/",),
    client_headers=("anthropic-version",),
)
# Gemini's paths hold their API version (/v1beta/models/...): the root goes before them.
# google-genai reads either key variable, GOOGLE_API_KEY first when both are set (the
# Gemini API's docs name the other first); the Gemini API also takes a key as ``?key=``
# and refuses a bad one with a 400 whose reason is API_KEY_INVALID. google-genai sends
# x-goog-api-client, and /v1beta/ is Gemini's alone.
GEMINI = WireVendor(
    "gemini",
    "https://generativelanguage.googleapis.com",
    "GOOGLE_GEMINI_BASE_URL",
    ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    "x-goog-api-key",
    key_params=("key",),
    refused_reasons=("API_KEY_INVALID",),
    key_label="GEMINI_API_KEY (or GOOGLE_API_KEY)",
    env_prefixes=("GEMINI_", "GOOGLE_GENAI_"),
    own_paths=("/v1beta/",),
    client_headers=("x-goog-api-client", "x-goog-api-key"),
)
BUILTIN_VENDORS: tuple[WireVendor, ...] = (OPENAI, ANTHROPIC, GEMINI)
