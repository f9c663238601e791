"""How ``harness serve`` answers Anthropic's Messages API: the replies a request holds,
the message it gets (whole, or as the API's stream of events) and its error bodies.

A scripted step's ``reasoning`` is a ``thinking`` block whose signature stands for the
API's: the server checks that a client sends it back unchanged, as the real API refuses a
thinking block that was edited.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from typing import Any

from harness.llm._chunks import LLMChunk, pieces
from harness.wires._neutral import (
    MODEL_ID,
    HeldTurn,
    ServedReply,
    ServedRequest,
    SSEBody,
    WireError,
    WireReply,
)

__all__ = [
    "THREAD_ERRORS",
    "error_body",
    "held_turn",
    "message_events",
    "message_object",
    "reply_message",
    "resumed",
    "served_request",
    "stop_reason",
]

# The error type of each status (the API's table; other statuses by their class).
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
_SIGNATURE = "harness-thinking:"
# The error codes of message threads the SDK recovers from (it reads them from the error's
# `details.error_code`): a continue of a reply the server does not hold is replayed whole
# under a new thread, an unsupported request is sent again without a thread.
THREAD_ERRORS = ("thread_not_found", "thread_unsupported_request")
# Request fields message threads do not support (the SDK's ThreadUnsupportedFeatureName).
_UNTHREADED = ("thinking", "context_management", "fallbacks", "inference_hooks", "cache_control")
# What the thread keeps from the request that created it: a continue may not repeat it.
_CREATE_ONLY = ("system", "tools")


def error_body(error: WireError) -> dict[str, Any]:
    """``{"type": "error", "error": {"type", "message"}}`` (harness's own failures, such
    as an exhausted script, also say their ``code``)."""
    status = error.status
    kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    details: dict[str, Any] = {"type": kind, "message": error.message}
    if error.code is not None:
        details["code"] = error.code
    if error.code in THREAD_ERRORS:
        details["details"] = {"error_code": error.code}
    return {"type": "error", "error": details}


def stop_reason(finish_reason: str) -> str:
    """A finish_reason as the API's ``stop_reason`` (an unknown one as it is)."""
    return _STOP_REASONS.get(finish_reason, finish_reason)


# -- the request -------------------------------------------------------------------------------


def served_request(body: dict[str, Any]) -> ServedRequest:
    """The replies a request holds (its assistant messages) and its conversation; the
    API's 400 for a body it refuses."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise WireError(
            400,
            "messages: Field required"
            if messages is None
            else "messages: Input should be a valid list",
        )
    if "max_tokens" not in body:
        raise WireError(400, "max_tokens: Field required")
    assistant = [
        i for i, m in enumerate(messages) if type(m) is dict and m.get("role") == "assistant"
    ]
    if assistant:
        # As the API: the last reply's thinking must come back as it was signed (the
        # earlier turns' thinking is stripped, not checked). Checking one message keeps a
        # request's cost from growing with every earlier reply.
        last = assistant[-1]
        problem = _changed_thinking(last, messages[last].get("content"))
        if problem is not None:
            raise WireError(400, problem)
    return ServedRequest(len(assistant), messages)


def held_turn(body: dict[str, Any]) -> HeldTurn | None:
    """The ``thread`` a request asks for (``{type: create}``, ``{type: continue,
    previous_message_id}``), None without one; the API's 400 for one it refuses."""
    thread = body.get("thread")
    if thread is None:
        return None
    kind = thread.get("type") if isinstance(thread, dict) else None
    if kind not in ("create", "continue"):
        raise WireError(400, "thread.type: Input should be 'create' or 'continue'")
    previous = None
    if kind == "continue":
        previous = thread.get("previous_message_id")
        if not isinstance(previous, str) or not previous:
            raise WireError(400, "thread.previous_message_id: Field required")
        repeated = [name for name in _CREATE_ONLY if name in body]
        if repeated:
            raise WireError(
                400,
                f"{', '.join(repeated)}: the thread holds what its create request sent; a "
                "continue may not send it again",
            )
    unsupported = [name for name in _UNTHREADED if _given(body.get(name))]
    if unsupported:
        raise WireError(
            400,
            f"message threads do not support {', '.join(unsupported)}: send the whole "
            "conversation without `thread`",
            "thread_unsupported_request",
        )
    return HeldTurn(previous)


def _given(value: Any) -> bool:
    disabled = isinstance(value, dict) and value.get("type") == "disabled"
    return value is not None and not disabled


def resumed(body: dict[str, Any], earlier: dict[str, Any]) -> dict[str, Any]:
    """The whole request a ``continue`` stands for: the held request's fields (its system
    and tools), this request's own options, and the held messages then the new ones."""
    whole = {k: v for k, v in earlier.items() if k != "thread"}
    whole.update({k: v for k, v in body.items() if k not in ("thread", "messages")})
    new = body.get("messages")
    whole["messages"] = [*earlier.get("messages", []), *(new if isinstance(new, list) else [])]
    return whole


def reply_message(answer: tuple[Any, bool] | None, reply: WireReply | None) -> tuple[Any, Any]:
    """The id of an answer and its reply as the assistant message a client sends back."""
    if answer is None or reply is None:
        return None, None
    value, streamed = answer
    if streamed and isinstance(value, SSEBody):
        start = next((e for e in value.events if e.get("type") == "message_start"), {})
        value = start.get("message")
    message_id = value.get("id") if isinstance(value, dict) else None
    content: list[dict[str, Any]] = [dict(block) for block in reply.reasoning]
    if reply.content:
        content.append({"type": "text", "text": reply.content})
    for call_id, name, arguments in reply.tool_calls:
        block = {"type": "tool_use", "id": call_id, "name": name}
        content.append({**block, "input": _input(arguments or "")})
    return message_id, {"role": "assistant", "content": content}


def _signature(thinking: str) -> str:
    digest = hashlib.sha256(thinking.encode("utf-8")).hexdigest()[:32]
    return base64.b64encode(f"{_SIGNATURE}{digest}".encode()).decode()


def _changed_thinking(index: int, content: Any) -> str | None:
    """The API's refusal of a thinking block serve signed whose text was changed."""
    for j, block in enumerate(content if isinstance(content, list) else []):
        if not isinstance(block, dict) or block.get("type") != "thinking":
            continue
        signature = block.get("signature")
        try:
            ours = base64.b64decode(str(signature), validate=True).startswith(_SIGNATURE.encode())
        except ValueError:
            ours = False
        if ours and signature != _signature(str(block.get("thinking") or "")):
            return f"messages.{index}.content.{j}: Invalid `signature` in `thinking` block"
    return None


# -- the message -------------------------------------------------------------------------------


def _usage(reply: ServedReply, output: int | None = None) -> dict[str, int]:
    usage = reply.usage
    return {
        "input_tokens": usage.get("prompt_tokens", 0),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": usage.get("completion_tokens", 0) if output is None else output,
    }


def _call_id(reply: ServedReply, i: int, call_id: str | None) -> str:
    # The API gives every call an id; a script's id-less call gets serve's own.
    return call_id or f"toolu_harness_{reply.n}_{i}"


def _input(arguments: str) -> Any:
    """A call's ``input``: the arguments' object; text that is none (a malformed-arguments
    step) as the text itself, which clients fail to read as they would bad arguments."""
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return arguments
    return value if isinstance(value, dict) else arguments


def _thinking(reply: ServedReply) -> dict[str, Any] | None:
    text = reply.reasoning
    if not text:
        return None
    return {"type": "thinking", "thinking": text, "signature": _signature(text)}


def message_object(reply: ServedReply, body: dict[str, Any]) -> dict[str, Any]:
    """The whole ``message``: thinking, text, then the calls."""
    content: list[dict[str, Any]] = []
    thinking = _thinking(reply)
    if thinking is not None:
        content.append(thinking)
    if reply.content:
        content.append({"type": "text", "text": reply.content})
    for i, (call_id, name, arguments) in enumerate(reply.tool_calls):
        block = {"type": "tool_use", "id": _call_id(reply, i, call_id), "name": name}
        content.append({**block, "input": _input(arguments)})
    return {
        **_head(reply, body),
        "content": content,
        "stop_reason": stop_reason(reply.finish_reason),
        "stop_sequence": None,
        "usage": _usage(reply),
    }


def _head(reply: ServedReply, body: dict[str, Any]) -> dict[str, Any]:
    model = body.get("model") or MODEL_ID
    # A thread continues a reply by its id: each conversation's replies have their own
    # (the key names the conversation), the same on every run.
    message_id = f"msg_harness_{reply.tag}{reply.n}" + (f"_{reply.key[:12]}" if reply.key else "")
    return {"id": message_id, "type": "message", "role": "assistant", "model": model}


def _event(kind: str, **data: Any) -> str:
    payload = json.dumps({"type": kind, **data}, ensure_ascii=False)
    return f"event: {kind}\ndata: {payload}\n\n"


def _block_order(chunks: list[LLMChunk]) -> list[Any]:
    """The reply's blocks in the order their pieces first come: ``"text"`` and call
    indexes. The API streams one block at a time, so pieces of one block that a script's
    chunks interleave with another's are sent together, in their order."""
    order: list[Any] = []
    text = any(c.content for c in chunks)
    for chunk in chunks:
        if text and chunk.content is not None and "text" not in order:
            order.append("text")
        for delta in chunk.tool_calls:
            if delta.index not in order:
                order.append(delta.index)
    return order


def _block_events(reply: ServedReply, index: int, which: Any) -> Iterator[str]:
    chunks = reply.chunks
    if which == "text":
        yield _event("content_block_start", index=index, content_block={"type": "text", "text": ""})
        for chunk in chunks:
            if chunk.content:
                delta = {"type": "text_delta", "text": chunk.content}
                yield _event("content_block_delta", index=index, delta=delta)
    else:
        deltas = [d for c in chunks for d in c.tool_calls if d.index == which]
        call_id = next((d.id for d in deltas if d.id), None)
        name = "".join(dict.fromkeys(d.name for d in deltas if d.name))
        block = {"type": "tool_use", "id": _call_id(reply, which, call_id), "name": name}
        yield _event("content_block_start", index=index, content_block={**block, "input": {}})
        for d in deltas:
            if d.arguments:
                delta = {"type": "input_json_delta", "partial_json": d.arguments}
                yield _event("content_block_delta", index=index, delta=delta)
    yield _event("content_block_stop", index=index)


def message_events(reply: ServedReply, body: dict[str, Any]) -> Iterator[str]:
    """The stream: ``message_start``, a ``ping``, each block (thinking, text, calls) with
    its deltas, ``message_delta`` with the stop reason and output tokens, ``message_stop``."""
    started = {**_head(reply, body), "content": [], "stop_reason": None, "stop_sequence": None}
    yield _event("message_start", message={**started, "usage": _usage(reply, 0)})
    yield _event("ping")
    index = 0
    thinking = _thinking(reply)
    if thinking is not None:
        empty = {"type": "thinking", "thinking": "", "signature": ""}
        yield _event("content_block_start", index=0, content_block=empty)
        for piece in pieces(thinking["thinking"]):
            delta = {"type": "thinking_delta", "thinking": piece}
            yield _event("content_block_delta", index=0, delta=delta)
        signed = {"type": "signature_delta", "signature": thinking["signature"]}
        yield _event("content_block_delta", index=0, delta=signed)
        yield _event("content_block_stop", index=0)
        index = 1
    for offset, which in enumerate(_block_order(reply.chunks)):
        yield from _block_events(reply, index + offset, which)
    stopped = {"stop_reason": stop_reason(reply.finish_reason), "stop_sequence": None}
    usage = {"output_tokens": _usage(reply)["output_tokens"]}
    yield _event("message_delta", delta=stopped, usage=usage)
    yield _event("message_stop")


# What a served model says it takes: Claude Sonnet 4.5's.
LIMITS = {"max_input_tokens": 200_000, "max_tokens": 64_000}


def model_info(name: str) -> dict[str, Any]:
    """``GET /v1/models/{id}``'s answer: every field the SDK's ModelInfo requires, the
    release date unknown (the epoch, as the API says it then)."""
    return {
        "type": "model",
        "id": name,
        "display_name": name,
        "created_at": "1970-01-01T00:00:00Z",
        "lifecycle": "active",
        **LIMITS,
    }
