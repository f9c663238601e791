"""OpenAI's Responses API (``POST /v1/responses``): its JSON and its stream.

Requests carry the conversation as ``input`` items (messages, ``function_call``,
``function_call_output``, ``reasoning``) and may continue an earlier response
server-side (``previous_response_id``, or a ``conversation`` object); a reply is the
response's ``output`` items, streamed as typed events ending with ``response.completed``,
``response.incomplete`` or ``response.failed``. The API has no finish_reason: a reply of
calls is read as ``tool_calls``, an incomplete one as ``length``, else ``stop``.

How ``harness serve`` answers it is ``harness.wires._openai_responses_serving``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from harness._canonical import canonical_json
from harness._errors import HarnessError
from harness._messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    text_of,
)
from harness.llm._base import LLMRequest
from harness.llm._chunks import LLMChunk, ToolCallDelta
from harness.wires import _openai_responses_serving as openai_responses_serving
from harness.wires import _openai_shared as openai_shared
from harness.wires._failures import read_result
from harness.wires._neutral import (
    HeldTurn,
    Item,
    ServedReply,
    ServedRequest,
    SSEBody,
    ToolOffer,
    ToolResult,
    ToolSpec,
    WireError,
    WireReply,
    arguments_item,
    arguments_text,
    renamed,
    without_none,
)
from harness.wires._openai_chat import normalized_role

__all__ = ["WIRE", "ResponsesClient", "ResponsesStream", "ResponsesWire"]

# The events a Responses API stream ends with, one of them always.
_RESPONSE_ENDS = ("response.completed", "response.incomplete", "response.failed")


class ResponsesWire:
    """The Responses API wire (see ``harness.wires._neutral.Wire``)."""

    name = "openai-responses"
    api = "responses"
    label = "Responses API"
    paths: tuple[str, ...] = ("/v1/responses",)
    items_field = "input"

    def serves(self, path: str) -> bool:
        """``.../responses``."""
        return path.endswith("/responses")

    # -- requests ----------------------------------------------------------------------

    def items(self, body: dict[str, Any]) -> list[Any]:
        """``input`` (a string is one user message)."""
        items = body.get("input")
        if isinstance(items, str):
            return [{"role": "user", "content": items}]
        return items if isinstance(items, list) else []

    def previous(self, body: dict[str, Any]) -> str | None:
        """``previous_response_id``."""
        previous = body.get("previous_response_id")
        return str(previous) if previous else None

    def thread(self, body: dict[str, Any]) -> str | None:
        """The ``conversation`` object's id (or the id given as the value)."""
        conversation = body.get("conversation")
        if isinstance(conversation, dict):
            conversation = conversation.get("id")
        return str(conversation) if conversation else None

    def model(self, body: dict[str, Any], path: str) -> str | None:
        """The request's ``model`` field."""
        model = body.get("model")
        return model if isinstance(model, str) and model else None

    def held(self, body: dict[str, Any]) -> HeldTurn | None:
        """None: a chain names its response (``previous``), not a held thread."""
        return None

    def resumed(self, body: dict[str, Any], earlier: dict[str, Any]) -> dict[str, Any]:
        """``body``: no request continues a held thread."""
        return body

    def held_answer(self, answer: tuple[Any, bool] | None) -> tuple[str | None, list[Any]]:
        """Nothing: no thread is held."""
        return None, []

    def messages(self, items: list[Any], names: dict[str, str] | None = None) -> list[Message]:
        """Input items as harness messages: a reply's function calls in one assistant
        message; ``names`` (call id -> tool name) is kept across calls when a conversation
        is read a part at a time."""
        return _messages(items, {} if names is None else names)

    def instructions(self, body: dict[str, Any]) -> list[Message]:
        """``instructions`` as a system message."""
        if body.get("instructions"):
            return [SystemMessage(content=text_of(body["instructions"]) or "")]
        return []

    def tool_results(self, items: list[Any], start: int = 0) -> dict[str, ToolResult]:
        """call id -> the output of each ``function_call_output`` from ``start`` on; the
        item's own ``status`` is the API's one signal of a call that did not complete
        (``incomplete``: failed), and a text in a failure form says so too
        (``harness.wires._failures``)."""
        found: dict[str, ToolResult] = {}
        for index in range(start, len(items)):
            item = items[index]
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call_output" and item.get("call_id") is not None:
                output = item.get("output")
                text = output if isinstance(output, str) else text_of(output) or ""
                found[str(item["call_id"])] = read_result(text, item.get("status") == "incomplete")
        return found

    def with_call_ids(self, item: Any, rename: Callable[[str], str]) -> Any:
        """A ``function_call``'s or ``function_call_output``'s ``call_id``."""
        return renamed(item, "call_id", rename)

    def tools(self, tools: Any) -> list[ToolSpec]:
        """The ``tools`` of a request."""
        return openai_shared.tools(tools)

    def tool_offer(self, body: dict[str, Any]) -> ToolOffer:
        """``tools`` and ``tool_choice``."""
        return openai_shared.tool_offer(body)

    def normalized(self, body: dict[str, Any]) -> tuple[Item, ...]:
        """``instructions`` and the input items as normalized items (reasoning left out)."""
        items: list[Item] = []
        if body.get("instructions"):
            items.append(("message", "system", text_of(body["instructions"])))
        given = body.get("input")
        if isinstance(given, str):
            given = [{"role": "user", "content": given}]
        for entry in given or []:
            items.extend(_normalized(entry))
        return tuple(items)

    # -- writing requests (the own loop's ``openai`` source) ---------------------------

    def request_items(self, message: Message) -> list[dict[str, Any]]:
        """One harness message as input items."""
        if isinstance(message, SystemMessage | UserMessage):
            return [{"role": message.role, "content": message.content}]
        if isinstance(message, ToolMessage):
            output = {"call_id": message.tool_call_id, "output": message.content}
            return [{"type": "function_call_output", **output}]
        if isinstance(message, AssistantMessage):
            # Reasoning items go back verbatim, before the output they led to: reasoning
            # models need them for multi-round tool use.
            items: list[dict[str, Any]] = [dict(item) for item in message.reasoning]
            if message.content:
                items.append({"role": "assistant", "content": message.content})
            items.extend(
                {
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    "arguments": call.arguments_json(),
                }
                for call in message.tool_calls
            )
            return items
        raise HarnessError(f"cannot send a {type(message).__name__} to the Responses API")

    def request_tool(self, schema: dict[str, Any]) -> dict[str, Any]:
        """A Chat Completions tool schema as this API's function tool."""
        function = schema.get("function", {})
        tool: dict[str, Any] = {"type": "function", "name": function.get("name")}
        if function.get("description"):
            tool["description"] = function["description"]
        tool["parameters"] = function.get("parameters", {"type": "object", "properties": {}})
        # The Responses API makes function tools strict unless told otherwise; harness
        # asks for strict mode only when the tool does, as with Chat Completions.
        tool["strict"] = bool(function.get("strict", False))
        return tool

    def request_tool_choice(self, choice: Any) -> Any:
        """A Chat Completions ``tool_choice`` as this API's."""
        if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
            return {"type": "function", "name": choice["function"].get("name")}
        return choice

    # -- answers -----------------------------------------------------------------------

    def read_reply(self, payload: Any, streamed: bool) -> WireReply | None:
        """The response's output, or the one its stream ends with (the items finished so
        far when it was cut off)."""
        try:
            if not streamed:
                return _whole(payload) if isinstance(payload, dict) else None
            if not isinstance(payload, SSEBody):
                return None
            ended = any(e.get("type") in _RESPONSE_ENDS for e in payload.events)
            reply = _stream(payload.events)
        except (AttributeError, TypeError, KeyError, IndexError, ValueError):
            # A body of the wrong shape somewhere inside: no answer of this API.
            return None
        if not ended:
            reply.cut_off = "no response.completed, response.incomplete or response.failed event"
        reply.not_json = payload.not_json
        return reply

    def answer_items(self, answer: tuple[Any, bool] | None) -> tuple[str | None, list[Any]]:
        """The response's id and output items (whole JSON, or the events of a stream: its
        last response object, else the items done one by one)."""
        return _answer_items(answer)

    def read_error(self, status: int, payload: Any) -> WireError:
        """OpenAI's ``{"error": {...}}``."""
        return openai_shared.read_error(status, payload)

    def stream_reader(self) -> ResponsesStream:
        """A reader of Responses API stream events."""
        return ResponsesStream()

    def client(self) -> ResponsesClient:
        """The Responses API as the ``openai`` source speaks it."""
        return ResponsesClient()

    # -- serving -----------------------------------------------------------------------

    def served_request(self, body: dict[str, Any], known: int, path: str) -> ServedRequest:
        """Rounds in ``input`` plus the replies of a chain; reasoning items checked."""
        return openai_responses_serving.served_request(body, known)

    def streams(self, body: dict[str, Any], path: str) -> bool:
        """``stream: true``."""
        return bool(body.get("stream"))

    def render_reply(
        self, reply: ServedReply, body: dict[str, Any], asked: ServedRequest
    ) -> dict[str, Any]:
        """The whole ``response`` object."""
        return openai_responses_serving.response_object(body, reply, asked.reasoning)

    def render_stream(
        self, reply: ServedReply, body: dict[str, Any], asked: ServedRequest
    ) -> Iterator[str]:
        """The stream's events: created, each output item piece by piece, completed."""
        return openai_responses_serving.response_events(self.render_reply(reply, body, asked))

    def render_error(self, error: WireError) -> dict[str, Any]:
        """OpenAI's ``{"error": {...}}``."""
        return openai_shared.error_body(error)


WIRE = ResponsesWire()


# -- reading requests --------------------------------------------------------------------------


def _normalized(entry: Any) -> list[Item]:
    """One input item, normalized."""
    if not isinstance(entry, dict):
        return [("other", canonical_json(entry))]
    kind = entry.get("type")
    if kind == "function_call":
        args = arguments_item(entry.get("arguments"))
        return [("call", entry.get("call_id"), entry.get("name"), args)]
    if kind == "function_call_output":
        return [("result", entry.get("call_id"), text_of(entry.get("output")) or "")]
    if kind == "reasoning":
        return []
    if entry.get("role"):
        text = text_of(entry.get("content"))
        if text or entry.get("role") != "assistant":
            return [("message", normalized_role(entry.get("role")), text or "")]
        return []
    return [("other", canonical_json(entry))]


def _call(call_id: Any, name: Any, arguments: Any) -> ToolCall:
    return ToolCall.from_text(str(call_id or ""), str(name or ""), arguments_text(arguments))


def _messages(items: list[Any], names: dict[str, str]) -> list[Message]:
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
            failed = read_result(content, item.get("status") == "incomplete").failed
            name = names.get(call_id, "")
            messages.append(
                ToolMessage(tool_call_id=call_id, name=name, content=content, is_error=failed)
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


# -- reading answers ---------------------------------------------------------------------------


def _whole(body: dict[str, Any]) -> WireReply:
    texts: list[str] = []
    calls: list[tuple[str | None, str, str | None]] = []
    reasoning: list[dict[str, Any]] = []
    for item in body.get("output") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            texts.append(text_of(item.get("content") or []) or "")
        elif item.get("type") == "function_call":
            name = str(item.get("name") or "")
            calls.append((item.get("call_id"), name, arguments_text(item.get("arguments"))))
        elif item.get("type") == "reasoning":
            reasoning.append(without_none(item))
    usage = openai_shared.usage_of(body.get("usage"))
    reply = WireReply("".join(texts) or None, calls, _finish(body, calls), usage)
    reply.reasoning = reasoning
    if body.get("status") == "failed":
        error = body.get("error")
        if not isinstance(error, dict):
            error = {}
        reply.failed = str(error.get("message") or error.get("code") or "no message")
    return reply


def _finish(body: dict[str, Any], calls: list[Any]) -> str:
    """The API has none: ``tool_calls``, else an incomplete answer's reason (``length``
    for max_output_tokens), else ``stop``."""
    if calls:
        return "tool_calls"
    if body.get("status") == "incomplete":
        details = body.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return "length" if reason == "max_output_tokens" else str(reason or "length")
    return "stop"


class ResponsesStream:
    """A streamed response read event by event: text and function-call pieces as they
    arrive (calls numbered in output order), the response its last event carries, else
    the items finished so far."""

    def __init__(self) -> None:
        self._calls: dict[Any, int] = {}  # output_index -> the call's index in the reply
        self._end: dict[str, Any] | None = None
        self._items: list[Any] = []
        self.problem: str | None = None

    def add(self, event: dict[str, Any]) -> LLMChunk | None:
        """Take one event; the piece of the reply it carries, if any."""
        kind = event.get("type")
        if kind in _RESPONSE_ENDS:
            self._end = event
            if kind == "response.failed":
                error = (event.get("response") or {}).get("error")
                message = error.get("message") if isinstance(error, dict) else None
                self.problem = message or "the response failed"
        elif kind == "error":
            self.problem = event.get("message") or "stream error"
        elif kind == "response.output_item.done":
            self._items.append(event.get("item"))
        return _piece(event, kind, self._calls)

    def reply(self) -> WireReply:
        """The response of the last event that ends a stream, else the items done."""
        if self._end is not None:
            return _whole(self._end.get("response") or {})
        # A stream cut before its last event: the items it finished.
        return _whole({"output": self._items})

    @property
    def empty(self) -> bool:
        """Neither a response nor a finished item so far."""
        return self._end is None and not self._items

    def closing(self) -> LLMChunk:
        """The reply's finish_reason and usage: no event of this API carries them."""
        reply = self.reply()
        return LLMChunk(finish_reason=reply.finish_reason, usage=reply.usage or None)


class ResponsesClient:
    """Requests of the own loop as Responses API bodies (input items converted once per
    message of a conversation that only grows), and whole responses read."""

    path = "/responses"

    def __init__(self) -> None:
        self._messages: list[Any] = []
        self._items: list[dict[str, Any]] = []

    def body(
        self, model: str, request: LLMRequest, options: dict[str, Any], stream: bool
    ) -> dict[str, Any]:
        """``input``, ``tools`` and the options in this API's form."""
        params: dict[str, Any] = {"model": model, "input": self._input(request)}
        if request.tools:
            params["tools"] = [WIRE.request_tool(t.openai_schema()) for t in request.tools]
        options = dict(options)
        if "tool_choice" in options:
            options["tool_choice"] = WIRE.request_tool_choice(options["tool_choice"])
        params.update(options)
        if stream:
            params["stream"] = True
        return params

    def reply(self, answer: Any) -> WireReply:
        """The response's output (an empty reply when the answer holds none)."""
        return WIRE.read_reply(answer, False) or WireReply()

    def _input(self, request: LLMRequest) -> list[dict[str, Any]]:
        messages = request.conversation.messages
        known = self._messages
        n = len(known)
        # Conversations only grow: the first and last known messages tell whether
        # this is the same one, extended.
        same = n == 0 or (
            len(messages) >= n and messages[0] is known[0] and messages[n - 1] is known[n - 1]
        )
        if not same:
            known.clear()
            self._items.clear()
            n = 0
        for message in messages[n:]:
            known.append(message)
            self._items.extend(WIRE.request_items(message))
        return list(self._items)


def _piece(event: dict[str, Any], kind: Any, calls: dict[Any, int]) -> LLMChunk | None:
    """The piece of the reply a stream event carries, if any."""
    if kind in ("response.output_text.delta", "response.refusal.delta"):
        return LLMChunk(content=event.get("delta"))
    item = event.get("item")
    added = kind == "response.output_item.added"
    if added and isinstance(item, dict) and item.get("type") == "function_call":
        index = calls.setdefault(event.get("output_index"), len(calls))
        call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments")
        return LLMChunk(tool_calls=(ToolCallDelta(index, call_id, name, arguments),))
    if kind == "response.function_call_arguments.delta" and event.get("output_index") in calls:
        delta = ToolCallDelta(calls[event["output_index"]], arguments=event.get("delta"))
        return LLMChunk(tool_calls=(delta,))
    return None


def _stream(events: list[Any]) -> WireReply:
    reader = ResponsesStream()
    for event in events:
        if isinstance(event, dict):
            reader.add(event)
    return reader.reply()


_MERGED = ("response.created", "response.in_progress", "response.completed", "response.incomplete")


def _answer_items(answer: tuple[Any, bool] | None) -> tuple[str | None, list[Any]]:
    if answer is None:
        return None, []
    value, streamed = answer
    if not streamed:
        response = value if isinstance(value, dict) else {}
    elif not isinstance(value, SSEBody):
        response = {}
    else:
        response, done = {}, []
        for event in value.events:
            kind = event.get("type")
            if isinstance(event.get("response"), dict) and kind in _MERGED:
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
