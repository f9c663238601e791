"""``Run``: the live state of one run, handed to planners and to every hook.

It is the one path to the model (``call_llm``) and keeps what the results are built
from: the conversation, events and memory, and (in its ledger) the counters, the
simulated clock, usage and the tool-call records. Per-round work is constant in the length
of the run.

``Run`` is what plugins see (docs/plugins.md lists it): what they may read and call. The
engine (the loop, the tool plan runner, the external observer) changes the run's
bookkeeping only through the ledger's methods (``run._ledger``), so that "every requested
call is recorded exactly once, every unanswered call is answered before a request" holds
in one place.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness import simclock
from harness.actions import FinalResponse, RunResult, Termination, ToolCallRecord
from harness.config import AgentConfig
from harness.errors import AbortRun, LLMError
from harness.events import (
    AgentEndEvent,
    Event,
    LLMFailedEvent,
    LLMRequestEvent,
    LLMResponseEvent,
    ToolCallStatus,
    event_of,
)
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
    """The live state of one run, handed to planners and to every hook.

    Its public attributes and methods are what plugins may read and call
    (docs/plugins.md); the counters, the clock, usage, the records and the termination
    are read-only here and change through the ledger.
    """

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
        self.depth: int = 0 if self.parent is None else self.parent.depth + 1
        self.memory: list[dict[str, Any]] = []
        self.events: list[Event] = []
        # Free space for planners and plugins that keep state across iterations.
        self.state: dict[str, Any] = {}
        self._ledger = _Ledger(self)
        self._llm = llm
        self._plugins = plugins
        self._hook = plugins.hook
        self._tool_list = list(tools.values())
        # Per-round hooks nobody implements are skipped: an empty pluggy call still costs
        # microseconds, several times a round. Decided once per run.
        self._observed = _observed_hooks(self._hook)
        # Agent.astream's events (harness.streaming); None when nobody streams the run.
        self._sink = sink
        # Replies come in pieces under astream, or when the source always streams.
        self._streams = sink is not None or bool(getattr(llm, "streams", False))

    # -- what the ledger keeps, read-only ----------------------------------------------

    @property
    def iteration(self) -> int:
        """The current iteration (1-based; 0 before the first)."""
        return self._ledger.iteration

    @property
    def llm_calls(self) -> int:
        """LLM requests made so far."""
        return self._ledger.llm_calls

    @property
    def sim_time(self) -> float:
        """Simulated seconds so far."""
        return self._ledger.sim_time

    @property
    def usage(self) -> dict[str, int]:
        """Token usage so far (``prompt_tokens``, ``completion_tokens``, ...)."""
        return self._ledger.usage

    @property
    def records(self) -> list[ToolCallRecord]:
        """The records of the calls handled so far (``RunResult.tool_calls`` at the end)."""
        return self._ledger.records

    @property
    def parallel_groups(self) -> list[list[str]]:
        """The tool names of each executed plan of two or more calls."""
        return self._ledger.parallel_groups

    @property
    def termination(self) -> Termination | None:
        """How the run ended (set before ``harness_agent_end``; None until then)."""
        return self._ledger.termination

    @property
    def planner_name(self) -> str:
        """The name the planner was selected by (``config.planner``)."""
        return self.config.planner

    # -- helpers for planners and plugins ---------------------------------------------

    def tools_changed(self, tools: dict[str, Any]) -> None:
        """The run's tools from the next request on (an MCP server changed its list)."""
        self.tools = tools
        self._tool_list = list(tools.values())

    def emit(self, event: Event | str, /, **data: Any) -> None:
        """Record an event (no wall-clock values: results must be reproducible).

        ``event`` is one of harness.events' kinds, or a plugin's own event by name with
        its fields (``run.emit("cache_hit", key=k)``), stamped with the current iteration.
        """
        if isinstance(event, str):
            event = event_of({"event": event, "iteration": self._ledger.iteration, **data})
        elif data:
            raise TypeError(
                f"run.emit({type(event).__name__}(...), {', '.join(data)}=...): an event's "
                "fields go in the event"
            )
        self.events.append(event)

    def remember(self, kind: str, content: Any) -> None:
        """Add a memory entry ``{kind, content}``."""
        self.memory.append({"kind": kind, "content": content})

    async def call_llm(self, **options: Any) -> AssistantMessage:
        """Send the conversation and tools to the model; append and return its reply.

        The one path to the model: it fires ``llm_request`` / ``llm_response``, counts
        the call, advances the simulated clock and adds token usage.
        """
        ledger = self._ledger
        ledger.answer_pending()
        iteration = ledger.iteration
        request = self._request(options)
        response: LLMResponse
        retries = self.config.llm_retries
        for attempt in range(retries.max if retries is not None else 0):
            try:
                response = await self._ask(request)
                break
            except LLMError as exc:
                if retries is None or not retries.retries(exc.status, exc.type):
                    raise
                # Said in the run, as an SDK's retry leaves no other trace; the wait is
                # simulated, like every other duration of the run.
                self.emit(LLMFailedEvent.of(iteration, request.call, exc, ledger.sim_time))
                wait = retries.wait(attempt, exc.retry_after)
                ledger.advance_clock(ledger.sim_time + wait)
                request = self._request(options)
        else:
            response = await self._ask(request)
        call = request.call
        message = clean_reply(response.message)
        if message is not response.message:
            # Hooks must see the message that is in the conversation.
            response.message = message
        if simclock.out_of_bounds(response.latency):
            raise AbortRun(
                f"the LLM source's reply took {response.latency!r} simulated seconds; a reply "
                f"takes 0 to {simclock.MAX_SECONDS:.0f} (a year)"
            )
        ledger.advance_clock(ledger.sim_time + response.latency)
        if response.usage:
            ledger.add_usage(response.usage)
        self.conversation.append(message)
        names = [c.name for c in message.tool_calls]
        self.emit(
            LLMResponseEvent.of(
                iteration, call, names, message.finish_reason, ledger.sim_time, response.usage
            )
        )
        if self._observed.llm_response:
            self._hook.harness_llm_response(run=self, response=response)
        if not message.tool_calls:
            log.info("Final response received (no tool calls)")
        return message

    def _request(self, options: dict[str, Any]) -> LLMRequest:
        """A new request of the conversation, counted and announced."""
        ledger = self._ledger
        call = ledger.begin_request()
        request = LLMRequest(self.conversation, self._tool_list, options, call)
        # Simulated times (never wall-clock) place LLM calls on the report's timeline.
        # tool_choice is kept: a forced final answer ("none") reads differently.
        tool_choice = options.get("tool_choice")
        self.emit(LLMRequestEvent.of(ledger.iteration, call, ledger.sim_time, tool_choice))
        if self._observed.llm_request:
            self._hook.harness_llm_request(run=self, request=request)
        return request

    async def _ask(self, request: LLMRequest) -> LLMResponse:
        """The source's reply to ``request`` (streamed when the run streams)."""
        if self._streams:
            return await stream_reply(self, request)
        return await self._llm.complete(request)


class _Ledger:
    """The run's bookkeeping: the counters, the simulated clock, usage, the tool-call
    records and the calls still waiting for an answer.

    The loop, the tool plan runner and the external observer change a run only through
    these methods; plugins read the same values through ``Run``'s properties. Every
    requested call gets exactly one record: a plan that ran, one that never will
    (declined, stopped, aborted, left behind), or one whose results an external target
    has yet to send.
    """

    def __init__(self, run: Run) -> None:
        self._run = run
        self.iteration = 0
        self.llm_calls = 0
        self.sim_time = 0.0
        self.usage: dict[str, int] = {}
        self.records: list[ToolCallRecord] = []
        # Tool names of each executed plan of two or more calls (stopped plans excluded).
        self.parallel_groups: list[list[str]] = []
        self.termination: Termination | None = None
        self._group = 0
        # Messages before this index came from an earlier run: their calls are not this
        # run's to record.
        self._first_message = len(run.conversation.messages)
        # Ids of the calls of the last plan that was recorded without being answered in
        # the conversation (declined, stopped, aborted): they are already in `records`.
        self._recorded_ids: set[str] = set()
        # Why the last assistant message's calls were not run, for the error ToolMessages
        # that keep the transcript valid before any further request.
        self._reason = "no result"
        # Calls answered `not executed` before a request, with their iteration and the
        # simulated time they were given up: recorded when the run ends.
        self._left: list[tuple[int, list[ToolCall], float]] = []

    # -- counters, the clock, usage -------------------------------------------------------

    def begin_iteration(self) -> int:
        """Count a new iteration; its number."""
        self.iteration += 1
        return self.iteration

    def begin_request(self) -> int:
        """Count a request to the model; its call number."""
        self.llm_calls += 1
        return self.llm_calls

    def advance_clock(self, to: float) -> None:
        """Move the simulated clock on to ``to`` seconds."""
        self.sim_time = to

    def add_usage(self, usage: dict[str, int]) -> None:
        """Add a reply's token usage to the run's."""
        total = self.usage
        for key, value in usage.items():
            total[key] = total.get(key, 0) + value

    # -- plans ------------------------------------------------------------------------------

    def begin_plan(self, calls: list[ToolCall]) -> int:
        """A plan is about to run: its group number (and its tool names when it is
        parallel)."""
        self._group += 1
        if len(calls) > 1:
            self.parallel_groups.append([call.name for call in calls])
        return self._group

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

    def record_not_run(
        self,
        calls: list[ToolCall],
        statuses: list[ToolCallStatus] | None = None,
        *,
        iteration: int | None = None,
        at: float | None = None,
    ) -> list[ToolCallRecord]:
        """Record a plan none of whose calls ran, in a group of its own: each call
        ``not_run`` (or its status in ``statuses``) at simulated time ``at`` (now).

        What a declined, stopped or left-behind plan comes to, and an external target's
        plan until the next request carries its results.
        """
        self._group += 1
        at = self.sim_time if at is None else at
        return [
            self.record(
                call,
                self._group,
                iteration=iteration,
                status=status,
                is_error=status != "not_run",
                sim_start=at,
                sim_end=at,
            )
            for call, status in zip(calls, statuses or ["not_run"] * len(calls), strict=True)
        ]

    def decline_plan(
        self, calls: list[ToolCall], reason: str, statuses: list[ToolCallStatus] | None = None
    ) -> None:
        """Record a plan that will not run (stagnation, a budget, invalid arguments):
        ``reason`` is what its calls are answered with before the next request."""
        self.record_not_run(calls, statuses)
        self._unanswered(calls, reason)

    def abort_plan(self, plan: list[ToolCall], skipped: list[ToolCall], group: int) -> None:
        """A call of plan ``group`` aborted the run: the calls after it never ran."""
        for call in skipped:
            self.record(
                call,
                group,
                status="not_run",
                is_error=False,
                sim_start=self.sim_time,
                sim_end=self.sim_time,
            )
        self._unanswered(plan, "the run was aborted")

    def result_arrived(self, record: ToolCallRecord, result: str, *, failed: bool = False) -> None:
        """An external target sent the result of a recorded call: it ran (``failed``: its
        result says the tool failed, and the call is ``error`` as the own loop records it)."""
        record.result = result
        record.status = "error" if failed else "ok"
        record.is_error = failed

    def tool_answered(
        self,
        record: ToolCallRecord,
        result: Any,
        status: ToolCallStatus,
        is_error: bool,
        sim_start: float,
        sim_end: float,
    ) -> None:
        """An external target's call was answered where the tool is served (harness's MCP
        server): its true status, result and simulated time."""
        record.result = result
        record.status = status
        record.is_error = is_error
        record.sim_start = sim_start
        record.sim_end = sim_end

    def _unanswered(self, calls: list[ToolCall], reason: str) -> None:
        # Recorded already: answered with `reason` before the next request, never again.
        self._recorded_ids = {call.id for call in calls}
        self._reason = reason

    # -- calls left unanswered ------------------------------------------------------------

    def give_up_pending(self, reason: str) -> None:
        """The last reply's calls will not run: answer them with ``reason``."""
        self._reason = reason

    def answer_pending(self) -> None:
        """Before a request: answer the calls of the last assistant message that never ran
        (and keep them, to record when the run ends)."""
        pending, new = self._pending()
        if new:
            self._left.append((self.iteration, new, self.sim_time))
        if pending:
            answer_calls(self._run.conversation, pending, self._reason)

    def _pending(self) -> tuple[list[ToolCall], list[ToolCall]]:
        """(unanswered calls of the last assistant message, those this run must record).

        Every unanswered call is answered before a request, also one of a conversation
        the run continued; only this run's calls that no record holds yet are recorded.
        Costs the size of the last plan.
        """
        index, pending = pending_calls(self._run.conversation)
        if not pending or index < self._first_message:
            return pending, []
        # Ids, not identity: a planner may copy or rebuild the calls it plans.
        recorded = self._recorded_ids
        return pending, [call for call in pending if call.id not in recorded]

    def close(self) -> None:
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
            self.record_not_run(calls, iteration=iteration, at=given_up)
        self._left = []

    # -- the end ----------------------------------------------------------------------------

    def replace_conversation(self, conversation: Conversation) -> None:
        """An external target's conversation, as its requests rebuilt it."""
        self._run.conversation = conversation

    def end(
        self,
        termination: Termination,
        final: FinalResponse,
        failed: Callable[[Exception], FinalResponse],
    ) -> tuple[Termination, FinalResponse]:
        """Record how the run ended and fire ``harness_agent_end``; an observer's bug
        there still ends the run, in ``error`` with ``failed(exc)``."""
        run = self._run
        self.termination = termination
        run.emit(AgentEndEvent(iteration=self.iteration, termination=termination.value))
        try:
            run._hook.harness_agent_end(run=run, final=final)
        except Exception as exc:
            self.termination = Termination.error
            run.events[-1] = AgentEndEvent(iteration=self.iteration, termination="error")
            return Termination.error, failed(exc)
        return termination, final

    def result(
        self,
        termination: Termination,
        final: FinalResponse,
        started: float,
        parallel_groups: list[list[str]] | None = None,
    ) -> RunResult:
        """The run as it ended (``started``: its ``time.perf_counter()`` at the start;
        ``parallel_groups``: the run's own unless an observer worked them out)."""
        run = self._run
        return RunResult(
            termination=termination,
            final=final,
            iterations=self.iteration,
            llm_calls=self.llm_calls,
            tool_calls=self.records,
            parallel_groups=self.parallel_groups if parallel_groups is None else parallel_groups,
            conversation=run.conversation,
            events=run.events,
            memory=run.memory,
            usage=self.usage,
            sim_time=round(self.sim_time, 9),
            wall_time=time.perf_counter() - started,
        )


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
