"""What a planner can ask the loop to do, and how a run ends."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.messages import Conversation, Message, ToolCall

__all__ = [
    "Action",
    "CompleteAction",
    "EmptyAction",
    "ExecuteToolsAction",
    "FinalResponse",
    "MakeLLMRequestAction",
    "RunData",
    "RunFields",
    "RunResult",
    "SubRun",
    "Termination",
    "ToolAction",
    "ToolCallRecord",
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


class FinalResponse(BaseModel):
    """The structured end of every run."""

    model_config = ConfigDict(extra="forbid")
    operation: str = "display_message"
    content: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    error: dict[str, Any] | None = None


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


ToolCallStatus = Literal["ok", "error", "invalid", "unknown_tool", "not_run"]


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
    events: list[dict[str, Any]] = Field(default_factory=list)
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


class RunData(RunFields):
    """What a run produced, as results keep it: everything but the live conversation.

    ``RunResult`` adds the conversation; a scenario's result (harness.results) adds its
    identity, the checked expectations and the transcript.
    """

    wall_time: float = 0.0


class RunResult(RunData):
    """Everything a run produced: its data and the conversation it ended with."""

    conversation: Conversation = Field(default_factory=Conversation)
