"""Anthropic's Messages API (``POST /v1/messages``): its JSON and its stream.

Requests carry the conversation as ``messages`` of content blocks (``text``, ``tool_use``
in the model's turns, ``tool_result`` in the user's, ``thinking`` sent back as it came)
and the system text beside them (``system``); a reply is a ``message`` whose ``content``
holds the same blocks, streamed as ``message_start``, ``content_block_start`` /
``_delta`` / ``_stop`` per block, ``message_delta`` (the stop reason, the output tokens)
and ``message_stop``, each with its ``event:`` line. ``stop_reason`` ``tool_use``,
``max_tokens``, ``end_turn`` read as ``tool_calls``, ``length``, ``stop``; usage
``input_tokens`` (with the cached ones) and ``output_tokens`` as ``prompt_tokens`` and
``completion_tokens``. ``thinking`` blocks are the model's opaque state, kept as
reasoning and sent back verbatim.

How ``harness serve`` answers it is ``harness.wires._anthropic_serving``.
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
from harness.wires import _anthropic_serving as anthropic_serving
from harness.wires._anthropic_client import MessagesClient
from harness.wires._failures import read_result
from harness.wires._neutral import (
    HeldTurn,
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
    without_none,
)

__all__ = ["WIRE", "MessagesStream", "MessagesWire", "system_text", "usage_of"]

# stop_reason -> finish_reason, as Chat Completions says it (others are kept as they are:
# pause_turn, model_context_window_exceeded).
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "refusal": "content_filter",
}
_REASONING_BLOCKS = ("thinking", "redacted_thinking")
# The parameters of a tool whose schema the request does not give: any object.
_ANY_OBJECT = {"type": "object", "properties": {}, "additionalProperties": True}


class MessagesWire(StatelessRequests):
    """The Anthropic Messages wire (see ``harness.wires._neutral.Wire``)."""

    name = "anthropic"
    api = "messages"
    label = "Anthropic Messages"
    paths: tuple[str, ...] = ("/v1/messages",)
    # Where harness serve counts a request's input tokens (render_count).
    count_paths: tuple[str, ...] = ("/v1/messages/count_tokens",)
    # How harness serve answers an `error: overloaded` step: the API's own 529.
    overloaded = (529, "Overloaded")
    items_field = "messages"

    def serves(self, path: str) -> bool:
        """``.../v1/messages`` (not OpenAI's ``/v1/threads/{id}/messages``)."""
        return path.endswith("/v1/messages")

    # -- requests ----------------------------------------------------------------------

    def held(self, body: dict[str, Any]) -> HeldTurn | None:
        """The message thread a request asks for (``thread: {type: create}``, or
        ``{type: continue, previous_message_id}`` with only the new messages)."""
        return anthropic_serving.held_turn(body)

    def resumed(self, body: dict[str, Any], earlier: dict[str, Any]) -> dict[str, Any]:
        """The whole request a thread continue stands for."""
        return anthropic_serving.resumed(body, earlier)

    def held_answer(self, answer: tuple[Any, bool] | None) -> tuple[str | None, list[Any]]:
        """The message's id and its reply as the assistant message the thread holds."""
        reply = self.read_reply(*answer) if answer is not None else None
        message_id, message = anthropic_serving.reply_message(answer, reply)
        if not isinstance(message_id, str) or message is None:
            return None, []
        return message_id, [message]

    def messages(self, items: list[Any], names: dict[str, str] | None = None) -> list[Message]:
        """Messages as harness messages: a user turn's ``tool_result`` blocks as tool
        messages (then its text), a model turn's text, calls and thinking as one reply;
        ``names`` (call id -> tool name) is kept across calls."""
        names = {} if names is None else names
        out: list[Message] = []
        for item in items:
            if not isinstance(item, dict):
                continue
            blocks = _blocks(item.get("content"))
            if item.get("role") == "assistant":
                out.append(_reply_message(blocks, names))
                continue
            if item.get("role") != "user":
                continue
            texts = []
            for block in blocks:
                if block.get("type") == "tool_result":
                    call_id = str(block.get("tool_use_id") or "")
                    result = _read_result(block)
                    out.append(
                        ToolMessage(
                            tool_call_id=call_id,
                            name=names.get(call_id, ""),
                            content=result.text,
                            is_error=result.failed,
                        )
                    )
                elif block.get("type") == "text":
                    texts.append(str(block.get("text") or ""))
            if texts or not blocks:
                out.append(UserMessage(content="".join(texts)))
        return out

    def instructions(self, body: dict[str, Any]) -> list[Message]:
        """``system`` as a system message."""
        text = system_text(body.get("system"))
        return [SystemMessage(content=text)] if text else []

    def tool_results(self, items: list[Any], start: int = 0) -> dict[str, ToolResult]:
        """call id -> each ``tool_result`` block from ``start`` on: its text, failed when
        the block says ``is_error: true`` (or its text is in a failure form)."""
        found: dict[str, ToolResult] = {}
        for index in range(start, len(items)):
            item = items[index]
            if not isinstance(item, dict) or item.get("role") != "user":
                continue
            for block in _blocks(item.get("content")):
                if block.get("type") == "tool_result" and block.get("tool_use_id") is not None:
                    found[str(block["tool_use_id"])] = _read_result(block)
        return found

    def with_call_ids(self, item: Any, rename: Callable[[str], str]) -> Any:
        """A ``tool_use`` block's ``id``, a ``tool_result`` block's ``tool_use_id``."""
        if not isinstance(item, dict) or not isinstance(item.get("content"), list):
            return item
        blocks = []
        for block in item["content"]:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "tool_use":
                block = renamed(block, "id", rename)
            elif kind == "tool_result":
                block = renamed(block, "tool_use_id", rename)
            blocks.append(block)
        return {**item, "content": blocks}

    def tools(self, tools: Any) -> list[ToolSpec]:
        """Every named tool: the client's own (``input_schema``) and Anthropic's typed ones
        (``text_editor_...``, whose schema the API knows); anything else unnamed."""
        specs = []
        for tool in tools or []:
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(name, str) or not name:
                specs.append(ToolSpec(None, raw=tool))
                continue
            schema = tool.get("input_schema")
            if not isinstance(schema, dict) and tool.get("type", "custom") != "custom":
                # Anthropic's own tool: the API knows its schema, the request does not say it.
                schema = dict(_ANY_OBJECT)
            specs.append(
                ToolSpec(
                    name,
                    tool.get("description"),
                    schema if isinstance(schema, dict) else None,
                    bool(tool.get("strict", False)),
                    tool,
                )
            )
        return specs

    def tool_offer(self, body: dict[str, Any]) -> ToolOffer:
        """``tools`` and ``tool_choice`` (``{type: none}``, ``{type: tool, name}``)."""
        names = [spec.name for spec in self.tools(body.get("tools")) if spec.name]
        choice = body.get("tool_choice")
        kind = choice.get("type") if isinstance(choice, dict) else None
        forced = choice.get("name") if kind == "tool" and isinstance(choice, dict) else None
        return ToolOffer(names, kind == "none", forced if isinstance(forced, str) else None)

    def normalized(self, body: dict[str, Any]) -> tuple[Item, ...]:
        """``system`` and the messages as normalized items (thinking left out)."""
        items: list[Item] = []
        system = system_text(body.get("system"))
        if system:
            items.append(("message", "system", system))
        for message in body.get("messages") or []:
            if not isinstance(message, dict):
                items.append(("other", canonical_json(message)))
                continue
            items.extend(_normalized(message))
        return tuple(items)

    # -- answers -----------------------------------------------------------------------

    def read_reply(self, payload: Any, streamed: bool) -> WireReply | None:
        """The message's content, or what its stream's events add up to (a stream with
        no ``message_stop`` and no stop reason is cut off)."""
        try:
            if not streamed:
                return _whole(payload) if isinstance(payload, dict) else None
            if not isinstance(payload, SSEBody):
                return None
            reader = MessagesStream()
            for event in payload.events:
                reader.add(event)
            if reader.empty:
                return None
            reply = reader.reply()
        except (AttributeError, TypeError, KeyError, IndexError, ValueError):
            return None
        if not reader.ended and reply.finish_reason is None:
            reply.cut_off = "no message_stop event and no stop_reason"
        if reader.problem is not None:
            reply.failed = reader.problem
        reply.not_json = payload.not_json
        return reply

    def read_error(self, status: int, payload: Any) -> WireError:
        """``{"type": "error", "error": {"type", "message"}}``."""
        details = payload.get("error") if isinstance(payload, dict) else None
        message = code = None
        if isinstance(details, dict):
            message, code = details.get("message"), details.get("code")
        text = message if isinstance(message, str) and message else f"HTTP {status}"
        return WireError(status, text, None if code is None else str(code))

    def stream_reader(self) -> MessagesStream:
        """A reader of Messages stream events."""
        return MessagesStream()

    def client(self) -> MessagesClient:
        """The Messages API as the ``anthropic`` source speaks it."""
        return MessagesClient(lambda answer: self.read_reply(answer, False))

    # -- serving -----------------------------------------------------------------------

    def served_request(self, body: dict[str, Any], known: int, path: str) -> ServedRequest:
        """The replies a request holds are its assistant messages; a body the API would
        refuse (no messages, no max_tokens, a thinking block changed) is a 400."""
        return anthropic_serving.served_request(body)

    def streams(self, body: dict[str, Any], path: str) -> bool:
        """``stream: true``."""
        return bool(body.get("stream"))

    def render_reply(
        self, reply: ServedReply, body: dict[str, Any], asked: ServedRequest
    ) -> dict[str, Any]:
        """The whole ``message`` object."""
        return anthropic_serving.message_object(reply, body)

    def render_stream(
        self, reply: ServedReply, body: dict[str, Any], asked: ServedRequest
    ) -> Iterator[str]:
        """The stream's events, block by block."""
        return anthropic_serving.message_events(reply, body)

    def render_error(self, error: WireError) -> dict[str, Any]:
        """``{"type": "error", "error": {"type", "message"}}``, the type following the
        status (429 ``rate_limit_error``, 529 ``overloaded_error``, ...)."""
        return anthropic_serving.error_body(error)

    def render_count(self, tokens: int) -> dict[str, Any]:
        """The answer of ``POST /v1/messages/count_tokens`` (``count_paths``)."""
        return {"input_tokens": tokens}

    def render_model(self, name: str) -> dict[str, Any]:
        """``GET /v1/models/{id}``'s answer."""
        return anthropic_serving.model_info(name)

    def render_models(self, name: str) -> dict[str, Any]:
        """``GET /v1/models``'s answer, listing the model ``name``."""
        info = self.render_model(name)
        return {"data": [info], "has_more": False, "first_id": name, "last_id": name}


WIRE = MessagesWire()


# -- reading requests --------------------------------------------------------------------------


def system_text(system: Any) -> str:
    """The text of ``system``: a string, or a list of text blocks."""
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "".join(
            str(b.get("text") or "")
            for b in system
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _blocks(content: Any) -> list[dict[str, Any]]:
    """A message's content as blocks (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [b for b in content if isinstance(b, dict)]
    return []


def _result_text(content: Any) -> str:
    """A ``tool_result``'s content as text (a string, or text blocks)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text") or "") for b in _blocks(content) if b.get("type") == "text")


def _read_result(block: dict[str, Any]) -> ToolResult:
    """A ``tool_result`` block as a tool result: failed when it says ``is_error: true``."""
    return read_result(_result_text(block.get("content")), block.get("is_error") is True)


def _call_of(block: dict[str, Any]) -> ToolCall:
    text = arguments_text(block.get("input"))
    return ToolCall.from_text(str(block.get("id") or ""), str(block.get("name") or ""), text)


def _reply_message(blocks: list[dict[str, Any]], names: dict[str, str]) -> AssistantMessage:
    texts, calls, reasoning = [], [], []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            call = _call_of(block)
            names[call.id] = call.name
            calls.append(call)
        elif kind in _REASONING_BLOCKS:
            reasoning.append(without_none(block))
    return AssistantMessage(content="".join(texts) or None, tool_calls=calls, reasoning=reasoning)


def _normalized(message: dict[str, Any]) -> list[Item]:
    """One message, normalized: text runs as messages, calls, results, in block order."""
    role = message.get("role")
    items: list[Item] = []
    text: list[str] = []

    def flush() -> None:
        if text:
            items.append(("message", role, "".join(text)))
            text.clear()

    blocks = _blocks(message.get("content"))
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            text.append(str(block.get("text") or ""))
            continue
        if kind in _REASONING_BLOCKS:
            continue
        flush()
        if kind == "tool_use":
            args = arguments_item(arguments_text(block.get("input")))
            items.append(("call", block.get("id"), block.get("name"), args))
        elif kind == "tool_result":
            items.append(("result", block.get("tool_use_id"), _result_text(block.get("content"))))
        else:
            items.append(("other", canonical_json(block)))
    flush()
    if not blocks and role != "assistant":
        items.append(("message", role, ""))
    return items


# -- reading answers ---------------------------------------------------------------------------


def usage_of(raw: Any) -> dict[str, int]:
    """Token counts under Chat Completions' names: the prompt is the input tokens with the
    cached ones (the API counts them apart), the completion the output tokens."""
    if not isinstance(raw, dict):
        return {}

    def count(name: str) -> int | None:
        value = raw.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    usage: dict[str, int] = {}
    given = [
        count(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    ]
    if given[0] is not None:
        usage["prompt_tokens"] = sum(n for n in given if n is not None)
    output = count("output_tokens")
    if output is not None:
        usage["completion_tokens"] = output
    if "prompt_tokens" in usage and output is not None:
        usage["total_tokens"] = usage["prompt_tokens"] + output
    return usage


def _finish(stop_reason: Any) -> str | None:
    if not isinstance(stop_reason, str):
        return None
    return _FINISH.get(stop_reason, stop_reason)


def _whole(body: dict[str, Any]) -> WireReply | None:
    content = body.get("content")
    if not isinstance(content, list):
        return None
    message = _reply_message(_blocks(content), {})
    calls: list[tuple[str | None, str, str | None]] = [
        (block.get("id"), str(block.get("name") or ""), arguments_text(block.get("input")))
        for block in _blocks(content)
        if block.get("type") == "tool_use"
    ]
    reply = WireReply(
        message.content, calls, _finish(body.get("stop_reason")), usage_of(body.get("usage"))
    )
    reply.reasoning = message.reasoning
    return reply


class MessagesStream:
    """A streamed message read event by event: text and ``tool_use`` pieces as they arrive
    (calls numbered in block order), thinking blocks put together, the stop reason and
    usage of ``message_delta`` (over ``message_start``'s)."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._calls: dict[Any, list[Any]] = {}  # block index -> [id, name, argument pieces]
        self._blocks: dict[Any, dict[str, Any]] = {}  # block index -> a thinking block
        self._usage: dict[str, Any] = {}
        self._finish: str | None = None
        self._started = False
        self._delta_seen = False
        self.ended = False
        self.problem: str | None = None

    def add(self, event: dict[str, Any]) -> LLMChunk | None:
        """Take one event; the piece of the reply it carries, if any."""
        kind = event.get("type")
        if kind == "message_start":
            self._started = True
            message = event.get("message") or {}
            self._usage.update(message.get("usage") or {})
            return None
        if kind == "content_block_start":
            return self._start(event.get("index"), event.get("content_block") or {})
        if kind == "content_block_delta":
            return self._delta(event.get("index"), event.get("delta") or {})
        if kind == "message_delta":
            self._delta_seen = True
            self._usage.update(event.get("usage") or {})
            self._finish = _finish((event.get("delta") or {}).get("stop_reason")) or self._finish
            return LLMChunk(finish_reason=self._finish, usage=usage_of(self._usage) or None)
        if kind == "message_stop":
            self.ended = True
        elif kind == "error":
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else None
            self.problem = str(message or "stream error")
        return None

    def _start(self, index: Any, block: dict[str, Any]) -> LLMChunk | None:
        kind = block.get("type")
        if kind == "text":
            self._text.append(str(block.get("text") or ""))
            return LLMChunk(content=block.get("text") or "")
        if kind == "tool_use":
            number = len(self._calls)
            given = block.get("input")
            # The API opens a call with `input: {}` and streams the arguments; a server
            # that sends them whole in the opening block is read the same way.
            start = json.dumps(given) if isinstance(given, dict) and given else ""
            self._calls[index] = [block.get("id"), str(block.get("name") or ""), [start]]
            delta = ToolCallDelta(number, block.get("id"), block.get("name"), start)
            return LLMChunk(tool_calls=(delta,))
        if kind in _REASONING_BLOCKS:
            self._blocks[index] = dict(block)
        return None

    def _delta(self, index: Any, delta: dict[str, Any]) -> LLMChunk | None:
        kind = delta.get("type")
        if kind == "text_delta":
            text = str(delta.get("text") or "")
            self._text.append(text)
            return LLMChunk(content=text)
        if kind == "input_json_delta" and index in self._calls:
            piece = str(delta.get("partial_json") or "")
            slot = self._calls[index]
            slot[2].append(piece)
            number = list(self._calls).index(index)
            return LLMChunk(tool_calls=(ToolCallDelta(number, arguments=piece),))
        block = self._blocks.get(index)
        if block is not None and kind == "thinking_delta":
            block["thinking"] = str(block.get("thinking") or "") + str(delta.get("thinking") or "")
        elif block is not None and kind == "signature_delta":
            block["signature"] = delta.get("signature")
        return None

    def reply(self) -> WireReply:
        """What the events so far add up to."""
        calls: list[tuple[str | None, str, str | None]] = [
            (call_id, name, "".join(pieces)) for call_id, name, pieces in self._calls.values()
        ]
        finish = self._finish
        reply = WireReply("".join(self._text) or None, calls, finish, usage_of(self._usage))
        reply.reasoning = [without_none(block) for block in self._blocks.values()]
        return reply

    @property
    def empty(self) -> bool:
        """No ``message_start`` and no block so far."""
        return not (self._started or self._text or self._calls or self._blocks)

    def closing(self) -> LLMChunk | None:
        """The usage ``message_start`` gave, for a stream that sent no ``message_delta``."""
        if self._delta_seen:
            return None
        usage = usage_of(self._usage)
        return LLMChunk(finish_reason=self._finish, usage=usage or None) if usage else None
