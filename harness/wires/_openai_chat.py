"""OpenAI's Chat Completions (``POST /v1/chat/completions``): its JSON and its stream.

Requests carry the conversation as ``messages`` (tool results as ``role: tool``); a reply
is ``choices[0].message`` with ``tool_calls``, streamed as ``chat.completion.chunk``
events ending with ``data: [DONE]``. Streamed pieces add up through ``ChunkAccumulator``,
as the OpenAI source's do (tool-call pieces by index, a name some providers resend not
doubled).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from harness._canonical import canonical_json
from harness._messages import AssistantMessage, Message, ToolMessage, message_from_openai, text_of
from harness.llm._base import LLMRequest
from harness.llm._chunks import ChunkAccumulator, LLMChunk, ToolCallDelta
from harness.wires import _openai_shared as openai_shared
from harness.wires._failures import failure_form, read_result
from harness.wires._neutral import (
    MODEL_ID,
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
    arguments_text,
    renamed,
)

__all__ = ["WIRE", "ChatClient", "ChatStream", "ChatWire", "normalized_role"]


def normalized_role(role: Any) -> Any:
    """A role as a normalized conversation says it (``developer`` is system text)."""
    return "system" if role == "developer" else role


class ChatWire(StatelessRequests):
    """The Chat Completions wire (see ``harness.wires._neutral.Wire``)."""

    name = "openai-chat"
    api = "chat"
    label = "Chat Completions"
    paths: tuple[str, ...] = ("/v1/chat/completions",)
    items_field = "messages"

    def serves(self, path: str) -> bool:
        """``.../chat/completions``."""
        return path.endswith("/chat/completions")

    # -- requests ----------------------------------------------------------------------

    def messages(self, items: list[Any], names: dict[str, str] | None = None) -> list[Message]:
        """Chat Completions messages as harness messages (unreadable ones skipped); a tool
        message, which names no tool on this API, gets the name of the call it answers
        (``names``: call id -> tool name, kept across calls)."""
        names = {} if names is None else names
        messages: list[Message] = []
        for item in items:
            if not isinstance(item, dict):
                continue
            try:
                message = message_from_openai(item)
            except (ValueError, TypeError, AttributeError):
                continue
            if isinstance(message, AssistantMessage):
                names.update((call.id, call.name) for call in message.tool_calls)
            elif isinstance(message, ToolMessage):
                # No flag on this API: its text says whether the tool failed.
                update: dict[str, Any] = {"is_error": failure_form(message.content) is not None}
                if not message.name:
                    update["name"] = names.get(message.tool_call_id, "")
                message = message.model_copy(update=update)
            messages.append(message)
        return messages

    def instructions(self, body: dict[str, Any]) -> list[Message]:
        """None: the system text is a message."""
        return []

    def tool_results(self, items: list[Any], start: int = 0) -> dict[str, ToolResult]:
        """call id -> the text of each ``role: tool`` message from ``start`` on. The API
        has no failure flag: a result is failed when its text is written in a failure
        form (``harness.wires._failures``)."""
        found: dict[str, ToolResult] = {}
        for index in range(start, len(items)):
            item = items[index]
            if not isinstance(item, dict):
                continue
            if item.get("role") == "tool" and item.get("tool_call_id") is not None:
                found[str(item["tool_call_id"])] = read_result(text_of(item.get("content")) or "")
        return found

    def with_call_ids(self, item: Any, rename: Callable[[str], str]) -> Any:
        """An assistant message's ``tool_calls[*].id``, a tool message's ``tool_call_id``."""
        if not isinstance(item, dict):
            return item
        calls = item.get("tool_calls")
        if isinstance(calls, list):
            item = {**item, "tool_calls": [renamed(call, "id", rename) for call in calls]}
        return renamed(item, "tool_call_id", rename)

    def tools(self, tools: Any) -> list[ToolSpec]:
        """The ``tools`` of a request."""
        return openai_shared.tools(tools)

    def tool_offer(self, body: dict[str, Any]) -> ToolOffer:
        """``tools`` and ``tool_choice``."""
        return openai_shared.tool_offer(body)

    def normalized(self, body: dict[str, Any]) -> tuple[Item, ...]:
        """The messages as normalized items: text by role, calls, results."""
        items: list[Item] = []
        for message in body.get("messages") or []:
            if not isinstance(message, dict):
                items.append(("other", canonical_json(message)))
                continue
            role = message.get("role")
            text = text_of(message.get("content"))
            if role == "tool":
                items.append(("result", message.get("tool_call_id"), text or ""))
            elif role == "assistant":
                if text:
                    items.append(("message", "assistant", text))
                for call in message.get("tool_calls") or []:
                    function = call.get("function") or {}
                    args = arguments_item(function.get("arguments"))
                    items.append(("call", call.get("id"), function.get("name"), args))
            else:
                items.append(("message", normalized_role(role), text or ""))
        return tuple(items)

    # -- answers -----------------------------------------------------------------------

    def read_reply(self, payload: Any, streamed: bool) -> WireReply | None:
        """``choices[0].message`` of a completion, or what its chunks add up to (a stream
        ended by neither a finish_reason nor ``[DONE]`` is cut off)."""
        try:
            if not streamed:
                return _whole(payload) if isinstance(payload, dict) else None
            if not isinstance(payload, SSEBody):
                return None
            reply = _stream(payload.events)
        except (AttributeError, TypeError, KeyError, IndexError, ValueError):
            # A body of the wrong shape somewhere inside (a message that is a string, an
            # index that is not a number): no answer of this API, as for a wrong top level.
            return None
        # Either one ends a stream: OpenAI sends both, some OpenAI-compatible providers
        # only [DONE] (no finish_reason on a reply of calls, as in simonw/llm's recording
        # through OpenRouter).
        if not (payload.done or reply.finish_reason is not None):
            reply.cut_off = "no finish_reason and no [DONE]"
        reply.not_json = payload.not_json
        return reply

    def read_error(self, status: int, payload: Any) -> WireError:
        """OpenAI's ``{"error": {...}}``."""
        return openai_shared.read_error(status, payload)

    def stream_reader(self) -> ChatStream:
        """A reader of ``chat.completion.chunk`` events."""
        return ChatStream()

    def client(self) -> ChatClient:
        """Chat Completions as the ``openai`` source speaks it."""
        return ChatClient()

    # -- serving -----------------------------------------------------------------------

    def served_request(self, body: dict[str, Any], known: int, path: str) -> ServedRequest:
        """The replies a request holds are its assistant messages."""
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise WireError(400, "messages must be a list")
        k = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
        return ServedRequest(k, messages)

    def streams(self, body: dict[str, Any], path: str) -> bool:
        """``stream: true``."""
        return bool(body.get("stream"))

    def render_reply(
        self, reply: ServedReply, body: dict[str, Any], asked: ServedRequest
    ) -> dict[str, Any]:
        """The whole ``chat.completion`` object."""
        message: dict[str, Any] = {"role": "assistant", "content": reply.content, "refusal": None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
                for call_id, name, arguments in reply.tool_calls
            ]
        choice = {"index": 0, "message": message, "finish_reason": reply.finish_reason}
        return {
            **_head(reply, body, "chat.completion"),
            "choices": [{**choice, "logprobs": None}],
            "usage": reply.usage,
        }

    def render_stream(
        self, reply: ServedReply, body: dict[str, Any], asked: ServedRequest
    ) -> Iterator[str]:
        """The ``chat.completion.chunk`` events of the reply's pieces, then ``[DONE]``.

        The first chunk carries the role and a content key (as the API streams it: ""
        opens a text reply, null a reply of tool calls only); usage goes out only when the
        request asked for it, alone (``choices: []``) when its chunk has nothing else.
        """
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        base = _head(reply, body, "chat.completion.chunk")
        for i, piece in enumerate(reply.chunks):
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

    def render_error(self, error: WireError) -> dict[str, Any]:
        """OpenAI's ``{"error": {...}}``."""
        return openai_shared.error_body(error)

    def render_model(self, name: str) -> dict[str, Any]:
        """``GET /v1/models/{id}``'s answer."""
        return openai_shared.model_info(name)

    def render_models(self, name: str) -> dict[str, Any]:
        """``GET /v1/models``'s answer, listing the model ``name``."""
        return {"object": "list", "data": [self.render_model(name)]}


WIRE = ChatWire()


def _head(reply: ServedReply, body: dict[str, Any], kind: str) -> dict[str, Any]:
    model = body.get("model") or MODEL_ID
    return {"id": f"chatcmpl-harness-{reply.n}", "object": kind, "created": 0, "model": model}


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


def _whole(body: dict[str, Any]) -> WireReply | None:
    choices = body.get("choices")
    if not isinstance(choices, list):
        return None
    choice = choices[0] if choices and isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    calls = [
        (call.get("id"), str(function.get("name") or ""), arguments_text(function.get("arguments")))
        for call in message.get("tool_calls") or []
        if isinstance(call, dict)
        for function in [call.get("function") or {}]
    ]
    content = text_of(message.get("content")) or text_of(message.get("refusal")) or None
    usage = openai_shared.usage_of(body.get("usage"))
    return WireReply(content, calls, choice.get("finish_reason"), usage)


def _chunk(event: dict[str, Any]) -> LLMChunk:
    """A ``chat.completion.chunk`` event as an LLMChunk (choice 0; a refusal is text too)."""
    content = finish = None
    deltas: list[ToolCallDelta] = []
    for choice in event.get("choices") or []:
        if not isinstance(choice, dict) or choice.get("index", 0) != 0:
            continue
        delta = choice.get("delta") or {}
        content = delta.get("content")
        if not content and delta.get("refusal"):
            content = delta["refusal"]  # a refusal is the model's answer too
        for tc in delta.get("tool_calls") or []:
            function = tc.get("function") or {}
            index, call_id = tc.get("index", 0), tc.get("id")
            deltas.append(
                ToolCallDelta(index, call_id, function.get("name"), function.get("arguments"))
            )
        finish = choice.get("finish_reason") or finish
    usage = (openai_shared.usage_of(event["usage"]) or None) if event.get("usage") else None
    return LLMChunk(content=content, tool_calls=tuple(deltas), finish_reason=finish, usage=usage)


class ChatStream:
    """A streamed completion read chunk by chunk (``ChunkAccumulator``: tool-call pieces
    by index, the first id kept, a name some providers resend in every chunk not doubled)."""

    def __init__(self) -> None:
        self._acc = ChunkAccumulator()
        # Chat Completions streams carry errors as HTTP errors, never as an event.
        self.problem: str | None = None

    def add(self, event: dict[str, Any]) -> LLMChunk:
        """The ``chat.completion.chunk`` as a piece of the reply."""
        chunk = _chunk(event)
        self._acc.add(chunk)
        return chunk

    def reply(self) -> WireReply:
        """What the chunks so far add up to."""
        acc = self._acc
        return WireReply(acc.text or None, list(acc.calls()), acc.finish_reason, acc.usage or {})

    @property
    def empty(self) -> bool:
        """Never: a completion's stream is a reply however little it holds."""
        return False

    def closing(self) -> None:
        """None: the chunks carry the finish_reason and usage themselves."""
        return None


class ChatClient:
    """Requests of the own loop as Chat Completions bodies (harness's messages and tools
    are in this API's form already), and whole completions read."""

    path = "/chat/completions"

    def body(
        self, model: str, request: LLMRequest, options: dict[str, Any], stream: bool
    ) -> dict[str, Any]:
        """``messages``, ``tools`` and the options; a stream asks for its usage."""
        params: dict[str, Any] = {"model": model, "messages": request.messages}
        if request.tools:
            params["tools"] = request.tool_schemas
        params.update(options)
        if stream:
            params["stream"] = True
            params["stream_options"] = {**params.get("stream_options", {}), "include_usage": True}
        return params

    def reply(self, answer: Any) -> WireReply:
        """Choice 0 of a completion; WireError when it has no choice."""
        reply = WIRE.read_reply(answer, False)
        if reply is None or not answer.get("choices"):
            raise WireError(502, "the model returned no choices")
        return reply


def _stream(events: list[Any]) -> WireReply:
    reader = ChatStream()
    for event in events:
        if isinstance(event, dict):
            reader.add(event)
    return reader.reply()
