"""The agent loop: ask the planner for a plan, run it, until something ends the run.

The exact semantics are DESIGN.md section 3. Per-iteration work is constant in the
length of the run: nothing here walks the whole history.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_jsonable_python

from harness import simclock, stagnation
from harness.actions import (
    CompleteAction,
    EmptyAction,
    ExecuteToolsAction,
    FinalResponse,
    MakeLLMRequestAction,
    RunResult,
    Termination,
    ToolAction,
    ToolCallRecord,
)
from harness.errors import AbortRun, HarnessError, LLMError, describe, raised_at
from harness.llm.base import LLMRequest, LLMResponse
from harness.messages import (
    AssistantMessage,
    Conversation,
    SystemMessage,
    ToolCall,
    ToolMessage,
    clean_data,
    clean_reply,
    clean_text,
)
from harness.stagnation import StagnationDetector, plan_signature
from harness.tools import Tool, ToolArgumentsError, format_errors

__all__ = ["AgentConfig", "Run", "answer_calls", "answer_unanswered", "execute", "pending_calls"]

log = logging.getLogger("harness")


class AgentConfig(BaseModel):
    """How a run behaves (the ``agent:`` section of a scenario)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    planner: str = "agentbuilder"
    # Strict: True is not 1 (bool is an int subclass) and "3" is not 3.
    max_iterations: int = Field(default=80, ge=1, strict=True)
    stagnation_window: int = Field(
        default=3, ge=0, strict=True, description="0 turns detection off"
    )
    parallel_tools: bool = True
    on_validation_error: Literal["stop", "retry"] = "stop"
    on_max_iterations: Literal["stop", "final_answer"] = "stop"
    system: str | None = None
    planner_options: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True)
class _Observed:
    """Which per-round hooks have implementations in this run's plugin manager."""

    iteration_start: bool
    llm_request: bool
    llm_response: bool
    action_executed: bool
    # False when the built-in plan_signature is the only answer: call it directly.
    custom_signature: bool


def _observed_hooks(hook: Any) -> _Observed:
    def implemented(name: str) -> bool:
        return bool(getattr(hook, name).get_hookimpls())

    signature = hook.harness_action_signature.get_hookimpls()
    return _Observed(
        iteration_start=implemented("harness_iteration_start"),
        llm_request=implemented("harness_llm_request"),
        llm_response=implemented("harness_llm_response"),
        action_executed=implemented("harness_action_executed"),
        custom_signature=not (
            len(signature) == 1 and signature[0].function is stagnation.harness_action_signature
        ),
    )


def _aborted(exc: AbortRun) -> tuple[str, str, str, float]:
    """The outcome recorded for a call that aborted the run."""
    # Its message is written for people (file, line, field): no internal class name.
    text = clean_text(str(exc))
    return text, text, "error", 0.0


class _Stop(Exception):  # control flow inside the loop only
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
        llm: Any,
        plugins: Any,
    ) -> None:
        self.conversation = conversation
        self.tools = tools
        self.config = config
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
        self._group = 0
        self._tool_list = list(tools.values())
        # Per-round hooks nobody implements are skipped: an empty pluggy call still costs
        # microseconds, several times a round. Decided once per run.
        self.observed = _observed_hooks(self.hook)
        # Why the last assistant message's calls were not run, for the error ToolMessages
        # that keep the transcript valid before any further request.
        self._unanswered_reason = "no result"
        # Messages before this index came from an earlier run: their calls are not this
        # run's to record.
        self._first_message = len(conversation.messages)
        # Ids of the calls of the last plan that was recorded without being answered in
        # the conversation (declined, stopped, aborted): they are already in `records`.
        self._recorded_ids: set[str] = set()
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
        response: LLMResponse = await self.llm.complete(request)
        message = clean_reply(response.message)
        if message is not response.message:
            # Hooks must see the message that is in the conversation.
            response.message = message
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
            answer_calls(self.conversation, pending, self._unanswered_reason)

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
        recorded = self._recorded_ids
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
            self._group += 1
            for call in calls:
                self._record(
                    call,
                    self._group,
                    iteration=iteration,
                    status="not_run",
                    is_error=False,
                    sim_start=given_up,
                    sim_end=given_up,
                )
        self._left = []

    # -- running a tool plan ----------------------------------------------------------

    async def run_tools(self, calls: list[ToolCall]) -> None:
        """Validate every call, then run them (concurrently unless parallel_tools is false)."""
        self._group += 1
        group = self._group
        prepared: list[tuple[ToolCall, Tool | None, Any]] = []
        failures: list[dict[str, Any]] = []
        for call in calls:
            tool = self.tools.get(call.name)
            if tool is None:
                prepared.append((call, None, None))
                continue
            try:
                prepared.append((call, tool, tool.validate(call)))
            except ToolArgumentsError as exc:
                failures.append({"call_id": call.id, "tool": call.name, "errors": exc.errors})
                prepared.append((call, tool, exc))

        if failures and self.config.on_validation_error == "stop":
            for call, tool, outcome in prepared:
                status = (
                    "unknown_tool"
                    if tool is None
                    else "invalid"
                    if isinstance(outcome, ToolArgumentsError)
                    else "not_run"
                )
                self._record(
                    call,
                    group,
                    status=status,
                    is_error=status != "not_run",
                    sim_start=self.sim_time,
                    sim_end=self.sim_time,
                )
            self._recorded_ids = {call.id for call in calls}
            self._unanswered_reason = "another call of this plan had invalid arguments"
            message = "; ".join(
                f"{f['tool']} ({f['call_id']}): {format_errors(f['errors'])}" for f in failures
            )
            self.remember("error", f"Invalid tool arguments: {message}")
            raise _Stop(
                Termination.validation_error,
                FinalResponse(
                    error={"type": "validation_error", "message": message, "errors": failures}
                ),
            )

        log.info("Executing %d tool call(s)", len(calls))
        if len(calls) > 1:
            self.parallel_groups.append([call.name for call in calls])
        start = self.sim_time
        # A call that raises AbortRun ends the run in `error` once the plan is recorded:
        # the calls that ran (and the one that aborted) stay in the results.
        abort: AbortRun | None = None
        if self.config.parallel_tools and len(prepared) > 1:
            outcomes = list(await asyncio.gather(*(self._call(p, parallel=True) for p in prepared)))
            for index, outcome in enumerate(outcomes):
                if isinstance(outcome, AbortRun):
                    abort = abort or outcome
                    outcomes[index] = _aborted(outcome)
            spans = [(start, start + o[3]) for o in outcomes]
        else:
            outcomes, spans, clock = [], [], start
            for p in prepared:
                outcome = await self._call(p, parallel=False)
                if isinstance(outcome, AbortRun):
                    abort, outcome = outcome, _aborted(outcome)
                outcomes.append(outcome)
                spans.append((clock, clock + outcome[3]))
                clock += outcome[3]
                if abort is not None:
                    break
        self.sim_time = max([start, *(end for _, end in spans)])
        skipped = prepared[len(outcomes) :]
        prepared = prepared[: len(outcomes)]

        # Messages and records in the model's order, whatever order the calls finished in.
        # All of them before any hook fires: an observer that raises must not lose the
        # results of calls that ran.
        records = []
        for (call, _tool, _args), (content, value, status, _), (sim_start, sim_end) in zip(
            prepared, outcomes, spans, strict=True
        ):
            is_error = status != "ok"
            self.conversation.append(
                ToolMessage(
                    tool_call_id=call.id, name=call.name, content=content, is_error=is_error
                )
            )
            records.append(
                self._record(
                    call,
                    group,
                    status=status,
                    is_error=is_error,
                    result=value,
                    sim_start=sim_start,
                    sim_end=sim_end,
                )
            )
        if abort is not None:
            for call, _tool, _args in skipped:
                self._record(
                    call,
                    group,
                    status="not_run",
                    is_error=False,
                    sim_start=self.sim_time,
                    sim_end=self.sim_time,
                )
            self._recorded_ids = {call.id for call in calls}
            self._unanswered_reason = "the run was aborted"
        for (call, _tool, _args), record in zip(prepared, records, strict=True):
            self.emit(
                "action_executed",
                tool=call.name,
                call_id=call.id,
                status=record.status,
                group=group,
            )
            if self.observed.action_executed:
                self.hook.harness_action_executed(
                    run=self, action=ToolAction(tool_call=call), result=record
                )
        if abort is not None:
            raise abort

    async def _call(self, prepared: tuple[ToolCall, Tool | None, Any], *, parallel: bool) -> Any:
        """-> (content for the model, recorded result, status, simulated seconds) or AbortRun."""
        call, tool, args = prepared
        if tool is None:
            known = ", ".join(sorted(self.tools)) or "none"
            text = f"Unknown tool {call.name!r}. Available tools: {known}"
            return text, text, "unknown_tool", 0.0
        if isinstance(args, ToolArgumentsError):
            text = f"Invalid arguments for {call.name}: {args}"
            return text, text, "invalid", 0.0
        box = simclock.start_call(parallel=parallel)
        try:
            if tool.is_async:
                value = await tool.fn(**args)
            elif parallel:
                # A sync tool may block (requests, subprocess): a thread lets the
                # calls of a parallel plan overlap as they would in production.
                value = await asyncio.to_thread(tool.fn, **args)
            else:
                value = tool.fn(**args)
        except AbortRun as exc:
            return exc
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the run itself is being cancelled from outside: let it stop
            # The tool raised it itself (a cancelled inner task, say): a tool failure.
            text = clean_text(f"{type(exc).__name__}: {exc}")
            return text, text, "error", box[0]
        except Exception as exc:  # a tool failure is reported to the model, never raised
            text = clean_text(f"{type(exc).__name__}: {exc}")
            return text, text, "error", box[0]
        if isinstance(value, str):
            value = clean_text(value)
            return value, value, "ok", box[0]
        try:
            result = to_jsonable_python(value, fallback=str)
        except UnicodeEncodeError:
            # pydantic encodes dict keys as UTF-8: a lone surrogate in one fails there.
            result = to_jsonable_python(clean_data(value), fallback=str)
        # Exactly json.dumps(result) (DESIGN section 2): what the model sees is stable.
        text = json.dumps(result)
        # json.dumps writes every surrogate as \udXXX (astral characters as a pair of
        # them): only then can a lone one hide in the data.
        if "\\ud" in text:
            cleaned = clean_data(result)
            if cleaned is not result:
                result, text = cleaned, json.dumps(cleaned)
        return text, result, "ok", box[0]

    def _record(
        self, call: ToolCall, group: int, iteration: int | None = None, **fields: Any
    ) -> ToolCallRecord:
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

    def record_not_run(self, calls: list[ToolCall], reason: str) -> None:
        """Record a plan that was declined as a whole (stagnation)."""
        self._recorded_ids = {call.id for call in calls}
        self._group += 1
        for call in calls:
            self._record(
                call,
                self._group,
                status="not_run",
                is_error=False,
                sim_start=self.sim_time,
                sim_end=self.sim_time,
            )
        self._unanswered_reason = reason


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


# -- the loop ------------------------------------------------------------------------------


def _last_turn(conversation: Conversation) -> Any:
    """The last message that is not a system message (None when there is none)."""
    for message in reversed(conversation.messages):
        if not isinstance(message, SystemMessage):
            return message
    return None


async def _iterate(
    run: Run, planner: Any, detector: StagnationDetector
) -> tuple[Termination, FinalResponse]:
    config = run.config
    hook = run.hook
    limit = config.max_iterations
    while True:
        if run.iteration >= limit:
            return await _at_limit(run)
        run.iteration += 1
        log.info("Agentic iteration %d/%d", run.iteration, limit)
        run.emit("iteration_start")
        if run.observed.iteration_start:
            hook.harness_iteration_start(run=run, iteration=run.iteration)

        plan = planner.step(run)
        if inspect.isawaitable(plan):
            plan = await plan

        if isinstance(plan, MakeLLMRequestAction):
            await run.call_llm(**plan.options)
            continue
        if isinstance(plan, ExecuteToolsAction):
            calls = list(plan.tool_calls)
        elif isinstance(plan, ToolAction):
            calls = [plan.tool_call]
        elif isinstance(plan, list) and plan and all(isinstance(a, ToolAction) for a in plan):
            calls = [a.tool_call for a in plan]
        elif isinstance(plan, FinalResponse):
            return Termination.completed, _mark_truncation(run, plan)
        elif isinstance(plan, CompleteAction):
            return Termination.completed, _mark_truncation(run, FinalResponse(content=plan.content))
        elif isinstance(plan, EmptyAction) or (isinstance(plan, list) and not plan):
            return Termination.empty, FinalResponse()
        else:
            raise HarnessError(
                f"planner {run.planner_name!r} returned {plan!r}; expected an action, a list of "
                "ToolAction or a FinalResponse"
            )
        if not calls:  # ExecuteToolsAction(tool_calls=[]): nothing to do, like []
            return Termination.empty, FinalResponse()

        if run.observed.custom_signature:
            signature = hook.harness_action_signature(run=run, tool_calls=calls)
        else:
            signature = plan_signature(calls)
        if signature is None:
            # Nobody answered (the built-in was disabled): no plan equals another, so
            # detection is off instead of every plan looking the same.
            signature = object()
        if detector.is_stagnant(signature):
            window = detector.window
            run.record_not_run(calls, "the same tool calls were requested again (stagnation)")
            run.remember(
                "error",
                f"Stagnation detected: the same tool plan was requested {window + 1} times "
                "in a row",
            )
            return Termination.stagnation, FinalResponse(
                data={
                    "stagnation": True,
                    "signature": to_jsonable_python(signature, fallback=repr),
                    "window": window,
                }
            )
        detector.add(signature)
        await run.run_tools(calls)


def _mark_truncation(run: Run, final: FinalResponse) -> FinalResponse:
    last = run.conversation.messages[-1] if run.conversation.messages else None
    if (
        isinstance(last, AssistantMessage)
        and last.finish_reason == "length"
        and not last.tool_calls
        and not final.data.get("truncated")
    ):
        return final.model_copy(update={"data": {**final.data, "truncated": True}})
    return final


async def _at_limit(run: Run) -> tuple[Termination, FinalResponse]:
    limit = run.config.max_iterations
    log.warning("Max agentic iterations reached without final response")
    run.remember("final", "Max iterations reached")
    error = {"type": "max_iterations", "message": "Max iterations reached", "max_iterations": limit}
    if run.config.on_max_iterations != "final_answer":
        return Termination.max_iterations, FinalResponse(error=error)
    last = _last_turn(run.conversation)
    if isinstance(last, AssistantMessage) and not last.tool_calls and last.content is not None:
        # The answer arrived one trip too late: it is the answer, no request needed.
        return Termination.max_iterations, _mark_truncation(
            run, FinalResponse(content=last.content, error=error)
        )
    run._unanswered_reason = "max iterations reached"
    message = await run.call_llm(tool_choice="none")
    if message.tool_calls:
        raise AbortRun('the model answered a tool_choice="none" request with tool calls')
    return Termination.max_iterations, _mark_truncation(
        run, FinalResponse(content=message.content, error=error)
    )


def _place(exc: BaseException) -> str:
    """`` (raised at plugins/planner.py:12 in step)`` when user code raised it, else ''."""
    where = None if isinstance(exc, AbortRun) else raised_at(exc)
    return f" (raised at {where})" if where else ""


def _with_place(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}{_place(exc)}"


def _error_final(exc: BaseException) -> FinalResponse:
    return FinalResponse(
        error={
            "type": "error",
            # AbortRun's message is written for people (file, line, field): its class name
            # would only say that harness stopped the run on purpose.
            "exception": None if isinstance(exc, AbortRun) else type(exc).__name__,
            # Where a plugin's own code raised: a planner's typo points into the planner.
            "message": clean_text(f"{exc}{_place(exc)}"),
            "status": None,
        }
    )


async def execute(run: Run, planner_factory: Callable[[AgentConfig], Any]) -> RunResult:
    """Run the loop to its end and return the RunResult.

    The planner is built here, inside the run, so that a factory that rejects its
    config ends the run in ``error`` like any other planner failure.
    """
    started = time.perf_counter()
    hook = run.hook
    detector = StagnationDetector(run.config.stagnation_window)
    try:
        run.emit("agent_start")
        hook.harness_agent_start(run=run)
        planner = planner_factory(run.config)
        if not callable(getattr(planner, "step", None)):
            raise HarnessError(
                f"planner {run.planner_name!r}: its factory returned {describe(planner)}, which "
                "has no step(run) method; a planner factory must return an object with step(run)"
            )
        termination, final = await _iterate(run, planner, detector)
    except _Stop as stop:
        termination, final = stop.termination, stop.final
    except LLMError as exc:
        # An error body is the server's text: it may hold lone surrogates too.
        error = {**exc.as_error(), "message": clean_text(exc.message)}
        termination, final = Termination.llm_error, FinalResponse(error=error)
        run.remember("error", f"LLM error: {error['message']}")
    except Exception as exc:  # a planner, hook, template or harness bug: still a result
        log.debug("run ended in error", exc_info=True)
        termination, final = Termination.error, _error_final(exc)
        text = final.error["message"] if isinstance(exc, AbortRun) else _with_place(exc)
        run.remember("error", clean_text(text))
    # Calls the limit, an error or the planner left behind are still requested calls.
    run.record_pending()
    run.termination = termination
    run.emit("agent_end", termination=termination.value)
    try:
        hook.harness_agent_end(run=run, final=final)
    except Exception as exc:  # an observer's bug at the very end still makes the run `error`
        termination, final = Termination.error, _error_final(exc)
        run.termination = termination
        run.events[-1]["termination"] = termination.value
        run.remember("error", clean_text(_with_place(exc)))
    return RunResult(
        termination=termination,
        final=final,
        iterations=run.iteration,
        llm_calls=run.llm_calls,
        tool_calls=run.records,
        parallel_groups=run.parallel_groups,
        conversation=run.conversation,
        events=run.events,
        memory=run.memory,
        usage=run.usage,
        sim_time=round(run.sim_time, 9),
        wall_time=time.perf_counter() - started,
    )
