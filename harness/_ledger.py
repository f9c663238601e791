"""``Ledger``: a run's bookkeeping, the one writer of its counters, clock and records.

``Run`` (harness/_run.py) keeps one and hands it to the engine as ``run.ledger``: the loop,
the tool plan runner, budgets, detectors and the external observer record what happened
through its intent-named methods (``begin_plan``, ``decline_plan``, ``record_not_run``,
``result_arrived``, ...), so that "every requested call is recorded exactly once, every
unanswered call is answered before a request" holds in one place. Plugins read the same
values through ``Run``'s read-only properties.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harness._actions import FinalResponse, RunResult, Termination, ToolCallRecord
from harness._messages import AssistantMessage, Conversation, ToolCall, ToolMessage
from harness.events import AgentEndEvent, ToolCallStatus

if TYPE_CHECKING:
    from harness._run import Run

__all__ = ["Ledger", "answer_calls", "answer_unanswered", "pending_calls"]


class Ledger:
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
            run.notify_agent_end(final)
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
