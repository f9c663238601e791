"""Messages, tool calls and the Conversation, in a form that maps 1:1 onto OpenAI's."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from harness._errors import HarnessError, describe, format_errors
from harness._files import atomic_write
from harness._modeljson import dump_json

__all__ = [
    "AssistantMessage",
    "Conversation",
    "Message",
    "MessageItemError",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "UserMessage",
    "clean_data",
    "clean_reply",
    "clean_text",
    "client_ids_named",
    "messages_from_openai",
    "parse_arguments",
    "text_of",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class ToolCall(BaseModel):
    """One tool call requested by the model."""

    model_config = _FROZEN

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    # Kept only when the model sent arguments that are not a JSON object, so the
    # exact text can be reported and sent back.
    raw_arguments: str | None = None
    # The model's own text of valid arguments ('{"city":"Paris"}'): sent back exactly as
    # it came, as the SDKs do, so a request matches what a recording holds. Never
    # serialized: results and saved conversations keep the parsed arguments. (A plain
    # field: a private attribute tripled the cost of making a call, paid every round.)
    arguments_text: str | None = Field(default=None, exclude=True, repr=False)

    @classmethod
    def from_text(cls, id: str, name: str, text: str | None) -> ToolCall:
        """A call whose arguments arrive as the model's text (kept, to be sent back as is)."""
        arguments, raw = parse_arguments(text)
        kept = text if raw is None and text else None
        return cls(id=id, name=name, arguments=arguments, raw_arguments=raw, arguments_text=kept)

    def __eq__(self, other: object) -> bool:
        # The same call whatever the spacing of its arguments' text: compared by fields.
        if not isinstance(other, ToolCall):
            return NotImplemented
        return (self.id, self.name, self.arguments, self.raw_arguments) == (
            other.id,
            other.name,
            other.arguments,
            other.raw_arguments,
        )

    __hash__ = None  # type: ignore[assignment]  # arguments are a dict: never hashable

    def arguments_json(self) -> str:
        """The arguments as the model sent them, else as JSON."""
        if self.raw_arguments is not None:
            return self.raw_arguments
        if self.arguments_text is not None:
            return self.arguments_text
        return json.dumps(self.arguments, ensure_ascii=False)


class SystemMessage(BaseModel):
    """A system prompt."""

    model_config = _FROZEN
    role: Literal["system"] = "system"
    content: str


class UserMessage(BaseModel):
    """A user turn."""

    model_config = _FROZEN
    role: Literal["user"] = "user"
    content: str


class AssistantMessage(BaseModel):
    """A model reply: text, tool calls, or both."""

    model_config = _FROZEN
    role: Literal["assistant"] = "assistant"
    content: str | None = None
    tool_calls: list[ToolCall] = Field(default_factory=list)
    finish_reason: str | None = None
    # Responses API reasoning items, sent back verbatim on the next request as
    # reasoning models require for multi-round tool use. Chat Completions ignores them.
    reasoning: list[dict[str, Any]] = Field(default_factory=list)


class ToolMessage(BaseModel):
    """The result of one tool call, as sent back to the model."""

    model_config = _FROZEN
    role: Literal["tool"] = "tool"
    tool_call_id: str
    name: str
    content: str
    is_error: bool = False


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]


def to_openai_message(message: Message) -> dict[str, Any]:
    """The Chat Completions form of one message."""
    if isinstance(message, AssistantMessage):
        out: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments_json()},
                }
                for call in message.tool_calls
            ]
        return out
    if isinstance(message, ToolMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    return {"role": message.role, "content": message.content}


class Conversation(BaseModel):
    """The messages of a run, in order, with their OpenAI form cached as they are appended."""

    # json.loads accepts NaN and Infinity in a model's arguments: save them as such so
    # that a saved conversation loads back exactly (not as null).
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")

    messages: list[Message] = Field(default_factory=list)
    # Each message's OpenAI form, built once when it is appended: building a request
    # must not re-serialize the whole history every round.
    # (Built lazily: a default_factory private attribute costs pydantic an
    # inspect.signature() call per instance.)
    _openai: list[dict[str, Any]] | None = PrivateAttr(default=None)
    # The list the cache was built from: assigning a new ``messages`` list drops the cache.
    _openai_of: list[Any] | None = PrivateAttr(default=None)

    def __eq__(self, other: object) -> bool:
        # The cache is derived data: equal messages make equal conversations, so a
        # conversation that was sent compares equal to its saved-and-loaded copy.
        if not isinstance(other, Conversation):
            return NotImplemented
        return self.messages == other.messages

    __hash__ = None  # type: ignore[assignment]  # mutable

    def append(self, message: Message) -> None:
        """Add a message at the end."""
        self.messages.append(message)

    def extend(self, messages: list[Message]) -> None:
        """Add several messages at the end."""
        self.messages.extend(messages)

    def openai_messages(self) -> list[dict[str, Any]]:
        """The cached OpenAI forms (shared: do not mutate). Only new messages are converted."""
        cache = self._openai
        messages = self.messages
        if cache is None or self._openai_of is not messages or len(cache) > len(messages):
            # First use, or the list was replaced or truncated by hand: convert again
            # from the start.
            cache = self._openai = []
            self._openai_of = messages
        for message in messages[len(cache) :]:
            cache.append(to_openai_message(message))
        return cache

    def to_openai(self) -> list[dict[str, Any]]:
        """Chat Completions `messages` for this conversation (a new list)."""
        return list(self.openai_messages())

    def save(self, path: str | Path, format: Literal["harness", "openai"] = "harness") -> None:
        """Write the conversation as JSON.

        ``harness`` (default): every field (``is_error`` included), so `load` gives it back
        exactly. ``openai``: the plain list of Chat Completions messages the API takes
        (tool calls' arguments as the model wrote them).
        """
        writers = {
            "harness": lambda: dump_json(self, indent=2),
            "openai": lambda: json.dumps(self.to_openai(), indent=2, ensure_ascii=False),
        }
        writer = writers.get(format)
        if writer is None:
            raise HarnessError(
                f"Conversation.save: format is 'harness' or 'openai', got {format!r}"
            )
        text = writer()
        # Through a temporary file and a rename: a save cut short (a full disk) leaves the
        # previous file whole.
        atomic_write(path, text + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Conversation:
        """Read a saved conversation: a plain list of OpenAI messages, or harness's form.

        Anything else is a HarnessError that names the file and what is wrong.
        """
        where = str(path)
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise HarnessError(f"{where}: cannot read the conversation: {exc}") from None
        except ValueError as exc:
            raise HarnessError(f"{where}: not JSON: {exc}") from None
        if isinstance(data, list):
            try:
                return cls(messages=messages_from_openai(data))
            except MessageItemError as exc:
                raise HarnessError(f"{where}: {exc}") from None
        if isinstance(data, dict) and isinstance(data.get("messages"), list):
            try:
                return cls.model_validate(data)
            except ValidationError as exc:
                detail = format_errors(exc.errors(include_url=False))
                raise HarnessError(f"{where}: not a saved conversation: {detail}") from None
        raise HarnessError(
            f"{where}: not a conversation: expected a list of OpenAI messages "
            '([{"role": "user", "content": "hi"}, ...]) or a file written by '
            f'Conversation.save ({{"messages": [...]}}), got {describe(data)}'
        )

    @classmethod
    def from_openai(cls, messages: list[dict[str, Any]]) -> Conversation:
        """Build a conversation from Chat Completions `messages` (a saved OpenAI history)."""
        return cls(messages=messages_from_openai(messages))

    def __len__(self) -> int:
        return len(self.messages)


def parse_arguments(text: str | None) -> tuple[dict[str, Any], str | None]:
    """Arguments text from a model -> (arguments, raw_arguments kept when not a JSON object).

    The one reading of a model's arguments, for recorded, live and scripted replies alike.
    An empty text means no arguments: streamed replies send "" for a tool without
    parameters.
    """
    if text is None or text == "":
        return {}, None
    try:
        value = json.loads(text)
    except ValueError:
        return {}, text
    if not isinstance(value, dict):
        return {}, text
    return value, None


# -- text that cannot be saved -------------------------------------------------------------
# A lone surrogate ("\ud800": a filename read with surrogateescape, a model's JSON escape,
# which json.loads accepts) is a valid Python str but not UTF-8: saving a conversation or
# dumping a RunResult would fail. Text entering messages from tools and models is cleaned
# where it enters; ASCII and ordinary Unicode text take the fast path unchanged.


def _encodable(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def clean_text(text: str) -> str:
    """The text with each lone surrogate replaced by U+FFFD (the same object when it has none)."""
    if _encodable(text):
        return text
    # UTF-16 with surrogatepass joins halves of a split pair into their character and
    # turns each lone half into one U+FFFD.
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _dirty(value: Any) -> bool:
    if isinstance(value, str):
        return not _encodable(value)
    if isinstance(value, dict):
        return any(_dirty(k) or _dirty(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_dirty(v) for v in value)
    return False


def _cleaned(value: Any) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {_cleaned(k): _cleaned(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_cleaned(v) for v in value]
    return value


def clean_data(value: Any) -> Any:
    """JSON-like data with clean_text applied to every string, keys included (the same
    object when nothing needs it)."""
    return _cleaned(value) if _dirty(value) else value


def _clean_call(call: ToolCall) -> ToolCall:
    if not (
        _dirty(call.id)
        or _dirty(call.name)
        or _dirty(call.arguments)
        or (call.raw_arguments is not None and _dirty(call.raw_arguments))
    ):
        return call
    return call.model_copy(
        update={
            "id": clean_text(call.id),
            "name": clean_text(call.name),
            "arguments": clean_data(call.arguments),
            "raw_arguments": None if call.raw_arguments is None else clean_text(call.raw_arguments),
        }
    )


def clean_reply(message: AssistantMessage) -> AssistantMessage:
    """A model reply whose text can be saved (the same object when it already can)."""
    update: dict[str, Any] = {}
    if message.content is not None and _dirty(message.content):
        update["content"] = clean_text(message.content)
    calls = [_clean_call(call) for call in message.tool_calls]
    if any(new is not old for new, old in zip(calls, message.tool_calls, strict=True)):
        update["tool_calls"] = calls
    if message.reasoning and _dirty(message.reasoning):
        update["reasoning"] = _cleaned(message.reasoning)
    return message.model_copy(update=update) if update else message


def message_from_openai(data: dict[str, Any]) -> Message:
    """One Chat Completions message dict -> a harness message."""
    role = data.get("role")
    if role == "assistant":
        calls = []
        for call in data.get("tool_calls") or []:
            fn = (call.get("function") or {}) if isinstance(call, dict) else None
            if not isinstance(fn, dict):
                raise ValueError(
                    "each tool_calls entry must be {id, type: function, function: {name, "
                    f"arguments}}, got {call!r}"
                )
            text = fn.get("arguments")
            calls.append(
                ToolCall.from_text(
                    call.get("id", ""),
                    fn.get("name", ""),
                    text if isinstance(text, str) or text is None else json.dumps(text),
                )
            )
        return AssistantMessage(content=_text(data.get("content")), tool_calls=calls)
    if role == "tool":
        return ToolMessage(
            tool_call_id=data.get("tool_call_id", ""),
            name=data.get("name", ""),
            content=_text(data.get("content")) or "",
        )
    if role in ("system", "developer"):
        return SystemMessage(content=_text(data.get("content")) or "")
    if role == "user":
        return UserMessage(content=_text(data.get("content")) or "")
    raise ValueError(f"unknown message role {role!r} (expected system, user, assistant or tool)")


class MessageItemError(ValueError):
    """Item ``index`` of a list of messages is not a message; ``problem`` says why."""

    def __init__(self, index: int, problem: str) -> None:
        super().__init__(f"item {index} is {problem}")
        self.index = index
        self.problem = problem


def messages_from_openai(items: Iterable[Any]) -> list[Message]:
    """OpenAI message dicts -> harness messages (harness messages are kept as they are).

    The first item that is neither raises MessageItemError naming it, with pydantic's
    errors as one line (no documentation URLs).
    """
    messages: list[Message] = []
    for index, item in enumerate(items):
        if isinstance(item, SystemMessage | UserMessage | AssistantMessage | ToolMessage):
            messages.append(item)
            continue
        if not isinstance(item, dict):
            raise MessageItemError(
                index,
                f"{describe(item)}; expected a harness message or an OpenAI message dict like "
                "{'role': 'user', 'content': 'hi'}",
            )
        try:
            messages.append(message_from_openai(item))
        except ValidationError as exc:  # before ValueError: it is one
            detail = format_errors(exc.errors(include_url=False))
            raise MessageItemError(index, f"not an OpenAI message: {detail}") from None
        except (ValueError, TypeError, AttributeError) as exc:
            raise MessageItemError(index, f"not an OpenAI message: {exc}") from None
    return messages


def _text(content: Any) -> str | None:
    """OpenAI content may be a list of parts; keep the text."""
    if content is None or isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def text_of(content: Any) -> str | None:
    """The text of an OpenAI message's content: a string, or a list of text parts (other
    values as JSON)."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text") or part.get("refusal") or "")
            for part in content
            if isinstance(part, dict)
        )
    return json.dumps(content, ensure_ascii=False)


def client_ids_named(messages: list[Message], made: set[str]) -> list[Message]:
    """``messages`` as results write them: the ids of calls the model did not make (not
    in ``made``: a framework adds a call and its result to its history,
    langgraph-supervisor's ``transfer_back_to_supervisor`` under a new uuid4 each run)
    named ``client_1``, ``client_2``... by first appearance, and the results of a reply's
    calls in the order of its calls (a client running them concurrently sends them in
    the order they finished), so the same run is written the same
    (docs/external.md#what-is-observed)."""
    names: dict[str, str] = {}

    def named(call_id: str) -> str:
        if call_id in made or not call_id:
            return call_id
        return names.setdefault(call_id, f"client_{len(names) + 1}")

    out: list[Message] = []
    order: dict[str, int] = {}  # the last reply's call ids -> their place
    for message in [*messages, None]:
        if not isinstance(message, ToolMessage):
            _in_call_order(out, order)
        if message is None:
            break
        if isinstance(message, AssistantMessage) and message.tool_calls:
            calls = [c.model_copy(update={"id": named(c.id)}) for c in message.tool_calls]
            order = {c.id: n for n, c in enumerate(calls)}
            message = message.model_copy(update={"tool_calls": calls})
        elif isinstance(message, ToolMessage):
            message = message.model_copy(update={"tool_call_id": named(message.tool_call_id)})
        out.append(message)
    return out


def _in_call_order(out: list[Message], order: dict[str, int]) -> None:
    """The tool messages at the end of ``out`` sorted by their calls' places in ``order``,
    when each answers one of those calls."""
    end = len(out)
    start = end
    while start > 0 and isinstance(out[start - 1], ToolMessage):
        start -= 1
    results = [m for m in out[start:end] if isinstance(m, ToolMessage)]
    places = [order.get(m.tool_call_id) for m in results]
    if len(results) > 1 and None not in places:
        out[start:end] = [m for _, m in sorted(zip(places, results, strict=True), key=_first)]


def _first(pair: tuple[Any, Any]) -> Any:
    return pair[0]
