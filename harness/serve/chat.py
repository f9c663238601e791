"""``POST /v1/chat/completions``: the Chat Completions wire format, whole or streamed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from harness.llm.base import JUDGE_ROLE, request_role
from harness.llm.chunks import LLMChunk
from harness.serve.fit import check_fits
from harness.serve.state import Reply, ScriptState
from harness.serve.wire import (
    MODEL_ID,
    ApiError,
    check_reply,
    json_response,
    read_json,
    sse,
)

__all__ = ["chat_completions"]


async def chat_completions(request: Any) -> Any:
    """POST /v1/chat/completions."""
    state: ScriptState = request.app.state.script
    body = await read_json(request)
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise ApiError(400, "messages must be a list")
    if request_role(request.headers) == JUDGE_ROLE:
        reply = state.pick_judge()
    else:
        k = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
        reply = state.pick(k, messages, "chat")
    await check_reply(state, reply)
    check_fits(reply, body)
    await state.hold(reply.step.latency if reply.step else 0)
    model = body.get("model") or MODEL_ID
    ident = f"chatcmpl-harness-{reply.n}"
    if not body.get("stream"):
        return json_response(_completion(ident, model, reply))
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    return sse(_chat_chunks(ident, model, reply, include_usage))


def _completion(ident: str, model: str, reply: Reply) -> dict[str, Any]:
    """The whole ``chat.completion`` object."""
    calls = reply.tool_calls()
    content = reply.step.content if reply.step else None
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in calls
        ]
    return {
        "id": ident,
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": reply.finish_reason(),
                "logprobs": None,
            }
        ],
        "usage": reply.usage(),
    }


def _chat_chunks(ident: str, model: str, reply: Reply, include_usage: bool) -> Iterator[str]:
    """The ``chat.completion.chunk`` events of the reply (``Reply.chunks``), then ``[DONE]``.

    The first chunk carries the role and a content key (as the API streams it: "" opens
    a text reply, null a reply of tool calls only); usage goes out only when the request
    asked for it, alone (``choices: []``) when its chunk has nothing else.
    """
    base = {"id": ident, "object": "chat.completion.chunk", "created": 0, "model": model}
    for i, piece in enumerate(reply.chunks()):
        delta = _delta(piece)
        if i == 0:
            delta = {"role": "assistant", "content": piece.content, **delta}
        payload: dict[str, Any] = dict(base)
        if delta or piece.finish_reason is not None or piece.usage is None:
            choice = {"index": 0, "delta": delta, "finish_reason": piece.finish_reason}
            payload["choices"] = [{**choice, "logprobs": None}]
        elif not include_usage:
            continue  # a usage chunk nobody asked for
        else:
            payload["choices"] = []
        if piece.usage is not None and include_usage:
            payload["usage"] = piece.usage
        yield f"data: {json.dumps(payload, ensure_ascii=False)}\n\n"
    yield "data: [DONE]\n\n"


def _delta(piece: LLMChunk) -> dict[str, Any]:
    """A chunk's ``delta``: its text and its tool-call pieces as the wire spells them."""
    delta: dict[str, Any] = {}
    if piece.content is not None:
        delta["content"] = piece.content
    if piece.tool_calls:
        calls = []
        for d in piece.tool_calls:
            call: dict[str, Any] = {"index": d.index}
            if d.id is not None or d.name is not None:
                # An opening piece: the API sends the id (null from some servers) and type.
                call.update(id=d.id, type="function")
            function = {}
            if d.name is not None:
                function["name"] = d.name
            if d.arguments is not None:
                function["arguments"] = d.arguments
            if function:
                call["function"] = function
            calls.append(call)
        delta["tool_calls"] = calls
    return delta
