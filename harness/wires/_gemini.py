"""Google's Gemini API (``POST .../models/{model}:generateContent`` and
``:streamGenerateContent?alt=sse``): its JSON and its stream.

Requests carry the conversation as ``contents`` (``user`` and ``model`` turns of
``parts``: ``text``, ``functionCall``, ``functionResponse``, ``thought`` parts), the
system text as ``systemInstruction`` and the tools as ``functionDeclarations``; the model
is named in the path, and so is streaming. A reply is ``candidates[0].content``; a stream
is ``data:`` events each holding a ``GenerateContentResponse`` with the next parts, the
last one with ``finishReason`` (no ``[DONE]``). The API's JSON parser takes camelCase and
snake_case keys alike, and so does this wire.

Calls may carry no id (older models never give one; clients answer them by name and
order). A call without an id gets one made from its place among the reply's calls and its
name (``call_0_get_weather``), the same whether it is read from the answer or from the
model turn sent back; a ``functionResponse`` answers the call of the model turn before it
with its id, else the next unanswered one of its name, and ``tool_results`` names its
result by both that call's own id and the made one, so the observer pairs it whatever the
client did with the id. How ``harness serve`` writes answers is
``harness.wires._gemini_serving``; the own loop's requests, ``harness.wires._gemini_client``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from harness._canonical import canonical_json
from harness._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
)
from harness.llm._chunks import LLMChunk, ToolCallDelta
from harness.wires import _gemini_serving as gemini_serving
from harness.wires._failures import read_result, reports_error
from harness.wires._gemini_client import GeminiClient
from harness.wires._gemini_serving import field, parts_of
from harness.wires._neutral import (
    Item,
    ServedReply,
    ServedRequest,
    SSEBody,
    StatelessRequests,
    ToolOffer,
    ToolResult,
    ToolSpec,
    WireError,
    WireReply,
    arguments_item,
    renamed,
)

__all__ = [
    "WIRE",
    "GeminiStream",
    "GeminiWire",
    "field",
    "made_id",
    "result_text",
]

_METHODS = (":generateContent", ":streamGenerateContent")
# The parts naming a call by id, in either spelling the API reads.
_CALL_KEYS = (("functionCall", "function_call"), ("functionResponse", "function_response"))
# Keys a function's result is commonly wrapped in (google-genai's automatic calling and
# ADK: result; pydantic-ai: return_value): a lone one of them is the result's text.
_WRAPPERS = ("result", "return_value", "output", "content", "error")


def made_id(index: int, name: Any) -> str:
    """The id of the ``index``-th call of a reply when the API gives it none."""
    return f"call_{index}_{name or ''}"


def result_text(response: Any) -> str:
    """A ``functionResponse``'s ``response`` as a tool result's text: the text of a lone
    ``result`` / ``return_value`` / ``output`` / ``content`` / ``error`` key, else JSON."""
    if isinstance(response, dict) and len(response) == 1:
        ((key, value),) = response.items()
        if key in _WRAPPERS and isinstance(value, str):
            return value
    if isinstance(response, str):
        return response
    return json.dumps(response, ensure_ascii=False, sort_keys=True)


def response_failed(response: Any) -> bool:
    """Whether a ``functionResponse``'s ``response`` reports a failure: the API's schema
    puts a result under ``output`` and a failure under ``error`` (google-genai's automatic
    calling and pydantic-ai send ``{"error": ...}`` for a tool that raised)."""
    return reports_error(response)


def _is_thought(part: dict[str, Any]) -> bool:
    return bool(part.get("thought"))


def _text(parts: list[dict[str, Any]]) -> str | None:
    texts = [p["text"] for p in parts if isinstance(p.get("text"), str) and not _is_thought(p)]
    return "".join(texts) if texts else None


def _arguments(args: Any) -> str:
    return json.dumps({} if args is None else args, ensure_ascii=False)


def _calls(parts: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """``(id, name, arguments text)`` of the parts' function calls (ids made when absent)."""
    calls: list[tuple[str, str, str]] = []
    for part in parts:
        call = field(part, "functionCall")
        if isinstance(call, dict):
            name = str(call.get("name") or "")
            call_id = call.get("id") or made_id(len(calls), name)
            calls.append((str(call_id), name, _arguments(call.get("args"))))
    return calls


def _reasoning(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The parts a model needs back as they came: its thoughts and signed parts."""
    return [p for p in parts if _is_thought(p) or field(p, "thoughtSignature")]


def _answered(
    responses: list[dict[str, Any]], calls: list[tuple[str, str, str]], own: list[Any]
) -> list[tuple[list[str], str, ToolResult]]:
    """``(ids, name, result)`` of each response: the ids of the call it answers (its own
    and the made one), by id when the response has one the turn's calls hold, else the
    next unanswered call of its name, else its own id or one made from its place."""
    taken: set[int] = set()
    out = []
    for position, response in enumerate(responses):
        name = str(response.get("name") or "")
        given = response.get("id")
        index = next((i for i, c in enumerate(own) if given and c == given), None)
        if index is None:
            index = next((i for i, c in enumerate(calls) if i not in taken and c[1] == name), None)
        answer = response.get("response")
        text = read_result(result_text(answer), response_failed(answer))
        if index is None:
            out.append(([str(given or made_id(position, name))], name, text))
            continue
        taken.add(index)
        ids = [calls[index][0], made_id(index, calls[index][1])]
        if given:
            ids.append(str(given))
        out.append((list(dict.fromkeys(ids)), calls[index][1], text))
    return out


def _function_responses(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = (field(p, "functionResponse") for p in parts)
    return [r for r in found if isinstance(r, dict)]


def _own_ids(parts: list[dict[str, Any]]) -> list[Any]:
    return [call.get("id") for p in parts if isinstance(call := field(p, "functionCall"), dict)]


def _turns(items: list[Any]) -> Iterator[tuple[int, Any, list[dict[str, Any]], Any]]:
    """``(index, role, parts, the calls of the model turn before)`` of each content."""
    last: tuple[list[tuple[str, str, str]], list[Any]] = ([], [])
    for index, content in enumerate(items):
        if not isinstance(content, dict):
            continue
        parts = parts_of(content)
        role = content.get("role") or "user"
        yield index, role, parts, last
        if role == "model":
            last = (_calls(parts), _own_ids(parts))


class GeminiWire(StatelessRequests):
    """The Gemini API wire (see ``harness.wires._neutral.Wire``)."""

    name = "gemini"
    api = "gemini"
    label = "Gemini API"
    # google-genai 2.x calls /v1beta, 3.x /v1: both are served.
    paths = tuple(
        f"/{version}/models/{{model}}{method}"
        for version in ("v1beta", "v1")
        for method in _METHODS
    )
    items_field = "contents"

    def serves(self, path: str) -> bool:
        """``.../models/MODEL:generateContent`` or ``:streamGenerateContent``."""
        return path.endswith(_METHODS) and "/models/" in path

    def model(self, body: dict[str, Any], path: str) -> str | None:
        """The model the path names (``.../models/MODEL:generateContent``)."""
        name = path.rpartition("/models/")[2].partition(":")[0]
        return name or None

    # -- requests ----------------------------------------------------------------------

    def messages(self, items: list[Any], names: dict[str, str] | None = None) -> list[Message]:
        """Contents as harness messages: a model turn as one assistant message, each
        function response as a tool message, user text as a user message."""
        messages: list[Message] = []
        for _, role, parts, (calls, own) in _turns(items):
            if role == "model":
                tool_calls = [ToolCall.from_text(i, n, a) for i, n, a in _calls(parts)]
                reply = AssistantMessage(
                    content=_text(parts), tool_calls=tool_calls, reasoning=_reasoning(parts)
                )
                messages.append(reply)
                continue
            for ids, name, result in _answered(_function_responses(parts), calls, own):
                messages.append(
                    ToolMessage(
                        tool_call_id=ids[0], name=name, content=result.text, is_error=result.failed
                    )
                )
            said = _text(parts)
            if said is not None:
                messages.append(UserMessage(content=said))
        return messages

    def instructions(self, body: dict[str, Any]) -> list[Message]:
        """``systemInstruction`` as a system message."""
        text = _system_text(body)
        return [] if text is None else [SystemMessage(content=text)]

    def tool_results(self, items: list[Any], start: int = 0) -> dict[str, ToolResult]:
        """call id -> each function response from ``start`` on (failed when it reports
        an ``error``), under the answered call's own id and its made one."""
        found: dict[str, ToolResult] = {}
        for index, role, parts, (calls, own) in _turns(items):
            if index < start or role == "model":
                continue
            for ids, _, text in _answered(_function_responses(parts), calls, own):
                for call_id in ids:
                    found[call_id] = text
        return found

    def with_call_ids(self, item: Any, rename: Callable[[str], str]) -> Any:
        """A ``functionCall``'s and a ``functionResponse``'s ``id`` (either spelling)."""
        parts = field(item, "parts")
        if not isinstance(parts, list):
            return item
        renamed_parts = []
        for part in parts:
            if isinstance(part, dict):
                part = dict(part)
                for camel, snake in _CALL_KEYS:
                    for key in (camel, snake):
                        if isinstance(part.get(key), dict):
                            part[key] = renamed(part[key], "id", rename)
            renamed_parts.append(part)
        return {**item, "parts": renamed_parts}

    def tools(self, tools: Any) -> list[ToolSpec]:
        """Each function declaration of ``tools``; other tools (search, code execution)
        kept as they are, unnamed."""
        specs: list[ToolSpec] = []
        for tool in _tool_list(tools):
            declarations = field(tool, "functionDeclarations")
            if not isinstance(declarations, list):
                specs.append(ToolSpec(None, raw=tool))
                continue
            for declaration in declarations:
                name = field(declaration, "name")
                if not isinstance(name, str) or not name:
                    specs.append(ToolSpec(None, raw=declaration))
                    continue
                parameters = _parameters(declaration)
                description = field(declaration, "description")
                specs.append(ToolSpec(name, description, parameters, False, declaration))
        return specs

    def tool_offer(self, body: dict[str, Any]) -> ToolOffer:
        """The declared functions, ``mode: NONE``, and the one function ``mode: ANY``
        with one allowed name forces (several allowed names narrow the offer)."""
        names = _declared_names(body.get("tools"))
        config = field(field(body, "toolConfig"), "functionCallingConfig")
        mode = str(field(config, "mode") or "AUTO").upper()
        allowed = field(config, "allowedFunctionNames")
        if mode in ("ANY", "VALIDATED") and isinstance(allowed, list) and allowed:
            names = [name for name in names if name in allowed]
            if mode == "ANY" and len(names) == 1:
                return ToolOffer(names, forced=names[0])
        return ToolOffer(names, none=mode == "NONE")

    def normalized(self, body: dict[str, Any]) -> tuple[Item, ...]:
        """The system text and the contents as normalized items (thoughts left out)."""
        items: list[Item] = []
        text = _system_text(body)
        if text is not None:
            items.append(("message", "system", text))
        for entry in body.get("contents") or []:
            if not isinstance(entry, dict):
                items.append(("other", canonical_json(entry)))
        for message in self.messages(self.items(body)):
            items.extend(_normalized(message))
        return tuple(items)

    # -- answers -----------------------------------------------------------------------

    def read_reply(self, payload: Any, streamed: bool) -> WireReply | None:
        """Candidate 0 of the answer, or what the stream's chunks add up to (a stream
        with no ``finishReason`` is cut off)."""
        try:
            if not streamed and isinstance(payload, list):
                # streamGenerateContent without alt=sse streams a JSON array of chunks
                # (simonw/llm-gemini's requests): read as the SSE stream's events are.
                events, not_json = payload, None
            elif not streamed:
                if not isinstance(payload, dict) or "error" in payload:
                    return None
                return _whole(payload)
            elif isinstance(payload, SSEBody):
                events, not_json = payload.events, payload.not_json
            else:
                return None
            reader = GeminiStream()
            for event in events:
                reader.add(event)
            reply = reader.reply()
        except (AttributeError, TypeError, KeyError, IndexError, ValueError):
            return None
        if reader.finish is None:
            reply.cut_off = "no finishReason"
        reply.not_json = not_json
        return reply

    def read_error(self, status: int, payload: Any) -> WireError:
        """Google's ``{"error": {code, message, status, details}}``."""
        return gemini_serving.read_error(status, payload)

    def stream_reader(self) -> GeminiStream:
        """A reader of ``GenerateContentResponse`` chunks."""
        return GeminiStream()

    def client(self) -> GeminiClient:
        """The Gemini API as the ``gemini`` source speaks it."""
        return GeminiClient(self)

    # -- serving -----------------------------------------------------------------------

    def served_request(self, body: dict[str, Any], known: int, path: str) -> ServedRequest:
        """The replies a request holds are its model turns (consecutive ones count once);
        a Gemini 3 model (named in ``path``) refuses a call sent back unsigned."""
        return gemini_serving.served_request(body, path)

    def streams(self, body: dict[str, Any], path: str) -> bool:
        """``:streamGenerateContent`` in the path."""
        return ":streamGenerateContent" in path

    def render_reply(
        self, reply: ServedReply, body: dict[str, Any], asked: ServedRequest
    ) -> dict[str, Any]:
        """The whole ``GenerateContentResponse``."""
        return gemini_serving.response(reply, gemini_serving.thoughts_asked(body), asked.reasoning)

    def render_stream(
        self, reply: ServedReply, body: dict[str, Any], asked: ServedRequest
    ) -> Iterator[str]:
        """The reply's pieces as ``GenerateContentResponse`` chunks."""
        return gemini_serving.response_chunks(
            reply, gemini_serving.thoughts_asked(body), asked.reasoning
        )

    def render_error(self, error: WireError) -> dict[str, Any]:
        """Google's ``{"error": {code, message, status}}``."""
        return gemini_serving.error_body(error)

    def render_model(self, name: str) -> dict[str, Any]:
        """``GET /v1beta/models/{id}``'s answer."""
        return gemini_serving.model_info(name)

    def render_models(self, name: str) -> dict[str, Any]:
        """``GET /v1beta/models``'s answer, listing the model ``name``."""
        return {"models": [self.render_model(name)]}


WIRE = GeminiWire()


def _system_text(body: dict[str, Any]) -> str | None:
    system = field(body, "systemInstruction")
    if isinstance(system, str):
        return system
    return _text(parts_of(system))


def _tool_list(tools: Any) -> list[Any]:
    """A request's ``tools``: a list of Tool objects, or one Tool object alone, which the
    API takes too (pydantic-ai's early GoogleModel sent ``tools: {function_declarations:
    [...]}``)."""
    if isinstance(tools, dict):
        return [tools]
    return tools if isinstance(tools, list) else []


def _declared_names(tools: Any) -> list[str]:
    """The names of the function declarations in ``tools``: all a fit check needs, read on
    every request without converting any declaration's schema (``tools`` does that)."""
    names: list[str] = []
    for tool in _tool_list(tools):
        declarations = field(tool, "functionDeclarations")
        if isinstance(declarations, list):
            found = (field(declaration, "name") for declaration in declarations)
            names.extend(name for name in found if isinstance(name, str) and name)
    return names


def _parameters(declaration: dict[str, Any]) -> dict[str, Any] | None:
    """A declaration's parameters as JSON Schema (a Gemini ``Schema``'s upper-case types
    lower-cased)."""
    schema = field(declaration, "parametersJsonSchema")
    if isinstance(schema, dict):
        return schema
    schema = field(declaration, "parameters")
    return _json_schema(schema) if isinstance(schema, dict) else None


def _json_schema(value: Any) -> Any:
    if isinstance(value, list):
        return [_json_schema(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "type" and isinstance(item, str):
            out[key] = item.lower()
        elif key in ("properties", "$defs", "definitions") and isinstance(item, dict):
            out[key] = {k: _json_schema(v) for k, v in item.items()}
        elif key in ("items", "anyOf", "oneOf", "allOf", "additionalProperties"):
            out[key] = _json_schema(item)
        elif key != "propertyOrdering":
            out[key] = item
    return out


def _normalized(message: Message) -> list[Item]:
    if isinstance(message, AssistantMessage):
        items: list[Item] = []
        if message.content:
            items.append(("message", "assistant", message.content))
        for call in message.tool_calls:
            items.append(("call", call.id, call.name, arguments_item(call.arguments_json())))
        return items
    if isinstance(message, ToolMessage):
        return [("result", message.tool_call_id, message.content)]
    return [("message", message.role, message.content)]


_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
}


def finish_reason(reason: Any, calls: bool) -> str | None:
    """A ``finishReason`` as Chat Completions says it (``STOP`` with calls: tool_calls)."""
    if reason is None:
        return None
    said = _FINISH.get(str(reason), str(reason).lower())
    return "tool_calls" if calls and said == "stop" else said


def usage_of(raw: Any) -> dict[str, int]:
    """``usageMetadata`` under Chat Completions' names (thoughts count as completion)."""
    if not isinstance(raw, dict):
        return {}
    counts = {
        name: value
        for name in (
            "promptTokenCount",
            "candidatesTokenCount",
            "thoughtsTokenCount",
            "totalTokenCount",
        )
        if isinstance(value := field(raw, name), int) and not isinstance(value, bool)
    }
    if not counts:
        return {}
    prompt = counts.get("promptTokenCount", 0)
    completion = counts.get("candidatesTokenCount", 0) + counts.get("thoughtsTokenCount", 0)
    total = counts.get("totalTokenCount", prompt + completion)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


def _candidate(body: dict[str, Any]) -> dict[str, Any]:
    candidates = field(body, "candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
        return candidates[0]
    return {}


def _whole(body: dict[str, Any]) -> WireReply:
    candidate = _candidate(body)
    parts = parts_of(field(candidate, "content"))
    calls: list[tuple[str | None, str, str | None]] = list(_calls(parts))
    finish = finish_reason(field(candidate, "finishReason"), bool(calls))
    reply = WireReply(_text(parts), calls, finish, usage_of(field(body, "usageMetadata")))
    reply.reasoning = _reasoning(parts)
    return reply


class GeminiStream:
    """A streamed answer read chunk by chunk: text pieces as they come, each function
    call whole (the API never splits one), numbered across the stream."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: list[tuple[str, str, str]] = []
        self._reasoning: list[dict[str, Any]] = []
        self._usage: dict[str, int] = {}
        self.finish: Any = None
        self._seen = False
        self.problem: str | None = None

    def add(self, event: dict[str, Any]) -> LLMChunk | None:
        """Take one chunk; the piece of the reply it carries."""
        error = event.get("error")
        if isinstance(error, dict):
            self.problem = str(error.get("message") or error.get("status") or "stream error")
            return None
        self._seen = True
        candidate = _candidate(event)
        parts = parts_of(field(candidate, "content"))
        text = _text(parts)
        if text is not None:
            self._text.append(text)
        deltas = []
        for part in parts:
            call = field(part, "functionCall")
            if isinstance(call, dict):
                index = len(self._calls)
                name = str(call.get("name") or "")
                made = (
                    str(call.get("id") or made_id(index, name)),
                    name,
                    _arguments(call.get("args")),
                )
                self._calls.append(made)
                deltas.append(ToolCallDelta(index, *made))
        self._reasoning.extend(_reasoning(parts))
        usage = usage_of(field(event, "usageMetadata")) or None
        if usage:
            self._usage = usage
        reason = field(candidate, "finishReason")
        finish = None
        if reason is not None:
            self.finish = reason
            finish = finish_reason(reason, bool(self._calls))
        return LLMChunk(content=text, tool_calls=tuple(deltas), finish_reason=finish, usage=usage)

    def reply(self) -> WireReply:
        """What the chunks so far add up to."""
        calls: list[tuple[str | None, str, str | None]] = list(self._calls)
        finish = finish_reason(self.finish, bool(calls))
        reply = WireReply("".join(self._text) or None, calls, finish, dict(self._usage))
        reply.reasoning = list(self._reasoning)
        return reply

    @property
    def empty(self) -> bool:
        """No chunk so far."""
        return not self._seen

    def closing(self) -> None:
        """None: the last chunk carries the finishReason and usage."""
        return None
