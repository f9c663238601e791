"""A model's reply read out of an OpenAI answer's body: Chat Completions or the Responses
API, whole JSON or Server-Sent Events.

``harness freeze`` reads recorded answers with it and the external-agent observer reads
live ones, so a reply frozen from a cassette and the same reply observed on the wire are
read one way. Streamed Chat Completions chunks add up through ``ChunkAccumulator``, as the
OpenAI source's do (tool-call pieces by index, a name some providers resend not doubled).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from harness.llm.chunks import ChunkAccumulator, LLMChunk, SSEBody, ToolCallDelta, read_sse
from harness.messages import text_of

__all__ = ["WireReply", "answer_body", "api_of", "read_reply", "reply_of", "usage_of"]

# The events a Responses API stream ends with, one of them always.
_RESPONSE_ENDS = ("response.completed", "response.incomplete", "response.failed")

_USAGE = (
    ("prompt_tokens", "input_tokens"),
    ("completion_tokens", "output_tokens"),
    ("total_tokens", "total_tokens"),
)


@dataclass
class WireReply:
    """The model's reply in an answer body.

    ``tool_calls`` are ``(id, name, arguments text)`` with the text exactly as the model
    gave it; ``finish_reason`` is the API's (the Responses API, which has none, gets
    ``tool_calls``, ``length`` for an incomplete answer, else ``stop``); ``usage`` is
    under Chat Completions' names.

    A streamed reply that did not arrive whole says why: ``cut_off`` is what its stream
    lacks that every finished stream has (``no finish_reason and no [DONE]``), and
    ``not_json`` is its first ``data:`` line that is not JSON. Its fields are then what
    the stream held so far. A Responses API answer that failed (``status: failed``, or a
    stream ending on ``response.failed``) says so in ``failed``.
    """

    content: str | None = None
    tool_calls: list[tuple[str | None, str, str | None]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    cut_off: str | None = None
    not_json: str | None = None
    # A Responses API answer whose status is `failed`: its error's message.
    failed: str | None = None


def api_of(path: str) -> str | None:
    """``chat`` or ``responses`` for the two model endpoints (any prefix), else None."""
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/responses"):
        return "responses"
    return None


def usage_of(raw: Any) -> dict[str, int]:
    """Token counts of a usage object under Chat Completions' names (the Responses API's
    ``input_tokens``/``output_tokens`` mapped; counts that are not integers left out)."""
    out: dict[str, int] = {}
    if not isinstance(raw, dict):
        return out
    for name, alias in _USAGE:
        value = raw.get(name, raw.get(alias))
        if isinstance(value, int) and not isinstance(value, bool):
            out[name] = value
    return out


def answer_body(raw: bytes | str | None) -> tuple[Any, bool] | None:
    """``(value, streamed)``: the JSON value of a body, or the ``SSEBody`` of a streamed
    one (``streamed`` True); None when the body is neither."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw or "")
    if text.lstrip().startswith(("data:", "event:")):
        return read_sse(text), True
    try:
        return json.loads(text), False
    except ValueError:
        return None


def read_reply(api: str, raw: bytes | str | None) -> WireReply | None:
    """The reply in a successful answer's body; None when the body holds none."""
    answer = answer_body(raw)
    return None if answer is None else reply_of(api, *answer)


def reply_of(api: str, payload: Any, streamed: bool) -> WireReply | None:
    """The reply in an answer's JSON value or ``SSEBody``; None when ``payload`` is not
    an answer of ``api``."""
    try:
        return _reply_of(api, payload, streamed)
    except (AttributeError, TypeError, KeyError, IndexError, ValueError):
        # A body of the wrong shape somewhere inside (a message that is a string, an
        # index that is not a number): no answer of this API, as for a wrong top level.
        return None


def _reply_of(api: str, payload: Any, streamed: bool) -> WireReply | None:
    if streamed:
        if not isinstance(payload, SSEBody):
            return None
        if api == "chat":
            reply = _chat_stream(payload.events)
            # Either one ends a stream: OpenAI sends both, some OpenAI-compatible providers
            # only [DONE] (no finish_reason on a reply of calls, as in simonw/llm's
            # recording through OpenRouter).
            ended = payload.done or reply.finish_reason is not None
            lacks = "no finish_reason and no [DONE]"
        else:
            ended = any(e.get("type") in _RESPONSE_ENDS for e in payload.events)
            reply = _responses_stream(payload.events)
            lacks = "no response.completed, response.incomplete or response.failed event"
        if not ended:
            reply.cut_off = lacks
        if payload.not_json is not None:
            line, error = payload.not_json
            reply.not_json = f"data: line {line} of the body is not JSON: {error}"
        return reply
    if not isinstance(payload, dict):
        return None
    return _chat_whole(payload) if api == "chat" else _responses_whole(payload)


def _arguments(value: Any) -> str | None:
    # Kept as the model's text: clients send it back unchanged, and replays compare it.
    return value if isinstance(value, str) or value is None else json.dumps(value)


def _chat_whole(body: dict[str, Any]) -> WireReply | None:
    choices = body.get("choices")
    if not isinstance(choices, list):
        return None
    choice = choices[0] if choices and isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    calls = [
        (call.get("id"), str(function.get("name") or ""), _arguments(function.get("arguments")))
        for call in message.get("tool_calls") or []
        if isinstance(call, dict)
        for function in [call.get("function") or {}]
    ]
    content = text_of(message.get("content")) or text_of(message.get("refusal")) or None
    return WireReply(content, calls, choice.get("finish_reason"), usage_of(body.get("usage")))


def _chat_chunk(event: dict[str, Any]) -> LLMChunk:
    """A ``chat.completion.chunk`` event as an LLMChunk (choice 0; a refusal is text too)."""
    content = finish = None
    deltas: list[ToolCallDelta] = []
    for choice in event.get("choices") or []:
        if not isinstance(choice, dict) or choice.get("index", 0) != 0:
            continue
        delta = choice.get("delta") or {}
        content = delta.get("content") or delta.get("refusal")
        for tc in delta.get("tool_calls") or []:
            function = tc.get("function") or {}
            index, call_id = tc.get("index", 0), tc.get("id")
            deltas.append(
                ToolCallDelta(index, call_id, function.get("name"), function.get("arguments"))
            )
        finish = choice.get("finish_reason") or finish
    usage = usage_of(event["usage"]) if event.get("usage") else None
    return LLMChunk(content=content, tool_calls=tuple(deltas), finish_reason=finish, usage=usage)


def _chat_stream(events: list[Any]) -> WireReply:
    acc = ChunkAccumulator()
    for event in events:
        if isinstance(event, dict):
            acc.add(_chat_chunk(event))
    return WireReply(acc.text or None, list(acc.calls()), acc.finish_reason, acc.usage or {})


def _responses_whole(body: dict[str, Any]) -> WireReply:
    texts: list[str] = []
    calls: list[tuple[str | None, str, str | None]] = []
    for item in body.get("output") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            texts.append(text_of(item.get("content") or []) or "")
        elif item.get("type") == "function_call":
            name = str(item.get("name") or "")
            calls.append((item.get("call_id"), name, _arguments(item.get("arguments"))))
    if calls:
        finish = "tool_calls"
    elif body.get("status") == "incomplete":
        finish = "length"
    else:
        finish = "stop"
    reply = WireReply("".join(texts) or None, calls, finish, usage_of(body.get("usage")))
    if body.get("status") == "failed":
        error = body.get("error") if isinstance(body.get("error"), dict) else {}
        reply.failed = str(error.get("message") or error.get("code") or "no message")
    return reply


def _responses_stream(events: list[Any]) -> WireReply:
    events = [e for e in events if isinstance(e, dict)]
    for event in reversed(events):
        if event.get("type") in _RESPONSE_ENDS:
            return _responses_whole(event.get("response") or {})
    # A stream cut before its last event: the items it finished.
    done = [e.get("item") for e in events if e.get("type") == "response.output_item.done"]
    return _responses_whole({"output": done})
