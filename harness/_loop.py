"""The agent loop: ask the planner for a plan, run it, until something ends the run.

The exact semantics are docs/loop.md's: the run's state is a ``Run``
(harness._run), a tool plan runs through harness._toolplan. Per-iteration work is
constant in the length of the run: nothing here walks the whole history.
"""

from __future__ import annotations

import inspect
import logging
import time
from typing import Any

from harness._actions import (
    CompleteAction,
    EmptyAction,
    ExecuteToolsAction,
    FinalResponse,
    MakeLLMRequestAction,
    RunError,
    RunResult,
    Termination,
    ToolAction,
)
from harness._budgets import Budget
from harness._errors import (
    AbortRun,
    HarnessError,
    LLMError,
    ToolServerError,
    describe,
    raised_at,
)
from harness._messages import (
    AssistantMessage,
    Conversation,
    SystemMessage,
    clean_text,
)
from harness._run import Run, RunStopped, enter_run, leave_run
from harness._toolplan import run_plan
from harness.detectors import Detectors
from harness.events import AgentStartEvent, IterationStartEvent
from harness.planners import Planner, PlannerFactory

__all__ = ["execute"]

log = logging.getLogger("harness")


def _last_turn(conversation: Conversation) -> Any:
    """The last message that is not a system message (None when there is none)."""
    for message in reversed(conversation.messages):
        if not isinstance(message, SystemMessage):
            return message
    return None


async def _iterate(
    run: Run, planner: Planner, detectors: Detectors, budget: Budget | None
) -> tuple[Termination, FinalResponse]:
    ledger = run.ledger
    sink = run.sink
    limit = run.config.max_iterations
    while True:
        if ledger.iteration >= limit:
            return await _at_limit(run, planner)
        iteration = ledger.begin_iteration()
        log.info("Agentic iteration %d/%d", iteration, limit)
        run.emit(IterationStartEvent.of(iteration))
        run.notify_iteration_start(iteration)
        if sink is not None:
            sink.iteration_start(run)

        plan = planner.step(run)
        if inspect.isawaitable(plan):
            plan = await plan
        if budget is not None:
            budget.after_spend(run)  # a planner that asks the model itself (react)

        if isinstance(plan, MakeLLMRequestAction):
            detectors.before_request(run)
            await run.call_llm(**plan.options)
            if budget is not None:
                budget.after_spend(run)
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

        if detectors.before_plan(run, calls):
            continue  # declined with a nudge: the planner goes on
        if budget is not None:
            budget.before_plan(run, calls)
        first_record = len(ledger.records)
        await run_plan(run, calls)
        detectors.after_plan(run, first_record)
        if budget is not None:
            budget.after_plan(run, first_record)


def _mark_truncation(run: Run, final: FinalResponse) -> FinalResponse:
    last = run.conversation.messages[-1] if run.conversation.messages else None
    if (
        isinstance(last, AssistantMessage)
        and last.finish_reason == "length"
        and not last.tool_calls
        and not final.data.truncated
    ):
        return final.model_copy(update={"data": final.data.merged(truncated=True)})
    return final


def _limit_message(run: Run, planner: Planner) -> str:
    """``Max iterations reached (3): ...``, with what a tool round costs under the planner
    in use when it says (``iterations_per_round``, ``iterations_to_answer``): the default
    planner needs 4 iterations for one tool call and its answer, which a limit of 3 is not."""
    limit = run.config.max_iterations
    text = f"Max iterations reached ({limit})"
    per_round = getattr(planner, "iterations_per_round", None)
    to_answer = getattr(planner, "iterations_to_answer", None)
    if not (isinstance(per_round, int) and isinstance(to_answer, int)):
        return text
    rounds = len({record.group for record in run.records})
    need = rounds * per_round + to_answer
    return (
        f"{text}: under planner {run.planner_name} a tool round takes {per_round} "
        f"iteration{'s' if per_round != 1 else ''} and the final answer {to_answer}, so this "
        f"run's {rounds} tool round{'s' if rounds != 1 else ''} and an answer need "
        f"max_iterations: {need} or more"
    )


async def _at_limit(run: Run, planner: Planner) -> tuple[Termination, FinalResponse]:
    limit = run.config.max_iterations
    log.warning("Max agentic iterations reached without final response")
    run.remember("final", "Max iterations reached")
    error = RunError(
        type="max_iterations", message=_limit_message(run, planner), max_iterations=limit
    )
    if run.config.on_max_iterations != "final_answer":
        return Termination.max_iterations, FinalResponse(error=error)
    last = _last_turn(run.conversation)
    if isinstance(last, AssistantMessage) and not last.tool_calls and last.content is not None:
        # The answer arrived one trip too late: it is the answer, no request needed.
        return Termination.max_iterations, _mark_truncation(
            run, FinalResponse(content=last.content, error=error)
        )
    run.ledger.give_up_pending("max iterations reached")
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


def tool_error(exc: ToolServerError) -> RunError:
    """``final.error`` of a ``tool_error`` ending: ``{type, message, tool, server}``."""
    error: dict[str, Any] = {"type": "tool_error", "message": clean_text(exc.message)}
    error.update({k: v for k, v in (("tool", exc.tool), ("server", exc.server)) if v})
    return RunError.model_validate(error)


def _error_final(exc: BaseException) -> FinalResponse:
    return FinalResponse(
        error=RunError(
            type="error",
            # AbortRun's message is written for people (file, line, field): its class name
            # would only say that harness stopped the run on purpose.
            exception=None if isinstance(exc, AbortRun) else type(exc).__name__,
            # Where a plugin's own code raised: a planner's typo points into the planner.
            message=clean_text(f"{exc}{_place(exc)}"),
            status=None,
        )
    )


async def execute(run: Run, planner_factory: PlannerFactory) -> RunResult:
    """Run the loop to its end and return the RunResult.

    The planner is built here, inside the run, so that a factory that rejects its
    config ends the run in ``error`` like any other planner failure.
    """
    started = time.perf_counter()
    ledger = run.ledger
    entered = enter_run(run)
    try:
        run.emit(AgentStartEvent(iteration=ledger.iteration))
        run.notify_agent_start()
        planner = planner_factory(run.config)
        if not callable(getattr(planner, "step", None)):
            raise HarnessError(
                f"planner {run.planner_name!r}: its factory returned {describe(planner)}, which "
                "has no step(run) method; a planner factory must return an object with step(run)"
            )
        detectors = Detectors(run)
        budget = Budget.for_run(run.config)
        termination, final = await _iterate(run, planner, detectors, budget)
    except RunStopped as stop:
        termination, final = stop.termination, stop.final
    except LLMError as exc:
        # An error body is the server's text: it may hold lone surrogates too.
        error = RunError(**{**exc.as_error(), "message": clean_text(exc.message)})
        termination, final = Termination.llm_error, FinalResponse(error=error)
        run.remember("error", f"LLM error: {error.message}")
    except ToolServerError as exc:
        error = tool_error(exc)
        termination, final = Termination.tool_error, FinalResponse(error=error)
        run.remember("error", f"Tool server error: {error.message}")
    except Exception as exc:  # a planner, hook, template or harness bug: still a result
        log.debug("run ended in error", exc_info=True)
        termination, final = Termination.error, _error_final(exc)
        text = str(exc) if isinstance(exc, AbortRun) else _with_place(exc)
        run.remember("error", clean_text(text))
    finally:
        leave_run(entered)
    # Calls the limit, an error or the planner left behind are still requested calls.
    ledger.close()

    def failed(exc: Exception) -> FinalResponse:
        # An observer's bug at the very end still makes the run `error`.
        run.remember("error", clean_text(_with_place(exc)))
        return _error_final(exc)

    termination, final = ledger.end(termination, final, failed)
    return ledger.result(termination, final, started)
