"""What every wire reads into and writes from: harness's neutral side of a model API.

A request is read into conversation items as sent (``Wire.items``), harness messages
(``Wire.messages``), tool results by call id, tool definitions (``ToolSpec``) and a
normalized conversation (``Item`` tuples, compared by freeze). A reply is a ``WireReply``
(text, calls as ``(id, name, arguments text)``, finish_reason, usage under Chat
Completions' names), an error a ``WireError``, a streamed reply ``LLMChunk``s. The
``Wire`` protocol at the end is what each API's module provides.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness._canonical import canonical_json
from harness._messages import AssistantMessage, Message, ToolCall, parse_arguments
from harness.llm._base import LLMRequest
from harness.llm._chunks import LLMChunk

__all__ = [
    "MODEL_ID",
    "ClientSide",
    "HeldTurn",
    "Item",
    "SSEBody",
    "ServedReply",
    "ServedRequest",
    "StatelessRequests",
    "StreamReader",
    "ToolOffer",
    "ToolResult",
    "ToolSpec",
    "Wire",
    "WireError",
    "WireReply",
    "answer_body",
    "arguments_item",
    "arguments_text",
    "read_sse",
    "reasoning_text",
    "renamed",
    "without_none",
]

# The model a served answer names when the request names none.
MODEL_ID = "harness-script"

# A normalized conversation item: ("message", role, text), ("call", id, name, arguments),
# ("result", call id, text) or ("other", canonical JSON of what no wire could read).
Item = tuple[Any, ...]


@dataclass
class WireReply:
    """The model's reply in an answer body.

    ``tool_calls`` are ``(id, name, arguments text)`` with the text exactly as the model
    gave it (an id may be None: some servers and some APIs give none); ``finish_reason``
    is the API's, said as Chat Completions says it (``tool_calls``, ``length``, ``stop``);
    ``usage`` is under Chat Completions' names.

    A streamed reply that did not arrive whole says why: ``cut_off`` is what its stream
    lacks that every finished stream has, and ``not_json`` is its first ``data:`` line
    that is not JSON. Its fields are then what the stream held so far. An answer whose
    API says it failed (a Responses API ``status: failed``) says so in ``failed``.
    """

    content: str | None = None
    tool_calls: list[tuple[str | None, str, str | None]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    cut_off: str | None = None
    not_json: str | None = None
    failed: str | None = None
    # The model's opaque reasoning items (None values left out), to be sent back as they
    # came: reasoning models need them for multi-round tool use.
    reasoning: list[dict[str, Any]] = field(default_factory=list)

    def message(self, call: int | None = None) -> AssistantMessage:
        """The reply as a harness AssistantMessage, as observed (a call without an id gets
        ``""``); with ``call``, as the own loop keeps it: calls without an id get
        ``call_<call>_<i>`` as scripted calls do, a missing finish_reason is ``tool_calls``
        or ``stop``, and the reasoning items are kept to be sent back."""
        if call is None:
            calls = [
                ToolCall.from_text(str(call_id or ""), str(name or ""), arguments)
                for call_id, name, arguments in self.tool_calls
            ]
            return AssistantMessage(
                content=self.content, tool_calls=calls, finish_reason=self.finish_reason
            )
        calls = [
            ToolCall.from_text(call_id or f"call_{call}_{i}", name or "", arguments)
            for i, (call_id, name, arguments) in enumerate(self.tool_calls)
        ]
        finish = self.finish_reason or ("tool_calls" if calls else "stop")
        return AssistantMessage(
            content=self.content, tool_calls=calls, finish_reason=finish, reasoning=self.reasoning
        )

    def items(self) -> tuple[Item, ...]:
        """The reply as a normalized conversation holds it once it is sent back."""
        items: list[Item] = []
        if self.content:
            items.append(("message", "assistant", self.content))
        for call_id, name, arguments in self.tool_calls:
            items.append(("call", call_id, name, arguments_item(arguments)))
        return tuple(items)


@dataclass
class WireError(Exception):
    """An error answer, read or to be written: the status, the message, the API's code
    (raised by ``Wire.served_request`` for a request the API would refuse)."""

    status: int
    message: str
    code: str | None = None
    param: str | None = None

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class HeldTurn:
    """A request asking the server to hold its conversation (Anthropic's message threads):
    ``previous`` None starts one (the request carries the whole history); else it is the
    answer the request continues, sending only its new messages."""

    previous: str | None = None


@dataclass(frozen=True)
class ToolResult:
    """A tool's result as a request sends it back: its text, and whether the wire's own
    failure signal marks it failed (Anthropic ``is_error``, a Gemini response's ``error``
    key, a Responses API output ``incomplete``; docs/wires.md#tool-failures)."""

    text: str
    failed: bool = False


@dataclass(frozen=True)
class ToolSpec:
    """A tool a request offers. ``name`` None: not a function tool (``raw`` is kept)."""

    name: str | None
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool = False
    raw: Any = None


@dataclass(frozen=True)
class ToolOffer:
    """What a request lets the model call: the tools' names, whether it forbids calls
    (``tool_choice`` none), and the one tool it forces, if any."""

    names: list[str]
    none: bool = False
    forced: str | None = None


@dataclass(frozen=True)
class ServedRequest:
    """A request as ``harness serve`` answers it: how many model replies its conversation
    already holds, the conversation (its attempts are counted per hash of it), and
    whether the model's opaque reasoning goes out, to be sent back (the client asked for
    it, or the model gives it always: Gemini 3's signed calls)."""

    replies: int
    conversation: Any
    reasoning: bool = False


@dataclass(frozen=True)
class ServedReply:
    """A scripted reply to be written: reply ``n`` of the script, its text, its calls
    ``(id, name, arguments text)``, finish_reason, usage (Chat Completions' names), its
    pieces when streamed, and the model's reasoning text (each wire writes it in its own
    form, where it has one)."""

    n: int
    content: str | None
    tool_calls: list[tuple[str | None, str, str]]
    finish_reason: str
    usage: dict[str, int]
    chunks: list[LLMChunk]
    reasoning: str | None = None
    # What a response id names besides the reply's number: "" for the main script,
    # "c1_" for the first llm.conversations entry's (resp_harness_c1_2), "c1-2_" for
    # that entry's second conversation.
    tag: str = ""
    # The key of the conversation it answers (a hash of its messages), for ids that must
    # differ between conversations (an Anthropic thread continues a reply by its id).
    key: str = ""


def arguments_text(value: Any) -> str | None:
    """A call's arguments kept as the model's text: clients send it back unchanged, and
    replays compare it (a JSON value some servers give instead is written as JSON)."""
    return value if isinstance(value, str) or value is None else json.dumps(value)


def arguments_item(text: Any) -> Any:
    """A call's arguments as a normalized item compares them: canonical JSON of the
    object, or ``("raw", text)`` for text that is not one."""
    args, raw = parse_arguments(text if isinstance(text, str) or text is None else str(text))
    return canonical_json(args) if raw is None else ("raw", raw)


def reasoning_text(items: list[dict[str, Any]]) -> str | None:
    """The readable text of a reply's reasoning items, whatever their wire: Anthropic
    ``thinking`` blocks, Gemini ``thought`` parts (a stream's pieces joined), Responses
    reasoning summaries; None when they hold none (encrypted or redacted state only)."""
    texts: list[Any] = []
    for item in items:
        if item.get("type") == "thinking":
            texts.append(item.get("thinking"))
        elif item.get("thought") is True:
            texts.append(item.get("text"))
        elif item.get("type") == "reasoning":
            texts += [s.get("text") for s in item.get("summary") or [] if isinstance(s, dict)]
    return "".join(t for t in texts if isinstance(t, str)) or None


def renamed(value: Any, key: str, rename: Callable[[str], str]) -> Any:
    """``value`` with its string ``key`` given by ``rename`` (as it is without one)."""
    if not isinstance(value, dict) or not isinstance(value.get(key), str):
        return value
    return {**value, key: rename(value[key])}


def without_none(value: Any) -> Any:
    """``value`` with every None value of a mapping left out, at any depth."""
    if isinstance(value, dict):
        return {k: without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_none(v) for v in value]
    return value


@dataclass
class SSEBody:
    """A server-sent-events body, read: the JSON objects of its ``data:`` lines, whether
    one said ``[DONE]``, and what is wrong with the first ``data:`` line that is not JSON,
    if any (its line in the body and the JSON error, as ``WireReply.not_json`` says it):
    a stream cut in the middle of a line ends on one."""

    events: list[dict[str, Any]]
    done: bool = False
    not_json: str | None = None


def read_sse(text: str) -> SSEBody:
    """The ``data:`` lines of a server-sent-events body (JSON values that are not objects
    left out): a streamed reply as recorded or observed."""
    body = SSEBody([])
    for number, line in enumerate(text.splitlines(), 1):
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            body.done = True
            continue
        if not payload:
            continue
        try:
            event = json.loads(payload)
        except ValueError as exc:
            if body.not_json is None:
                body.not_json = f"data: line {number} of the body is not JSON: {exc}"
            continue
        if isinstance(event, dict):
            body.events.append(event)
    return body


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


class ClientSide(Protocol):
    """The wire as the own loop's SDK source speaks it: requests written from an
    ``LLMRequest``, whole answers read (``Wire.client``; one per source, which may keep
    what it converted of a conversation that only grows)."""

    path: str  # where requests go, under the API root an SDK's base URL names

    def body(
        self, model: str, request: LLMRequest, options: dict[str, Any], stream: bool
    ) -> dict[str, Any]:
        """The request body: the conversation, the tools, the options, streaming."""
        ...

    def reply(self, answer: Any) -> WireReply:
        """The reply of a whole answer's JSON; WireError when it holds none."""
        ...


class StreamReader(Protocol):
    """Reads one streamed answer event by event, as it arrives (``Wire.stream_reader``)."""

    # Why the stream says the answer failed (its error event), once it has; else None.
    problem: str | None

    def add(self, event: dict[str, Any]) -> LLMChunk | None:
        """Take the next event; the piece of the reply it carries, if any."""
        ...

    def reply(self) -> WireReply:
        """The reply the events so far add up to."""
        ...

    def closing(self) -> LLMChunk | None:
        """The last piece to hand on once the stream ended, when its events carry no
        finish_reason and usage of their own."""
        ...

    @property
    def empty(self) -> bool:
        """No event so far said anything of a reply."""
        ...


class StatelessRequests:
    """The request side shared by the APIs that keep no conversation server-side (Chat
    Completions, Anthropic Messages, Gemini): every request carries its whole history in
    its ``items_field``, and continues no earlier answer or thread by id (so an answer
    holds nothing a later request chains on)."""

    items_field: str

    def items(self, body: dict[str, Any]) -> list[Any]:
        """The list in ``items_field`` (empty when absent or not a list)."""
        items = body.get(self.items_field)
        return items if isinstance(items, list) else []

    def previous(self, body: dict[str, Any]) -> str | None:
        """None: a request carries its whole conversation."""
        return None

    def model(self, body: dict[str, Any], path: str) -> str | None:
        """The request's ``model`` field."""
        model = body.get("model")
        return model if isinstance(model, str) and model else None

    def thread(self, body: dict[str, Any]) -> str | None:
        """None: a request carries its whole conversation."""
        return None

    def answer_items(self, answer: tuple[Any, bool] | None) -> tuple[str | None, list[Any]]:
        """Nothing: no server-side chain continues an answer."""
        return None, []

    def held(self, body: dict[str, Any]) -> HeldTurn | None:
        """None: the server holds no conversation for a request."""
        return None

    def resumed(self, body: dict[str, Any], earlier: dict[str, Any]) -> dict[str, Any]:
        """``body``: no request continues a held conversation."""
        return body

    def held_answer(self, answer: tuple[Any, bool] | None) -> tuple[str | None, list[Any]]:
        """Nothing: no conversation is held."""
        return None, []


class Wire(Protocol):
    """One model API's JSON and streams, read into and written from the neutral forms.

    Stateless: every method works on the body or answer it is given (a ``client()`` or a
    ``stream_reader()`` is a new object for one source or one stream).
    """

    name: str  # the wire's name in docs and matrices (openai-chat)
    api: str  # the short name results and attempt counts use (chat, responses)
    paths: tuple[str, ...]  # the routes harness serve answers it on
    items_field: str  # the request field holding the conversation (hashed item by item)
    label: str  # the API as messages name it (Chat Completions)
    # Optional: ``count_paths``, the routes where harness serve counts a request's input
    # tokens, answered by ``render_count(tokens)`` (Anthropic's ``count_tokens``); and
    # ``render_model(name)`` / ``render_models(name)``, ``GET .../models/{id}`` and
    # ``GET .../models`` as the vendor's API answers them (else Chat Completions'); and
    # ``overloaded``, the status and message of its API's overloaded answer (else 503).

    def serves(self, path: str) -> bool:
        """Whether a request to ``path`` (any prefix) is a request of this API."""
        ...

    # -- requests ----------------------------------------------------------------------

    def items(self, body: dict[str, Any]) -> list[Any]:
        """The conversation items of a request body, as sent."""
        ...

    def previous(self, body: dict[str, Any]) -> str | None:
        """The earlier answer a request continues server-side (its id), if any."""
        ...

    def thread(self, body: dict[str, Any]) -> str | None:
        """The server-side conversation a request belongs to (its id), if any."""
        ...

    def model(self, body: dict[str, Any], path: str) -> str | None:
        """The model a request names (in its body, or in its ``path`` on some APIs)."""
        ...

    def held(self, body: dict[str, Any]) -> HeldTurn | None:
        """Whether the request asks the server to hold its conversation (and which held
        answer it continues); WireError 400 for a request the API would not thread."""
        ...

    def resumed(self, body: dict[str, Any], earlier: dict[str, Any]) -> dict[str, Any]:
        """The whole request a continuing ``body`` stands for: ``earlier`` (the held
        request, its reply appended) with the new messages and this request's options."""
        ...

    def messages(self, items: list[Any], names: dict[str, str] | None = None) -> list[Message]:
        """Conversation items as harness messages (items it cannot read are skipped)."""
        ...

    def instructions(self, body: dict[str, Any]) -> list[Message]:
        """System text a request gives beside its items, as messages."""
        ...

    def tool_results(self, items: list[Any], start: int = 0) -> dict[str, ToolResult]:
        """call id -> the tool result that ``items[start:]`` carry."""
        ...

    def with_call_ids(self, item: Any, rename: Callable[[str], str]) -> Any:
        """A conversation item with each tool call id in it (a call's, and a result's
        naming its call) given by ``rename``: a new object, or ``item`` when it has none."""
        ...

    def tools(self, tools: Any) -> list[ToolSpec]:
        """The tool definitions of a request (its ``tools`` value)."""
        ...

    def tool_offer(self, body: dict[str, Any]) -> ToolOffer:
        """What the request lets the model call."""
        ...

    def normalized(self, body: dict[str, Any]) -> tuple[Item, ...]:
        """The normalized conversation a request carries."""
        ...

    # -- answers -----------------------------------------------------------------------

    def read_reply(self, payload: Any, streamed: bool) -> WireReply | None:
        """The reply in an answer's JSON value or ``SSEBody``; None when it holds none."""
        ...

    def answer_items(self, answer: tuple[Any, bool] | None) -> tuple[str | None, list[Any]]:
        """An answer's id and its output as conversation items, for a server-side chain."""
        ...

    def held_answer(self, answer: tuple[Any, bool] | None) -> tuple[str | None, list[Any]]:
        """An answer's id and its reply as the items a held conversation gets."""
        ...

    def stream_reader(self) -> StreamReader:
        """A reader of one streamed answer's events (the JSON of each ``data:`` line)."""
        ...

    def client(self) -> ClientSide:
        """The wire as a client speaks it (the own loop's SDK sources)."""
        ...

    def read_error(self, status: int, payload: Any) -> WireError:
        """The error in an error answer's JSON value."""
        ...

    # -- serving -----------------------------------------------------------------------

    def served_request(self, body: dict[str, Any], known: int, path: str) -> ServedRequest:
        """Read a request to answer (``known``: the replies the script holds; ``path``:
        the URL's, which names the model on some APIs); raises WireError 400 for a body
        the API would refuse."""
        ...

    def streams(self, body: dict[str, Any], path: str) -> bool:
        """Whether the request asks for a streamed answer."""
        ...

    def render_reply(
        self, reply: ServedReply, body: dict[str, Any], asked: ServedRequest
    ) -> dict[str, Any]:
        """The whole answer's JSON."""
        ...

    def render_stream(
        self, reply: ServedReply, body: dict[str, Any], asked: ServedRequest
    ) -> Iterator[str]:
        """The streamed answer's server-sent events, each in its wire form."""
        ...

    def render_error(self, error: WireError) -> dict[str, Any]:
        """An error answer's JSON body."""
        ...
