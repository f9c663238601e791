"""Reading what crosses the boundary: request bodies and replies of both OpenAI APIs.

Chat Completions and the Responses API are read into the same shapes: the tool results
a request carries, the conversation as harness messages, and the reply (read by
harness.wires.replies, as freeze reads recorded ones) as harness tool calls. Nothing here
touches the network.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    message_from_openai,
    text_of,
)
from harness.wires import replies

__all__ = [
    "ObservedReply",
    "error_of",
    "instructions_of",
    "items_of",
    "messages_of",
    "read_reply",
    "response_items",
    "tool_results",
]


def items_of(api: str, body: dict[str, Any]) -> list[Any]:
    """The conversation items of a request body (``messages`` or ``input``)."""
    if api == "chat":
        items = body.get("messages")
        return items if isinstance(items, list) else []
    items = body.get("input")
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    return items if isinstance(items, list) else []


def tool_results(api: str, items: list[Any], start: int = 0) -> dict[str, str]:
    """call id -> the tool result text that ``items[start:]`` carry."""
    found: dict[str, str] = {}
    for index in range(start, len(items)):
        item = items[index]
        if not isinstance(item, dict):
            continue
        if api == "chat":
            if item.get("role") == "tool" and item.get("tool_call_id") is not None:
                found[str(item["tool_call_id"])] = text_of(item.get("content")) or ""
        elif item.get("type") == "function_call_output" and item.get("call_id") is not None:
            output = item.get("output")
            found[str(item["call_id"])] = (
                output if isinstance(output, str) else text_of(output) or ""
            )
    return found


@dataclass
class ObservedReply:
    """The model's reply as the target received it."""

    content: str | None = None
    calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)

    def message(self) -> AssistantMessage:
        """The reply as a harness AssistantMessage."""
        return AssistantMessage(
            content=self.content, tool_calls=self.calls, finish_reason=self.finish_reason
        )


def _call(call_id: Any, name: Any, arguments: Any) -> ToolCall:
    text = arguments if isinstance(arguments, str) or arguments is None else json.dumps(arguments)
    return ToolCall.from_text(str(call_id or ""), str(name or ""), text)


def read_reply(api: str, answer: tuple[Any, bool] | None) -> ObservedReply:
    """The reply in a successful answer (``replies.answer_body`` of its body: JSON, or
    the events of a stream); an empty reply when it holds none."""
    reply = None if answer is None else replies.reply_of(api, *answer)
    if reply is None:
        return ObservedReply()
    calls = [_call(call_id, name, arguments) for call_id, name, arguments in reply.tool_calls]
    return ObservedReply(reply.content, calls, reply.finish_reason, reply.usage)


def error_of(status: int, raw: bytes) -> dict[str, Any]:
    """``{type, message, status}`` of an error answer (OpenAI's ``{"error": {...}}`` body)."""
    message = code = None
    try:
        body = json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        message = body["error"].get("message")
        code = body["error"].get("code")
    kind = {"timeout": "timeout", "script_exhausted": "script_exhausted"}.get(str(code))
    if kind is None:
        kind = "cassette_miss" if code == "cassette_miss" else "http_error"
    text = message if isinstance(message, str) and message else f"HTTP {status}"
    return {"type": kind, "message": text, "status": status}


def response_items(answer: tuple[Any, bool] | None) -> tuple[str | None, list[Any]]:
    """A Responses API answer's id and output items (``replies.answer_body`` of its body:
    whole JSON, or the events of a stream: its ``response.completed``, else the items done
    one by one)."""
    if answer is None:
        return None, []
    value, streamed = answer
    if not streamed:
        response = value if isinstance(value, dict) else {}
    else:
        response, done = {}, []
        for event in value.events:
            kind = event.get("type")
            if isinstance(event.get("response"), dict) and kind in (
                "response.created",
                "response.completed",
                "response.incomplete",
            ):
                response = {**response, **event["response"]}
            elif kind == "response.output_item.done" and isinstance(event.get("item"), dict):
                done.append(event["item"])
        if not response.get("output"):
            response = {**response, "output": done}
    output = response.get("output")
    response_id = response.get("id")
    return (
        response_id if isinstance(response_id, str) else None,
        [item for item in output if isinstance(item, dict)] if isinstance(output, list) else [],
    )


# -- conversations ------------------------------------------------------------------------


def _from_responses(items: list[Any], names: dict[str, str]) -> list[Message]:
    messages: list[Message] = []
    previous_output = False
    for item in items:
        if not isinstance(item, dict):
            previous_output = False
            continue
        kind, role = item.get("type"), item.get("role")
        if kind == "function_call":
            call = _call(item.get("call_id"), item.get("name"), item.get("arguments"))
            names[call.id] = call.name
            last = messages[-1] if messages else None
            if previous_output and isinstance(last, AssistantMessage):
                messages[-1] = last.model_copy(update={"tool_calls": [*last.tool_calls, call]})
            else:
                messages.append(AssistantMessage(content=None, tool_calls=[call]))
            previous_output = True
        elif kind == "function_call_output":
            call_id = str(item.get("call_id") or "")
            output = item.get("output")
            content = output if isinstance(output, str) else text_of(output) or ""
            messages.append(
                ToolMessage(tool_call_id=call_id, name=names.get(call_id, ""), content=content)
            )
            previous_output = False
        elif kind == "reasoning":
            continue
        elif role == "assistant":
            messages.append(AssistantMessage(content=text_of(item.get("content"))))
            previous_output = True
        elif role in ("system", "developer"):
            messages.append(SystemMessage(content=text_of(item.get("content")) or ""))
            previous_output = False
        elif role == "user":
            messages.append(UserMessage(content=text_of(item.get("content")) or ""))
            previous_output = False
    return messages


def messages_of(api: str, items: list[Any], names: dict[str, str] | None = None) -> list[Message]:
    """Conversation items as harness messages (items harness cannot read are skipped).

    ``names`` (call id -> tool name, for Responses API outputs) is kept across calls
    when a conversation is read a part at a time.
    """
    if api == "responses":
        return _from_responses(items, {} if names is None else names)
    messages: list[Message] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        try:
            messages.append(message_from_openai(item))
        except (ValueError, TypeError, AttributeError):
            continue
    return messages


def instructions_of(api: str, body: dict[str, Any]) -> list[Message]:
    """The Responses API's ``instructions`` as a system message (none for chat)."""
    if api == "responses" and body.get("instructions"):
        return [SystemMessage(content=text_of(body["instructions"]) or "")]
    return []
