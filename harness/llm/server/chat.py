"""``POST /v1/chat/completions``: the Chat Completions wire format, whole or streamed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from harness.llm.base import JUDGE_ROLE, request_role
from harness.llm.server.state import Reply, ScriptState
from harness.llm.server.wire import (
    MODEL_ID,
    ApiError,
    check_reply,
    json_response,
    pieces,
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
    """The ``chat.completion.chunk`` events of the reply, ending with ``[DONE]``."""
    calls = reply.tool_calls()
    content = reply.step.content if reply.step else None
    base = {"id": ident, "object": "chat.completion.chunk", "created": 0, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return f"data: {json.dumps({**base, 'choices': [choice]}, ensure_ascii=False)}\n\n"

    # As the API streams it: "" opens a text reply, null a reply of tool calls only.
    yield chunk({"role": "assistant", "content": "" if content or not calls else None})
    for piece in pieces(content or ""):
        yield chunk({"content": piece})
    for i, call in enumerate(calls):
        opening = {"index": i, "id": call["id"], "type": "function"}
        opening["function"] = {"name": call["name"], "arguments": ""}
        yield chunk({"tool_calls": [opening]})
        for piece in pieces(call["arguments"], 8):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    yield chunk({}, reply.finish_reason())
    if include_usage:
        usage = {**base, "choices": [], "usage": reply.usage()}
        yield f"data: {json.dumps(usage)}\n\n"
    yield "data: [DONE]\n\n"
