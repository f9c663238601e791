"""harness's own wires (``WIRES``), found by a request's path or by name.

They reach harness's modules as every wire does, registered through
``harness_register_wires`` (by the built-in plugin ``harness.modelwires``): harness's
modules look a wire up with ``harness.modelwires``, among the wires every plugin
registered; ``wire_for`` and ``wire_named`` here know the built-ins only.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.vendors import GEMINI as GEMINI_VENDOR
from harness.wires.anthropic_messages import WIRE as ANTHROPIC_MESSAGES
from harness.wires.gemini import WIRE as GEMINI
from harness.wires.neutral import Wire, WireReply, answer_body
from harness.wires.openai_chat import WIRE as OPENAI_CHAT
from harness.wires.openai_responses import WIRE as OPENAI_RESPONSES

__all__ = [
    "ANTHROPIC_MESSAGES",
    "GEMINI",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "WIRES",
    "Wire",
    "read_answer",
    "vendor_of",
    "wire_for",
    "wire_named",
]

WIRES: tuple[Wire, ...] = (OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES, GEMINI)


def wire_for(path: str) -> Wire | None:
    """The wire of a request to ``path`` (any prefix before the API's own path), or None
    for a path that is no model API's (``GET /v1/models``, say)."""
    for wire in WIRES:
        if wire.serves(path):
            return wire
    return None


# The vendor of each wire, by its name.
_VENDORS = {
    "openai-chat": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "gemini": "gemini",
}


def vendor_of(path: str, headers: Mapping[str, str]) -> str:
    """``openai``, ``anthropic`` or ``gemini``: whose API a request to ``path`` is, the
    model APIs' by their wire, the others' (``GET /v1/models/{id}``, which the three
    share, ``/v1/messages/count_tokens``) by their path and the client's headers:
    Anthropic's SDK always sends ``anthropic-version``, google-genai ``x-goog-api-client``
    or Gemini's key header (``harness.vendors``), and ``/v1beta/`` is Gemini's alone.
    ``headers``: lower-case names (an ASGI scope's, a Starlette request's)."""
    wire = wire_for(path)
    if wire is not None:
        return _VENDORS[wire.name]
    if path.startswith("/v1beta/"):
        return "gemini"
    if "anthropic-version" in headers or path.startswith("/v1/messages/"):
        return "anthropic"
    if "x-goog-api-client" in headers or GEMINI_VENDOR.key_header in headers:
        return "gemini"
    return "openai"


def wire_named(api: str) -> Wire:
    """The wire whose short name (``chat``, ``responses``, ``messages``, ``gemini``) or name
    (``openai-chat``, ``anthropic``, ``gemini``) is ``api``."""
    for wire in WIRES:
        if api in (wire.api, wire.name):
            return wire
    raise KeyError(f"no model wire is called {api!r}")


def read_answer(wire: Wire, raw: bytes | str | None) -> WireReply | None:
    """The reply in a successful answer's raw body (JSON or a stream); None when the body
    holds none."""
    answer = answer_body(raw)
    return None if answer is None else wire.read_reply(*answer)
