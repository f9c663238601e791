"""Message contents as the GenAI semantic conventions write them (``--otel-content``).

``gen_ai.input.messages`` and ``gen_ai.output.messages`` are JSON arrays of
``{"role", "parts": [...]}``: text parts ``{"type": "text", "content"}``, calls
``{"type": "tool_call", "id", "name", "arguments"}`` and results ``{"type":
"tool_call_response", "id", "response"}``; an output message adds its
``finish_reason``. ``harness freeze --trace`` reads them back.
"""

from __future__ import annotations

import json
from typing import Any

from harness._actions import ToolCallRecord
from harness._messages import AssistantMessage, Message, ToolCall, ToolMessage

__all__ = ["InputMessages", "input_messages", "output_messages", "tool_arguments"]


def _json(value: Any) -> str:
    # NaN stays NaN (as the conversation keeps it); anything else JSON cannot hold, as text.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _call(call: ToolCall) -> dict[str, Any]:
    arguments: Any = call.raw_arguments if call.raw_arguments is not None else call.arguments
    return {"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments}


def _message(message: Message) -> dict[str, Any]:
    if isinstance(message, ToolMessage):
        part = {
            "type": "tool_call_response",
            "id": message.tool_call_id,
            "response": message.content,
        }
        return {"role": "tool", "parts": [part]}
    if isinstance(message, AssistantMessage):
        parts = [{"type": "text", "content": message.content}] if message.content else []
        parts += [_call(call) for call in message.tool_calls]
        return {"role": "assistant", "parts": parts}
    return {"role": message.role, "parts": [{"type": "text", "content": message.content}]}


def input_messages(messages: list[Message]) -> str:
    """``gen_ai.input.messages``: the conversation a model call was sent."""
    return _json([_message(message) for message in messages])


class InputMessages:
    """``gen_ai.input.messages`` of a run's calls, each a prefix of its conversation: every
    message is written once, not once per call that was sent it (a run of N calls would
    otherwise write N * N / 2 messages)."""

    def __init__(self, conversation: list[Message]) -> None:
        self.conversation = conversation
        self.texts: list[str] = []

    def first(self, count: int) -> str:
        """``input_messages(conversation[:count])``."""
        while len(self.texts) < count:
            self.texts.append(_json(_message(self.conversation[len(self.texts)])))
        return "[" + ",".join(self.texts[:count]) + "]"


def output_messages(reply: AssistantMessage) -> str:
    """``gen_ai.output.messages``: the model's reply."""
    message = _message(reply)
    message["finish_reason"] = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
    return _json([message])


def tool_arguments(record: ToolCallRecord) -> str:
    """``gen_ai.tool.call.arguments``: the call's arguments as JSON."""
    return _json(record.arguments)
