"""Streamed OpenAI replies: SDK chunks and Responses API events as ``LLMChunk``s.

Used by the ``openai`` source (harness.providers.openai); the SDK's own objects come in,
harness's chunks and replies go out.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from harness.errors import LLMError
from harness.llm.chunks import ChunkAccumulator, LLMChunk, ToolCallDelta
from harness.messages import AssistantMessage

__all__ = ["accumulate_chat_stream", "final_response", "usage_dict"]


def usage_dict(usage: Any) -> dict[str, int] | None:
    """Token usage under Chat Completions' names (the Responses API's are mapped)."""
    if usage is None:
        return None
    pairs = (
        ("prompt_tokens", "input_tokens"),
        ("completion_tokens", "output_tokens"),
        ("total_tokens", "total_tokens"),
    )
    out: dict[str, int] = {}
    for name, alias in pairs:
        value = getattr(usage, name, None)
        if value is None:
            value = getattr(usage, alias, None)
        if isinstance(value, int):
            out[name] = value
    return out or None


async def accumulate_chat_stream(
    stream: Any, call: int, emit: Callable[[LLMChunk], None] | None
) -> tuple[AssistantMessage, Any]:
    """Build the reply from chunks (``ChunkAccumulator``: tool-call deltas by index, the
    first id kept, a name some providers resend in every chunk not doubled), handing each
    to ``emit`` as it arrives."""
    acc = ChunkAccumulator()
    async for sdk_chunk in stream:
        chunk = _chunk(sdk_chunk)
        if emit is not None:
            emit(chunk)
        acc.add(chunk)
    return acc.message(call), acc.usage


def _chunk(sdk_chunk: Any) -> LLMChunk:
    """An SDK ``ChatCompletionChunk`` as an LLMChunk (choice 0; a refusal is text too)."""
    content: str | None = None
    deltas: list[ToolCallDelta] = []
    finish: str | None = None
    for choice in sdk_chunk.choices or []:
        if choice.index != 0:
            continue
        delta = choice.delta
        if delta is not None:
            content = delta.content
            if not content and getattr(delta, "refusal", None):
                content = delta.refusal
            for tc in delta.tool_calls or []:
                function = tc.function
                name = function.name if function is not None else None
                arguments = function.arguments if function is not None else None
                deltas.append(ToolCallDelta(tc.index, tc.id, name, arguments))
        finish = choice.finish_reason or finish
    usage = usage_dict(sdk_chunk.usage) if getattr(sdk_chunk, "usage", None) is not None else None
    return LLMChunk(content=content, tool_calls=tuple(deltas), finish_reason=finish, usage=usage)


async def final_response(stream: Any, emit: Callable[[LLMChunk], None] | None) -> Any:
    """The completed response of a streamed Responses API call; text and function-call
    pieces go to ``emit`` as they arrive (calls numbered in output order)."""
    final = None
    items: list[Any] = []
    calls: dict[int, int] = {}  # output_index -> the call's index in the reply
    async for event in stream:
        kind = getattr(event, "type", "")
        if emit is not None:
            chunk = _event_chunk(event, kind, calls)
            if chunk is not None:
                emit(chunk)
        if kind in ("response.completed", "response.incomplete"):
            final = event.response
        elif kind == "response.failed":
            error = getattr(event.response, "error", None)
            message = getattr(error, "message", None) or "the response failed"
            raise LLMError(message, type="http_error")
        elif kind == "error":
            raise LLMError(getattr(event, "message", None) or "stream error", type="http_error")
        elif kind == "response.output_item.done":
            items.append(event.item)
    if final is None:
        if not items:
            raise LLMError("the response stream ended without a response", type="llm_error")
        # No final event: build the reply from the items that completed.
        final = SimpleNamespace(output=items, usage=None, status="completed")
    return final


def _event_chunk(event: Any, kind: str, calls: dict[int, int]) -> LLMChunk | None:
    """The piece of the reply a Responses API stream event carries, if any."""
    if kind in ("response.output_text.delta", "response.refusal.delta"):
        return LLMChunk(content=event.delta)
    item = getattr(event, "item", None)
    if kind == "response.output_item.added" and getattr(item, "type", None) == "function_call":
        index = calls.setdefault(event.output_index, len(calls))
        delta = ToolCallDelta(index, item.call_id, item.name, item.arguments)
        return LLMChunk(tool_calls=(delta,))
    if kind == "response.function_call_arguments.delta" and event.output_index in calls:
        delta = ToolCallDelta(calls[event.output_index], arguments=event.delta)
        return LLMChunk(tool_calls=(delta,))
    return None
