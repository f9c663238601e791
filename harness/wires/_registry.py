"""harness's own wires (``WIRES``).

They reach harness's modules as every wire does, registered with their vendors through
``harness_register_wires`` (by the built-in plugin ``harness._modelwires``): harness's
modules look a wire or its vendor up with ``harness._modelwires``, among the wires every
plugin registered.
"""

from __future__ import annotations

from harness.wires._anthropic_messages import WIRE as ANTHROPIC_MESSAGES
from harness.wires._gemini import WIRE as GEMINI
from harness.wires._neutral import Wire, WireReply, answer_body
from harness.wires._openai_chat import WIRE as OPENAI_CHAT
from harness.wires._openai_responses import WIRE as OPENAI_RESPONSES

__all__ = [
    "ANTHROPIC_MESSAGES",
    "GEMINI",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "WIRES",
    "Wire",
    "read_answer",
]

WIRES: tuple[Wire, ...] = (OPENAI_CHAT, OPENAI_RESPONSES, ANTHROPIC_MESSAGES, GEMINI)


def read_answer(wire: Wire, raw: bytes | str | None) -> WireReply | None:
    """The reply in a successful answer's raw body (JSON or a stream); None when the body
    holds none."""
    answer = answer_body(raw)
    return None if answer is None else wire.read_reply(*answer)
