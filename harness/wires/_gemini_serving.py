"""How ``harness serve`` answers the Gemini API: the replies a request holds, the
``GenerateContentResponse`` it gets, whole or as ``data:`` chunks, and Google's error body.

A call's arguments are a JSON object on this API: a step whose ``raw_arguments`` are not
one is answered as the API answers a model's malformed call, a candidate with
``finishReason: MALFORMED_FUNCTION_CALL``, no parts, and the text in ``finishMessage``.

A step's ``reasoning`` is what a thinking model gives: a ``thought`` part with the text
when the request asks for thoughts (``thinkingConfig.includeThoughts``, as the API
returns thought summaries only then), and a ``thoughtSignature`` on the reply's first
function call either way, which clients must send back with the call.

Gemini 3 and later (the model the URL names) sign every reply's first function call, and
refuse a request whose current turn (since its last user message) holds a call sent back
without its signature; earlier models do not check (docs/wires.md#gemini).
"""

from __future__ import annotations

import base64
import hashlib
import json
import operator
import re
from collections.abc import Iterator
from typing import Any

from harness.llm._chunks import ChunkAccumulator
from harness.wires._neutral import MODEL_ID, ServedReply, ServedRequest, WireError

__all__ = [
    "STATUSES",
    "error_body",
    "field",
    "parts_of",
    "read_error",
    "response",
    "response_chunks",
    "served_request",
    "signs_every_call",
]

# google.rpc.Code names of the HTTP statuses, as the API's error bodies give them.
STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
# harness's own error codes (script_exhausted, timeout, cassette_miss, ...) travel as the
# reason of an ErrorInfo detail in this domain.
_DOMAIN = "harness"
_SIGNATURE = "harness-thought:"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
# The model a request's URL names: gemini-<major>... (gemini-3-pro-preview, gemini-3.1-...).
_MODEL_MAJOR = re.compile(r"/models/gemini-(\d+)")


# camelCase field name -> its snake_case spelling, made once per name (field() is called
# for every part of every request: spelling the name anew each time was a hot spot).
_SNAKE: dict[str, str] = {}


def field(value: Any, camel: str) -> Any:
    """``value[camel]``, or its snake_case spelling (the API reads both), else None."""
    if not isinstance(value, dict):
        return None
    if camel in value:
        return value[camel]
    snake = _SNAKE.get(camel)
    if snake is None:
        snake = _SNAKE[camel] = "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
    return value.get(snake)


_FINISH = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS", "content_filter": "SAFETY"}


def signs_every_call(path: str) -> bool:
    """Whether the model the request's ``path`` names is Gemini 3 or later, which signs
    every reply's first function call and refuses the call sent back without it."""
    found = _MODEL_MAJOR.search(path)
    return found is not None and int(found.group(1)) >= 3


def served_request(body: dict[str, Any], path: str = "") -> ServedRequest:
    """The model turns in ``contents`` (a run of them counts once), the conversation, and
    whether the model signs every call (``signs_every_call``); WireError 400 for
    contents the API would refuse."""
    contents = body.get("contents")
    if not isinstance(contents, list):
        raise WireError(400, "* GenerateContentRequest.contents: contents is not specified")
    models = [isinstance(content, dict) and content.get("role") == "model" for content in contents]
    # A model turn after one that is not (True > False): the count, in C, as a long
    # history's requests should cost no more per content than Chat Completions' count.
    replies = sum(map(operator.gt, models, [False, *models]))
    strict = signs_every_call(path)
    if strict:
        unsigned = _unsigned_call(contents)
        if unsigned is not None:
            raise WireError(400, unsigned)
    return ServedRequest(replies, contents, strict)


def _unsigned_call(contents: list[Any]) -> str | None:
    """Gemini 3's refusal of a model step of the current turn (the contents after the
    last user message that is not function responses) whose first function call part
    came back without its ``thoughtSignature``. Earlier turns are not checked."""
    start = 0
    for i, content in enumerate(contents):
        parts = parts_of(content)
        said = any(not field(part, "functionResponse") for part in parts)
        if field(content, "role") != "model" and said:
            start = i + 1
    for i in range(start, len(contents)):
        content = contents[i]
        if field(content, "role") != "model":
            continue
        call = next((p for p in parts_of(content) if field(p, "functionCall")), None)
        if call is not None and not field(call, "thoughtSignature"):
            name = field(field(call, "functionCall"), "name")
            return (
                f"Function call `{name}` in contents[{i}] is missing a `thought_signature`: "
                "Gemini 3 models refuse a call of the current turn sent back without the "
                "signature they gave it. Send the model's parts back as they came "
                "(https://ai.google.dev/gemini-api/docs/thought-signatures)."
            )
    return None


def parts_of(content: Any) -> list[dict[str, Any]]:
    """A content's parts (those that are objects; none when it has no list of them)."""
    parts = field(content, "parts")
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _args(arguments: str) -> dict[str, Any] | None:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _call_part(call_id: str | None, name: str, args: dict[str, Any]) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id is not None:
        call = {"id": call_id, **call}
    return {"functionCall": call}


def thoughts_asked(body: dict[str, Any]) -> bool:
    """Whether the request asks for the model's thoughts (``includeThoughts``)."""
    config = field(field(body, "generationConfig"), "thinkingConfig")
    return field(config, "includeThoughts") is True


def _signature(thought: str) -> str:
    digest = hashlib.sha256(thought.encode("utf-8")).hexdigest()[:32]
    return base64.b64encode(f"{_SIGNATURE}{digest}".encode()).decode()


def _thought(reply: ServedReply, asked: bool) -> list[dict[str, Any]]:
    """The thought part of a reply with reasoning, when the request asks for it."""
    if not reply.reasoning or not asked:
        return []
    return [{"text": reply.reasoning, "thought": True}]


def _signed(reply: ServedReply, calls: list[dict[str, Any]], every: bool) -> list[dict[str, Any]]:
    """The calls' parts, the first carrying the signature of the reply's reasoning (of
    every reply with calls, ``every``: a Gemini 3 model's)."""
    if (reply.reasoning or every) and calls:
        calls[0] = {**calls[0], "thoughtSignature": _signature(reply.reasoning or "")}
    return calls


def _malformed(reply: ServedReply) -> str | None:
    """The first call's arguments text that is not a JSON object, if any."""
    return next((a for _, _, a in reply.tool_calls if _args(a) is None), None)


def _usage(usage: dict[str, int]) -> dict[str, int]:
    return {
        "promptTokenCount": usage.get("prompt_tokens", 0),
        "candidatesTokenCount": usage.get("completion_tokens", 0),
        "totalTokenCount": usage.get("total_tokens", 0),
    }


def _candidate(parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
    if finish is not None:
        candidate["finishReason"] = finish
    candidate["index"] = 0
    return candidate


def _envelope(reply: ServedReply, candidate: dict[str, Any], usage: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"candidates": [candidate]}
    if usage:
        out["usageMetadata"] = _usage(reply.usage)
    out["modelVersion"] = MODEL_ID
    out["responseId"] = f"harness-{reply.n}"
    return out


def _finish(reply: ServedReply) -> str:
    return _FINISH.get(reply.finish_reason, reply.finish_reason.upper())


def _malformed_answer(reply: ServedReply, text: str) -> dict[str, Any]:
    candidate = {
        "finishReason": "MALFORMED_FUNCTION_CALL",
        "finishMessage": f"Malformed function call: {text}",
        "index": 0,
    }
    return _envelope(reply, candidate, True)


def response(reply: ServedReply, thoughts: bool = False, signed: bool = False) -> dict[str, Any]:
    """The whole ``GenerateContentResponse``: the thought (when asked), text, then the
    function calls (the first signed when the reply has reasoning, or ``signed``)."""
    malformed = _malformed(reply)
    if malformed is not None:
        return _malformed_answer(reply, malformed)
    parts = _thought(reply, thoughts)
    if reply.content:
        parts.append({"text": reply.content})
    calls = [_call_part(i, name, _args(arguments) or {}) for i, name, arguments in reply.tool_calls]
    parts += _signed(reply, calls, signed)
    if not parts:
        parts.append({"text": ""})
    return _envelope(reply, _candidate(parts, _finish(reply)), True)


def _event(payload: dict[str, Any]) -> str:
    return f"data: {json.dumps(payload, ensure_ascii=False)}\r\n\r\n"


def response_chunks(
    reply: ServedReply, thoughts: bool = False, signed: bool = False
) -> Iterator[str]:
    """The reply as the API streams it: the thought first (when asked), a chunk per text
    piece, every function call whole in the last chunk, which carries the finishReason
    and the usage."""
    malformed = _malformed(reply)
    if malformed is not None:
        yield _event(_malformed_answer(reply, malformed))
        return
    acc = ChunkAccumulator()
    texts = []
    for piece in reply.chunks:
        acc.add(piece)
        if piece.content:
            texts.append(piece.content)
    calls = [
        _call_part(call_id, name, _args(arguments or "") or {})
        for call_id, name, arguments in acc.calls()
    ]
    calls = _signed(reply, calls, signed)
    for thought in _thought(reply, thoughts):
        yield _event(_envelope(reply, _candidate([thought], None), False))
    finish = _finish(reply)
    # The last text piece carries the finishReason when no call follows it.
    last = len(texts) - 1 if not calls else None
    for i, text in enumerate(texts):
        done = finish if i == last else None
        yield _event(_envelope(reply, _candidate([{"text": text}], done), i == last))
    if calls or not texts:
        yield _event(_envelope(reply, _candidate(calls or [{"text": ""}], finish), True))


def error_body(error: WireError) -> dict[str, Any]:
    """``{"error": {code, message, status}}``, harness's own code as an ErrorInfo reason."""
    status = STATUSES.get(error.status, "INTERNAL" if error.status >= 500 else "UNKNOWN")
    body: dict[str, Any] = {"code": error.status, "message": error.message, "status": status}
    if error.code is not None:
        body["details"] = [{"@type": _ERROR_INFO, "reason": error.code, "domain": _DOMAIN}]
    return {"error": body}


def read_error(status: int, payload: Any) -> WireError:
    """The message of a Google error body, and its code: harness's own (an ErrorInfo of
    its domain), else the status name (``RESOURCE_EXHAUSTED``)."""
    if isinstance(payload, list) and payload and isinstance(payload[0], dict):
        payload = payload[0]  # a streamed request's error may come as a one-item array
    details = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(details, dict):
        return WireError(status, f"HTTP {status}")
    message = details.get("message")
    text = message if isinstance(message, str) and message else f"HTTP {status}"
    code = details.get("status")
    for detail in details.get("details") or []:
        if isinstance(detail, dict) and detail.get("domain") == _DOMAIN and detail.get("reason"):
            code = detail["reason"]
    return WireError(status, text, None if code is None else str(code))


# What a served model says it takes: Gemini 2.5 Flash's.
LIMITS = {"inputTokenLimit": 1_048_576, "outputTokenLimit": 65_536}


def model_info(name: str) -> dict[str, Any]:
    """``GET /v1beta/models/{id}``'s answer (google-genai reads the limits)."""
    short = name.removeprefix("models/")
    return {
        "name": f"models/{short}",
        "version": "001",
        "displayName": short,
        "description": "served by harness from a scenario's script",
        **LIMITS,
        "supportedGenerationMethods": ["generateContent", "countTokens"],
        "temperature": 1.0,
        "maxTemperature": 2.0,
        "topP": 0.95,
        "topK": 64,
        "thinking": True,
    }
