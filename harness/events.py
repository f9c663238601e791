"""The run's events: one pydantic dataclass per kind, the discriminated union ``Event``
that ``RunResult.events`` holds, and how run records read as the mappings they were.

Each event is what results.json keeps of a moment of the run: its ``event`` name, the
``iteration`` it happened in, and the fields of its kind (docs/results.md lists them: the
contract users and the report read). No event holds a wall-clock value, so two runs of the
same inputs record the same events. Readers match on the types (``isinstance(event,
LLMResponseEvent)``); an event of none of harness's kinds (a plugin's own, or one a person
edited in a results file until it no longer reads as its kind) is an ``OtherEvent`` that
keeps its keys as they were.

The kinds are pydantic dataclasses rather than models: a run makes several events a
round, and a model instance costs three objects where a dataclass's costs two; the loop
makes its per-round events with ``of`` (no second validation). docs/performance.md has
the figures.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, TypeAdapter, WrapValidator
from pydantic.dataclasses import dataclass

__all__ = [
    "BUILTIN_EVENTS",
    "ActionExecutedEvent",
    "AgentEndEvent",
    "AgentStartEvent",
    "Event",
    "EventList",
    "IterationStartEvent",
    "JSONMapping",
    "JSONRecord",
    "LLMFailedEvent",
    "LLMRequestEvent",
    "LLMResponseEvent",
    "MCPCallEvent",
    "MCPListChangedEvent",
    "OtherEvent",
    "StagnationObservedEvent",
    "ToolCallStatus",
    "event_of",
]

ToolCallStatus = Literal["ok", "error", "invalid", "unknown_tool", "not_run"]


class JSONMapping:
    """Reads a record as the mapping of its JSON keys: ``record["call"]``,
    ``record.get("sim")``, ``"output" in record``, ``record == {...}``, ``dict(record)``.

    Events, ``final.error`` and ``final.data`` were plain dicts before they were typed;
    code written against them (a plugin reading ``run.events``, a test comparing
    ``final.data`` with a dict) reads them as before. Values read this way are plain data
    (nested records as dicts); the attributes are typed.
    """

    __slots__ = ()

    def _mapping(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self._mapping()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """The value of JSON key ``key``, or ``default`` when the record has no such key."""
        return self._mapping().get(key, default)

    def keys(self) -> Any:
        """The JSON keys, in the order results.json writes them."""
        return self._mapping().keys()

    def values(self) -> Any:
        """The values of the JSON keys, as plain data."""
        return self._mapping().values()

    def items(self) -> Any:
        """(key, value) of each JSON key, as plain data."""
        return self._mapping().items()

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self._mapping())

    def __contains__(self, key: object) -> bool:
        return key in self._mapping()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JSONMapping):
            return type(self) is type(other) and self._mapping() == other._mapping()
        if isinstance(other, dict):
            return self._mapping() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to dicts, which are unhashable


class JSONRecord(JSONMapping, BaseModel):
    """A pydantic model that reads as the mapping of its JSON keys (``JSONMapping``)."""

    def _mapping(self) -> dict[str, Any]:
        return self.model_dump()

    def __iter__(self) -> Iterator[str]:  # type: ignore[override]  # keys, like a mapping
        return iter(self._mapping())


# -- the kinds ----------------------------------------------------------------------------

_KIND = ConfigDict(extra="forbid")
_E = TypeVar("_E", bound="_Event")
_new = object.__new__
_set = object.__setattr__
_adapters: dict[type, TypeAdapter[Any]] = {}


def _made(cls: type[_E], values: dict[str, Any]) -> _E:
    """The event of kind ``cls`` with these values (every field), not validated again.

    For the loop's per-round events (each kind's ``of``): the values are typed already,
    and validating them a second time cost the loop more than the rest of its bookkeeping
    (docs/performance.md). tests/test_run_record.py checks that each ``of`` makes what the
    validating constructor makes.
    """
    event = _new(cls)
    _set(event, "__dict__", values)
    return event


def _absent(value: Any) -> bool:
    return value is None


@dataclass(kw_only=True, eq=False, frozen=True, config=_KIND)
class _Event(JSONMapping):
    # Declared here so that every kind's JSON starts {"event": ..., "iteration": ...}.
    event: str
    iteration: int

    def _mapping(self) -> dict[str, Any]:
        kind = type(self)
        adapter = _adapters.get(kind)
        if adapter is None:
            adapter = _adapters[kind] = TypeAdapter(kind)
        return adapter.dump_python(self)


@dataclass(kw_only=True, eq=False, frozen=True, config=_KIND)
class AgentStartEvent(_Event):
    """The run started (``harness_agent_start``)."""

    event: Literal["agent_start"] = "agent_start"


@dataclass(kw_only=True, eq=False, frozen=True, config=_KIND)
class IterationStartEvent(_Event):
    """An iteration started (``harness_iteration_start``)."""

    event: Literal["iteration_start"] = "iteration_start"

    @classmethod
    def of(cls, iteration: int) -> IterationStartEvent:
        """``IterationStartEvent(iteration=...)``, not validated again (``_made``)."""
        return _made(cls, {"event": "iteration_start", "iteration": iteration})


@dataclass(kw_only=True, eq=False, frozen=True, config=_KIND)
class LLMRequestEvent(_Event):
    """A request to the model was sent (``harness_llm_request``)."""

    event: Literal["llm_request"] = "llm_request"
    call: int
    # The run's simulated clock when it was sent (null in a hand-made results file).
    sim: float | None = None
    # Only when the request set one ("none": the forced final answer at the limit).
    tool_choice: Any = Field(default=None, exclude_if=_absent)
    # The model the request named, when it named one (an observed target's request).
    model: str | None = Field(default=None, exclude_if=_absent)

    @classmethod
    def of(
        cls,
        iteration: int,
        call: int,
        sim: float | None,
        tool_choice: Any = None,
        model: str | None = None,
    ) -> LLMRequestEvent:
        """``LLMRequestEvent(...)``, not validated again (``_made``)."""
        values = {"event": "llm_request", "iteration": iteration, "call": call, "sim": sim}
        values["tool_choice"] = tool_choice
        values["model"] = model
        return _made(cls, values)


@dataclass(kw_only=True, eq=False, frozen=True, config=_KIND)
class LLMResponseEvent(_Event):
    """The model's reply arrived and is in the conversation (``harness_llm_response``)."""

    event: Literal["llm_response"] = "llm_response"
    call: int
    tool_calls: list[str] = Field(default_factory=list)  # the names, in the model's order
    finish_reason: str | None = None
    sim: float | None = None
    # The reply's token usage, under Chat Completions' names, when the source gave one
    # (absent from the JSON otherwise, so results without it read as before).
    usage: dict[str, int] | None = Field(default=None, exclude_if=_absent)

    @classmethod
    def of(
        cls,
        iteration: int,
        call: int,
        tool_calls: list[str],
        finish_reason: str | None,
        sim: float | None,
        usage: dict[str, int] | None = None,
    ) -> LLMResponseEvent:
        """``LLMResponseEvent(...)``, not validated again (``_made``)."""
        values = {"event": "llm_response", "iteration": iteration, "call": call}
        values.update(tool_calls=tool_calls, finish_reason=finish_reason, sim=sim, usage=usage)
        return _made(cls, values)


@dataclass(kw_only=True, eq=False, frozen=True, config=_KIND)
class LLMFailedEvent(_Event):
    """A request got an error answer: an external target's (its SDK may have retried it),
    or one the own loop retries (``agent.llm_retries``)."""

    event: Literal["llm_failed"] = "llm_failed"
    call: int
    type: str
    message: str
    status: int | None = None
    sim: float | None = None

    @classmethod
    def of(cls, iteration: int, call: int, error: Any, sim: float | None) -> LLMFailedEvent:
        """The event of an LLMError the own loop retries (``agent.llm_retries``)."""
        values = {"event": "llm_failed", "iteration": iteration, "call": call}
        values.update(type=error.type, message=error.message, status=error.status, sim=sim)
        return _made(cls, values)


@dataclass(kw_only=True, eq=False, frozen=True, config=_KIND)
class ActionExecutedEvent(_Event):
    """A call of a plan was answered: it ran, or got an error message (``invalid``,
    ``unknown_tool``) (``harness_action_executed``)."""

    event: Literal["action_executed"] = "action_executed"
    tool: str
    call_id: str
    status: ToolCallStatus
    group: int

    @classmethod
    def of(
        cls, iteration: int, tool: str, call_id: str, status: ToolCallStatus, group: int
    ) -> ActionExecutedEvent:
        """``ActionExecutedEvent(...)``, not validated again (``_made``)."""
        values = {"event": "action_executed", "iteration": iteration, "tool": tool}
        values.update(call_id=call_id, status=status, group=group)
        return _made(cls, values)


@dataclass(kw_only=True, eq=False, frozen=True, config=_KIND)
class StagnationObservedEvent(_Event):
    """An external target repeated a tool plan (``target.on_stagnation``)."""

    event: Literal["stagnation_observed"] = "stagnation_observed"
    signature: Any
    window: int


@dataclass(kw_only=True, eq=False, frozen=True, config=_KIND)
class MCPCallEvent(_Event):
    """A tool call seen on the MCP wire (docs/mcp.md): served by harness to a target, or
    made by harness's own loop to an MCP server. ``call_id`` is the model's tool call it
    was joined to (null when none asked for it); ``code`` the JSON-RPC error's code when
    the answer was one."""

    event: Literal["mcp_call"] = "mcp_call"
    tool: str
    call_id: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    status: ToolCallStatus = "ok"
    is_error: bool = False
    code: int | None = Field(default=None, exclude_if=_absent)
    sim: float | None = None


@dataclass(kw_only=True, eq=False, frozen=True, config=_KIND)
class MCPListChangedEvent(_Event):
    """An MCP server's tool list changed mid-run (``notifications/tools/list_changed``):
    sent by harness's server to a target, or received by harness's own loop."""

    event: Literal["mcp_list_changed"] = "mcp_list_changed"
    server: str | None = None
    tools: list[str] = Field(default_factory=list)  # the names after the change


@dataclass(kw_only=True, eq=False, frozen=True, config=_KIND)
class AgentEndEvent(_Event):
    """The run ended (``harness_agent_end``)."""

    event: Literal["agent_end"] = "agent_end"
    # A harness._actions.Termination value (that module builds on this one).
    termination: str


class OtherEvent(JSONRecord):
    """An event of none of harness's kinds, its keys kept as given: a plugin's own
    (``run.emit("cache_hit", key=k)``), or one edited in a results file until it no
    longer reads as its kind (the report skips it instead of failing)."""

    model_config = ConfigDict(extra="allow", frozen=True)


_KINDS = (
    AgentStartEvent,
    IterationStartEvent,
    LLMRequestEvent,
    LLMResponseEvent,
    LLMFailedEvent,
    ActionExecutedEvent,
    StagnationObservedEvent,
    MCPCallEvent,
    MCPListChangedEvent,
    AgentEndEvent,
)
_Builtin = Annotated[
    AgentStartEvent
    | IterationStartEvent
    | LLMRequestEvent
    | LLMResponseEvent
    | LLMFailedEvent
    | ActionExecutedEvent
    | StagnationObservedEvent
    | MCPCallEvent
    | MCPListChangedEvent
    | AgentEndEvent,
    Field(discriminator="event"),
]

# What RunResult.events holds: harness's kinds by their ``event`` name, else OtherEvent.
Event = Annotated[_Builtin | OtherEvent, Field(union_mode="left_to_right")]

BUILTIN_EVENTS = frozenset(kind.__dataclass_fields__["event"].default for kind in _KINDS)

_BUILTIN: TypeAdapter[Any] = TypeAdapter(_Builtin, config=ConfigDict(defer_build=True))
_EVENT_TYPES = (_Event, OtherEvent)


def event_of(data: dict[str, Any]) -> Event:
    """The event a mapping describes: its kind's when ``event`` names one of harness's
    (its fields must fit: ValidationError otherwise), else an OtherEvent."""
    if data.get("event") in BUILTIN_EVENTS:
        return _BUILTIN.validate_python(data)
    return OtherEvent(**data)


def _kept_or_read(value: Any, handler: Any) -> Any:
    """The events of a run as they are (a type check each: a run's result is built every
    run, and the loop made them typed already); anything else (a results file's JSON)
    is read kind by kind."""
    if type(value) is list and all(isinstance(event, _EVENT_TYPES) for event in value):
        return list(value)
    return handler(value)


# RunResult.events: each event serialized by its own kind's serializer (the union's would
# try the kinds one by one).
EventList = Annotated[list[SerializeAsAny[Event]], WrapValidator(_kept_or_read)]
