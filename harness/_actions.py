"""What a planner can ask the loop to do, and how a run ends."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_serializer, model_validator

from harness._messages import Conversation, Message, ToolCall
from harness.events import EventList, JSONRecord, ToolCallStatus

__all__ = [
    "Action",
    "CompleteAction",
    "ConversationRun",
    "EmptyAction",
    "ExecuteToolsAction",
    "FinalData",
    "FinalResponse",
    "InvalidCall",
    "MakeLLMRequestAction",
    "ObservedStagnation",
    "RunData",
    "RunError",
    "RunFields",
    "RunResult",
    "SubRun",
    "Termination",
    "ToolAction",
    "ToolCallRecord",
    "WallClockSpan",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class EmptyAction(BaseModel):
    """Nothing to do: the run ends `empty`."""

    model_config = _FROZEN
    kind: Literal["empty"] = "empty"


class MakeLLMRequestAction(BaseModel):
    """Ask the model for the next reply; `options` go to the request (e.g. tool_choice)."""

    model_config = _FROZEN
    kind: Literal["llm_request"] = "llm_request"
    options: dict[str, Any] = Field(default_factory=dict)


class ExecuteToolsAction(BaseModel):
    """Run these tool calls as one plan (concurrently unless parallel_tools is false)."""

    model_config = _FROZEN
    kind: Literal["execute_tools"] = "execute_tools"
    tool_calls: list[ToolCall]


class ToolAction(BaseModel):
    """One tool call; a planner returns a list of them for a parallel set."""

    model_config = _FROZEN
    kind: Literal["tool"] = "tool"
    tool_call: ToolCall


class CompleteAction(BaseModel):
    """The run is complete with this content."""

    model_config = _FROZEN
    kind: Literal["complete"] = "complete"
    content: str | None = None


Action = EmptyAction | MakeLLMRequestAction | ExecuteToolsAction | ToolAction | CompleteAction


class _GivenKeys(JSONRecord):
    """A record whose JSON is exactly the keys it was given, in the order given: users
    match ``final.error`` and ``final.data`` in their scenario files, and a planner's
    ``FinalResponse(data={...})`` may add keys of its own (kept, after the typed ones)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    _keys: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _remember_keys(cls, data: Any, handler: Any) -> Any:
        record = handler(data)
        if isinstance(data, dict):
            record._keys = tuple(data)
        return record

    @model_serializer(mode="wrap")
    def _only_given(self, handler: Any) -> Any:
        data = handler(self)
        return {key: data[key] for key in self._keys if key in data}

    def merged(self, **keys: Any) -> Self:
        """A copy with these keys set (a new key goes last, as in a dict)."""
        given = {key: getattr(self, key) for key in self._keys}
        return type(self).model_validate({**given, **keys})


class InvalidCall(JSONRecord):
    """A call whose arguments failed validation (``final.error.errors``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    call_id: str
    tool: str
    errors: list[dict[str, Any]] = Field(default_factory=list)  # pydantic's error entries


class RunError(_GivenKeys):
    """``final.error``: what went wrong, when the run did not simply complete.

    ``type`` says what: ``max_iterations``, ``validation_error``, ``error`` (an exception in
    a planner, a hook, harness, or an external target), the LLM errors (``http_error``,
    ``timeout``, ``script_exhausted``, ``cassette_miss``, ``connection_error``,
    ``recording_refused``, ``llm_error``), an external target's ``timeout`` and
    ``stagnation`` refusal, or a termination a plugin classified a target's exception as.
    docs/results.md lists which keys each termination has.
    """

    type: str = "error"
    exception: str | None = None  # the exception's class name
    message: str = ""
    max_iterations: int | None = None
    errors: list[InvalidCall] = Field(default_factory=list)  # validation_error's calls
    exit_status: int | None = None  # a command target's
    stderr: str | None = None  # the tail of a command target's stderr
    status: int | None = None  # the HTTP status of an LLM error
    where: str | None = None  # where a target's own code raised: path:line in function
    tool: str | None = None  # tool_error: the tool whose call failed
    server: str | None = None  # tool_error: its MCP server (the tools: entry)


class ObservedStagnation(JSONRecord):
    """The first repeated plan of an external target (``final.data.stagnation_observed``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    iteration: int
    signature: Any
    window: int


class FinalData(_GivenKeys):
    """``final.data``: what harness adds to how the run ended, and a planner's own keys.

    Stagnation (``stagnation``, ``signature`` or ``detector``, ``window``), a budget
    (``budget``, ``limit``, ``used``), an output tool (``output_tool``, ``output``), a
    target's observed stagnation (``stagnation_observed``), a reply cut by its length
    (``truncated``). docs/results.md lists which keys each termination has.
    """

    stagnation: bool | None = None
    detector: str | None = None  # the stuck detector that stopped the run
    signature: Any = None  # the repeated plan's signature (the seed's repeat)
    # The seed's window size, or a detector's window: [{iteration, ...}, ...].
    window: int | list[dict[str, Any]] | None = None
    budget: str | None = None  # tokens | cost | tool_calls | sim_time
    limit: int | float | None = None
    used: int | float | None = None
    output_tool: str | None = None
    output: Any = None  # the output tool call's arguments
    stagnation_observed: ObservedStagnation | None = None
    truncated: bool = False


class FinalResponse(BaseModel):
    """The structured end of every run."""

    model_config = ConfigDict(extra="forbid")
    operation: str = "display_message"
    content: str | None = None
    data: FinalData = Field(default_factory=FinalData)
    error: RunError | None = None


class Termination(StrEnum):
    """Why a run ended."""

    completed = "completed"
    empty = "empty"
    max_iterations = "max_iterations"
    stagnation = "stagnation"
    validation_error = "validation_error"
    llm_error = "llm_error"
    error = "error"
    budget = "budget"
    # A tool's server failed as a transport (an MCP server that crashed, answered what is
    # not MCP or hung past its timeout; a call its recording does not hold): the tools'
    # llm_error (docs/mcp.md).
    tool_error = "tool_error"


class ToolCallRecord(BaseModel):
    """What happened to one requested tool call."""

    model_config = ConfigDict(extra="forbid")
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    is_error: bool = False
    status: ToolCallStatus = "ok"
    iteration: int
    group: int
    sim_start: float = 0.0
    sim_end: float = 0.0
    # The run a sub-agent tool (harness.AgentTool) made for this call; absent from the
    # JSON of every other call, so results without sub-agents read as before.
    sub_run: SubRun | None = Field(default=None, exclude_if=lambda value: value is None)


class RunFields(BaseModel):
    """What a run produced, as results keep it, defined once: ``RunData`` adds the wall
    time, ``SubRun`` keeps it on the tool call of a sub-agent (without wall time, so that
    results stay reproducible)."""

    model_config = ConfigDict(extra="forbid")
    termination: Termination
    iterations: int = 0
    llm_calls: int = 0
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    # The executed plans of two or more calls, in order, each with its calls' tool names
    # in the model's order (plans stopped by stagnation or validation are not included).
    parallel_groups: list[list[str]] = Field(default_factory=list)
    final: FinalResponse = Field(default_factory=FinalResponse)
    events: EventList = Field(default_factory=list)
    memory: list[dict[str, Any]] = Field(default_factory=list)
    usage: dict[str, int] = Field(default_factory=dict)
    sim_time: float = 0.0


class _SubAgent(BaseModel):
    """Which sub-agent a sub-run is of (first in its JSON)."""

    model_config = ConfigDict(extra="forbid")
    agent: str  # the name of the tool that ran it
    depth: int = 1  # 1 for a sub-run of a top-level run, 2 below that, ...


class SubRun(RunFields, _SubAgent):
    """A sub-agent's run, kept on the tool call that made it (``ToolCallRecord.sub_run``).

    The run's data (RunFields), with the sub-run's conversation (``transcript``) for the
    report's nested timeline. Its own tool calls may hold sub-runs in turn.
    """

    model_config = ConfigDict(extra="forbid")
    transcript: list[Message] = Field(default_factory=list)


ToolCallRecord.model_rebuild()


class _ConversationName(BaseModel):
    """Which conversation a target held with the model (first in its JSON)."""

    model_config = ConfigDict(extra="forbid")
    # `main` (answered from llm.script), else its llm.conversations entry's name.
    conversation: str
    number: int  # 1 for the first conversation the run started, 2 for the next, ...
    calls: list[int] = Field(default_factory=list)  # the run's call numbers, in order


class ConversationRun(RunFields, _ConversationName):
    """One of a target's conversations with the model (docs/external.md#several-
    conversations): the run's data for its calls alone, as a sub-run keeps a sub-agent's,
    with its conversation as ``transcript``."""

    model_config = ConfigDict(extra="forbid")
    transcript: list[Message] = Field(default_factory=list)


class WallClockSpan(BaseModel):
    """An external target's model call on the wall clock: seconds since its run started,
    to the millisecond (docs/results.md#wall-clock)."""

    model_config = ConfigDict(extra="forbid")
    call: int
    start: float
    end: float  # when its answer was sent (or the client gave up); its start if never


class RunData(RunFields):
    """What a run produced, as results keep it: everything but the live conversation.

    ``RunResult`` adds the conversation; a scenario's result (harness._results) adds its
    identity, the checked expectations and the transcript.
    """

    wall_time: float = 0.0
    # An external target's model calls on the wall clock (its run is real time: its events
    # carry no simulated time). Like wall_time, it differs from run to run: the baseline,
    # the diff and determinism checks leave it out. Absent from the JSON of other runs.
    wall_clock: list[WallClockSpan] = Field(
        default_factory=list, exclude_if=lambda value: not value
    )
    # A target's conversations when it held more than one; absent from the JSON otherwise.
    conversations: list[ConversationRun] = Field(
        default_factory=list, exclude_if=lambda value: not value
    )


class RunResult(RunData):
    """Everything a run produced: its data and the conversation it ended with."""

    conversation: Conversation = Field(default_factory=Conversation)
