"""``Run``: the live state of one run, handed to planners and to every hook.

It is the one path to the model (``call_llm``) and keeps what the results are built
from: the conversation, tool-call records, events, memory, usage and the simulated
clock. Per-round work is constant in the length of the run.
"""

from __future__ import annotations

import logging
import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness import simclock
from harness.actions import FinalResponse, RunResult, Termination, ToolCallRecord
from harness.config import AgentConfig
from harness.errors import AbortRun
from harness.llm.base import LLM, LLMRequest, LLMResponse
from harness.messages import AssistantMessage, Conversation, ToolCall, ToolMessage, clean_reply
from harness.streaming import stream_reply

if TYPE_CHECKING:
    from harness.plugins import Plugins
    from harness.streaming import EventSink
    from harness.tools import Tool

__all__ = [
    "Run",
    "RunStopped",
    "answer_calls",
    "answer_unanswered",
    "current_run",
    "pending_calls",
]

log = logging.getLogger("harness")

# The run whose loop is executing (set by harness.loop for the run's duration): a tool
# that keeps state per run (a remote agent's session, say) finds its run here, since a
# tool is called with its arguments only, and a run started inside it (a sub-agent's)
# is its child. Context variables follow the run into the
# tasks and threads of a parallel plan.
_current: ContextVar[Run | None] = ContextVar("harness_current_run", default=None)


def current_run() -> Run | None:
    """The run being executed in this context (None outside any run)."""
    return _current.get()


def enter_run(run: Run) -> Any:
    """Make ``run`` the current run; returns the token ``leave_run`` takes."""
    return _current.set(run)


def leave_run(token: Any) -> None:
    """Restore the current run that was set before ``enter_run``."""
    _current.reset(token)


@dataclass(frozen=True)
class _Observed:
    """Which per-round hooks have implementations in this run's plugin manager."""

    iteration_start: bool
    llm_request: bool
    llm_response: bool
    action_executed: bool


def _observed_hooks(hook: Any) -> _Observed:
    def implemented(name: str) -> bool:
        return bool(getattr(hook, name).get_hookimpls())

    return _Observed(
        iteration_start=implemented("harness_iteration_start"),
        llm_request=implemented("harness_llm_request"),
        llm_response=implemented("harness_llm_response"),
        action_executed=implemented("harness_action_executed"),
    )


class RunStopped(Exception):  # control flow inside the loop only
    """Ends the iteration loop with a termination and a final response."""

    def __init__(self, termination: Termination, final: FinalResponse) -> None:
        self.termination = termination
        self.final = final


class Run:
    """The live state of one run, handed to planners and to every hook."""

    def __init__(
        self,
        *,
        conversation: Conversation,
        tools: dict[str, Tool],
        config: AgentConfig,
        llm: LLM,
        plugins: Plugins,
        sink: EventSink | None = None,
    ) -> None:
        self.conversation = conversation
        self.tools = tools
        self.config = config
        # A run started inside another run (a sub-agent's, from a tool call) is its child.
        self.parent: Run | None = _current.get()
        self.depth = 0 if self.parent is None else self.parent.depth + 1
        self.llm = llm
        self.plugins = plugins
        self.hook = plugins.hook
        self.iteration = 0
        self.llm_calls = 0
        self.sim_time = 0.0
        self.usage: dict[str, int] = {}
        self.memory: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.records: list[ToolCallRecord] = []
        # Tool names of each executed plan of two or more calls (stopped plans excluded).
        self.parallel_groups: list[list[str]] = []
        self.termination: Termination | None = None
        # Free space for planners and plugins that keep state across iterations.
        self.state: dict[str, Any] = {}
        self.group = 0
        self._tool_list = list(tools.values())
        # Per-round hooks nobody implements are skipped: an empty pluggy call still costs
        # microseconds, several times a round. Decided once per run.
        self.observed = _observed_hooks(self.hook)
        # Agent.astream's events (harness.streaming); None when nobody streams the run.
        self.sink = sink
        # Replies come in pieces under astream, or when the source always streams.
        self.streams = sink is not None or bool(getattr(llm, "streams", False))
        # Why the last assistant message's calls were not run, for the error ToolMessages
        # that keep the transcript valid before any further request (set by the loop).
        self.unanswered_reason = "no result"
        # Messages before this index came from an earlier run: their calls are not this
        # run's to record.
        self._first_message = len(conversation.messages)
        # Ids of the calls of the last plan that was recorded without being answered in
        # the conversation (declined, stopped, aborted): they are already in `records`.
        self.recorded_ids: set[str] = set()
        # Calls answered `not executed` before a request, with their iteration: recorded
        # when the run ends.
        self._left: list[tuple[int, list[ToolCall], float]] = []

    @property
    def planner_name(self) -> str:
        """The name the planner was selected by (``config.planner``)."""
        return self.config.planner

    # -- helpers for planners and plugins ---------------------------------------------

    def emit(self, event: str, **data: Any) -> None:
        """Record an event (no wall-clock values: results must be reproducible)."""
        self.events.append({"event": event, "iteration": self.iteration, **data})

    def remember(self, kind: str, content: Any) -> None:
        """Add a memory entry ``{kind, content}``."""
        self.memory.append({"kind": kind, "content": content})

    async def call_llm(self, **options: Any) -> AssistantMessage:
        """Send the conversation and tools to the model; append and return its reply.

        The one path to the model: it fires ``llm_request`` / ``llm_response``, counts
        the call, advances the simulated clock and adds token usage.
        """
        self._answer_pending()
        self.llm_calls += 1
        request = LLMRequest(self.conversation, self._tool_list, options, self.llm_calls)
        # Simulated times (never wall-clock) place LLM calls on the report's timeline.
        # tool_choice is kept: a forced final answer ("none") reads differently.
        choice = {"tool_choice": options["tool_choice"]} if "tool_choice" in options else {}
        self.emit("llm_request", call=self.llm_calls, sim=self.sim_time, **choice)
        if self.observed.llm_request:
            self.hook.harness_llm_request(run=self, request=request)
        response: LLMResponse
        if self.streams:
            response = await stream_reply(self, request)
        else:
            response = await self.llm.complete(request)
        message = clean_reply(response.message)
        if message is not response.message:
            # Hooks must see the message that is in the conversation.
            response.message = message
        if simclock.out_of_bounds(response.latency):
            raise AbortRun(
                f"the LLM source's reply took {response.latency!r} simulated seconds; a reply "
                f"takes 0 to {simclock.MAX_SECONDS:.0f} (a year)"
            )
        self.sim_time += response.latency
        if response.usage:
            usage = self.usage
            for key, value in response.usage.items():
                usage[key] = usage.get(key, 0) + value
        self.conversation.append(message)
        self.emit(
            "llm_response",
            call=self.llm_calls,
            tool_calls=[c.name for c in message.tool_calls],
            finish_reason=message.finish_reason,
            sim=self.sim_time,
        )
        if self.observed.llm_response:
            self.hook.harness_llm_response(run=self, response=response)
        if not message.tool_calls:
            log.info("Final response received (no tool calls)")
        return message

    def _answer_pending(self) -> None:
        """Answer the calls of the last assistant message that never ran (and keep them)."""
        pending, new = self._pending()
        if new:
            self._left.append((self.iteration, new, self.sim_time))
        if pending:
            answer_calls(self.conversation, pending, self.unanswered_reason)

    def _pending(self) -> tuple[list[ToolCall], list[ToolCall]]:
        """(unanswered calls of the last assistant message, those this run must record).

        Every unanswered call is answered before a request, also one of a conversation
        the run continued; only this run's calls that no record holds yet are recorded.
        Costs the size of the last plan.
        """
        index, pending = pending_calls(self.conversation)
        if not pending or index < self._first_message:
            return pending, []
        # Ids, not identity: a planner may copy or rebuild the calls it plans.
        recorded = self.recorded_ids
        return pending, [call for call in pending if call.id not in recorded]

    def record_pending(self) -> None:
        """Record every call left behind as ``not_run``, each batch in a group of its own.

        Every requested call belongs in ``RunResult.tool_calls``: calls the limit, an
        error or a planner left behind are recorded like a declined plan, once, when the
        run ends, each at the simulated time it was given up (answered "not executed"
        before a request, or the run's end), where reports draw it.
        """
        _, new = self._pending()
        if new:
            self._left.append((self.iteration, new, self.sim_time))
        for iteration, calls, given_up in self._left:
            self.group += 1
            for call in calls:
                self.record(
                    call,
                    self.group,
                    iteration=iteration,
                    status="not_run",
                    is_error=False,
                    sim_start=given_up,
                    sim_end=given_up,
                )
        self._left = []

    # -- records ------------------------------------------------------------------------

    def record(
        self, call: ToolCall, group: int, iteration: int | None = None, **fields: Any
    ) -> ToolCallRecord:
        """Add the record of one call of plan ``group`` (this iteration unless given)."""
        record = ToolCallRecord(
            id=call.id,
            name=call.name,
            arguments=call.arguments,
            iteration=self.iteration if iteration is None else iteration,
            group=group,
            **fields,
        )
        self.records.append(record)
        return record

    def result(
        self,
        termination: Termination,
        final: FinalResponse,
        started: float,
        parallel_groups: list[list[str]] | None = None,
    ) -> RunResult:
        """The run as it ended (``started``: its ``time.perf_counter()`` at the start;
        ``parallel_groups``: the run's own unless an observer worked them out)."""
        return RunResult(
            termination=termination,
            final=final,
            iterations=self.iteration,
            llm_calls=self.llm_calls,
            tool_calls=self.records,
            parallel_groups=self.parallel_groups if parallel_groups is None else parallel_groups,
            conversation=self.conversation,
            events=self.events,
            memory=self.memory,
            usage=self.usage,
            sim_time=round(self.sim_time, 9),
            wall_time=time.perf_counter() - started,
        )

    def record_not_run(self, calls: list[ToolCall], reason: str) -> None:
        """Record a plan that was declined as a whole (stagnation)."""
        self.recorded_ids = {call.id for call in calls}
        self.group += 1
        for call in calls:
            self.record(
                call,
                self.group,
                status="not_run",
                is_error=False,
                sim_start=self.sim_time,
                sim_end=self.sim_time,
            )
        self.unanswered_reason = reason


def pending_calls(conversation: Conversation) -> tuple[int, list[ToolCall]]:
    """(index of the last assistant message, its calls that no ToolMessage after it answers).

    Walks back only over the trailing tool messages, so the cost is the size of the
    last plan, not of the history. ``(-1, [])`` when there is nothing to answer.
    """
    messages = conversation.messages
    answered: set[str] = set()
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, ToolMessage):
            answered.add(message.tool_call_id)
            continue
        if isinstance(message, AssistantMessage):
            return index, [call for call in message.tool_calls if call.id not in answered]
        break
    return -1, []


def answer_calls(conversation: Conversation, calls: list[ToolCall], reason: str) -> None:
    """Answer each call with the error ToolMessage ``not executed: <reason>``."""
    for call in calls:
        conversation.append(
            ToolMessage(
                tool_call_id=call.id,
                name=call.name,
                content=f"not executed: {reason}",
                is_error=True,
            )
        )


def answer_unanswered(conversation: Conversation, reason: str) -> None:
    """Give every unanswered call of the last assistant message an error ToolMessage.

    ``not executed: <reason>`` keeps the transcript valid for the real API.
    """
    answer_calls(conversation, pending_calls(conversation)[1], reason)
