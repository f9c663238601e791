"""The wires harness knows, found by a request's path or by name."""

from __future__ import annotations

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
