"""Running one tool plan: validate every call, execute them, record the outcomes.

The steps are those of docs/loop.md#tool-plans: all validation failures are collected
before anything runs (``on_validation_error: stop`` then runs none of the plan), the
calls of a plan run concurrently unless ``parallel_tools`` is false, and messages and
records follow the model's order whatever order the calls finish in.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_jsonable_python

from harness import simclock
from harness._actions import (
    FinalData,
    FinalResponse,
    InvalidCall,
    RunError,
    SubRun,
    Termination,
    ToolAction,
    ToolCallRecord,
)
from harness._errors import AbortRun, format_errors
from harness._messages import ToolCall, ToolMessage, clean_data, clean_text
from harness._run import Run, RunStopped
from harness._tools import Tool, ToolArgumentsError, ToolResult
from harness.events import ActionExecutedEvent, ToolCallStatus

__all__ = ["Outcome", "Prepared", "run_plan", "tool_outcome"]

log = logging.getLogger("harness")


@dataclass
class Prepared:
    """A call of the plan after validation: its tool (None when unknown) and its
    validated arguments, or the validation error."""

    call: ToolCall
    tool: Tool | None
    args: dict[str, Any] | ToolArgumentsError | None


@dataclass
class Outcome:
    """What one call came to."""

    content: str  # what the model sees in the ToolMessage
    result: Any  # what the record keeps
    status: str  # ok | error | invalid | unknown_tool
    seconds: float = 0.0  # simulated seconds the call took
    # Set when the call raised AbortRun: the run ends in `error` once the plan is recorded.
    abort: AbortRun | None = None
    # The run a sub-agent tool made for the call (harness.AgentTool), kept on its record.
    sub_run: SubRun | None = None

    @classmethod
    def failed(cls, text: str, status: str = "error", seconds: float = 0.0) -> Outcome:
        """An outcome whose content and recorded result are the same text."""
        return cls(text, text, status, seconds)


async def run_plan(run: Run, calls: list[ToolCall]) -> None:
    """Validate every call, then run them (concurrently unless parallel_tools is false)."""
    prepared, failures = _validate(run, calls)
    if failures and run.config.on_validation_error == "stop":
        _stop_invalid(run, prepared, failures)
    group = run.ledger.begin_plan(calls)
    log.info("Executing %d tool call(s)", len(calls))
    sink = run.sink
    if sink is not None:
        sink.tool_calls(run, calls)
    outcomes, spans = await _execute(run, prepared)
    _record(run, prepared, outcomes, spans, group)


# -- validate ---------------------------------------------------------------------------


def _validate(run: Run, calls: list[ToolCall]) -> tuple[list[Prepared], list[InvalidCall]]:
    """Every call with its tool and arguments, and one failure entry per invalid call."""
    prepared: list[Prepared] = []
    failures: list[InvalidCall] = []
    for call in calls:
        tool = run.tools.get(call.name)
        if tool is None:
            prepared.append(Prepared(call, None, None))
            continue
        try:
            prepared.append(Prepared(call, tool, tool.validate(call)))
        except ToolArgumentsError as exc:
            failures.append(InvalidCall(call_id=call.id, tool=call.name, errors=exc.errors))
            prepared.append(Prepared(call, tool, exc))
    return prepared, failures


def _stop_invalid(run: Run, prepared: list[Prepared], failures: list[InvalidCall]) -> None:
    """``on_validation_error: stop``: record the plan without running it, end the run."""
    statuses: list[ToolCallStatus] = []
    for p in prepared:
        if p.tool is None:
            statuses.append("unknown_tool")
        elif isinstance(p.args, ToolArgumentsError):
            statuses.append("invalid")
        else:
            statuses.append("not_run")
    run.ledger.decline_plan(
        [p.call for p in prepared], "another call of this plan had invalid arguments", statuses
    )
    message = "; ".join(f"{f.tool} ({f.call_id}): {format_errors(f.errors)}" for f in failures)
    run.remember("error", f"Invalid tool arguments: {message}")
    raise RunStopped(
        Termination.validation_error,
        FinalResponse(error=RunError(type="validation_error", message=message, errors=failures)),
    )


# -- execute ----------------------------------------------------------------------------


async def _execute(
    run: Run, prepared: list[Prepared]
) -> tuple[list[Outcome], list[tuple[float, float]]]:
    """Run the calls; their outcomes and simulated (start, end), and advance the clock.

    After a call that aborts the run, sequential calls stop: fewer outcomes than calls.
    """
    start = run.sim_time
    # Streamed, each call reports as it finishes; otherwise nothing is in between.
    call = _call if run.sink is None else _reported
    if run.config.parallel_tools and len(prepared) > 1:
        outcomes = list(await asyncio.gather(*(call(run, p, parallel=True) for p in prepared)))
        spans = [(start, start + o.seconds) for o in outcomes]
    else:
        outcomes, spans, clock = [], [], start
        for p in prepared:
            outcome = await call(run, p, parallel=False)
            outcomes.append(outcome)
            spans.append((clock, clock + outcome.seconds))
            clock += outcome.seconds
            if outcome.abort is not None:
                break
    run.ledger.advance_clock(max([start, *(end for _, end in spans)]))
    return outcomes, spans


async def _reported(run: Run, p: Prepared, *, parallel: bool) -> Outcome:
    """``_call``, then the outcome to the streamed run's events."""
    outcome = await _call(run, p, parallel=parallel)
    sink = run.sink
    if sink is not None:  # always, as _reported runs only for a streamed run
        sink.tool_result(run, p.call, outcome.content, outcome.status)
    return outcome


async def _call(run: Run, p: Prepared, *, parallel: bool) -> Outcome:
    """Run one call; a tool failure becomes an error outcome, never an exception."""
    call, tool, args = p.call, p.tool, p.args
    if tool is None or args is None:  # an unknown tool: its arguments were not validated
        known = ", ".join(sorted(run.tools)) or "none"
        return Outcome.failed(
            f"Unknown tool {call.name!r}. Available tools: {known}", "unknown_tool"
        )
    if isinstance(args, ToolArgumentsError):
        return Outcome.failed(f"Invalid arguments for {call.name}: {args}", "invalid")
    clock = simclock.start_call(parallel=parallel)
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
        # Its message is written for people (file, line, field): no internal class name.
        outcome = Outcome.failed(clean_text(str(exc)))
        outcome.abort = exc
        return outcome
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # the run itself is being cancelled from outside: let it stop
        # The tool raised it itself (a cancelled inner task, say): a tool failure.
        return Outcome.failed(clean_text(f"{type(exc).__name__}: {exc}"), seconds=clock.seconds)
    except Exception as exc:  # a tool failure is reported to the model, never raised
        return Outcome.failed(clean_text(f"{type(exc).__name__}: {exc}"), seconds=clock.seconds)
    return _returned(value, clock.seconds)


def tool_outcome(value: Any, seconds: float = 0.0) -> Outcome:
    """What a tool's return value comes to: the text the model sees, the result records
    keep, the status (harness's MCP server answers a served call with the same)."""
    return _returned(value, seconds)


def _returned(value: Any, seconds: float) -> Outcome:
    """A tool's return value as the model sees it and as results keep it."""
    if isinstance(value, ToolResult):
        outcome = _returned(value.content, seconds)
        if value.is_error:
            outcome.status = "error"
        outcome.sub_run = value.sub_run
        return outcome
    if isinstance(value, str):
        value = clean_text(value)
        return Outcome(value, value, "ok", seconds)
    try:
        result = to_jsonable_python(value, fallback=str)
    except UnicodeEncodeError:
        # pydantic encodes dict keys as UTF-8: a lone surrogate in one fails there.
        result = to_jsonable_python(clean_data(value), fallback=str)
    # Exactly json.dumps(result) (docs/loop.md#tool-plans): what the model sees is stable.
    text = json.dumps(result)
    # json.dumps writes every surrogate as \udXXX (astral characters as a pair of
    # them): only then can a lone one hide in the data.
    if "\\ud" in text:
        cleaned = clean_data(result)
        if cleaned is not result:
            result, text = cleaned, json.dumps(cleaned)
    return Outcome(text, result, "ok", seconds)


# -- record -----------------------------------------------------------------------------


def _record(
    run: Run,
    prepared: list[Prepared],
    outcomes: list[Outcome],
    spans: list[tuple[float, float]],
    group: int,
) -> None:
    """Messages and records in the model's order, then the hooks; an abort ends the run.
    (All come before any hook fires: an observer that raises must not lose the results.)
    """
    ledger = run.ledger
    ran, skipped = prepared[: len(outcomes)], prepared[len(outcomes) :]
    records: list[ToolCallRecord] = []
    for p, outcome, (sim_start, sim_end) in zip(ran, outcomes, spans, strict=True):
        is_error = outcome.status != "ok"
        run.conversation.append(
            ToolMessage(
                tool_call_id=p.call.id, name=p.call.name, content=outcome.content, is_error=is_error
            )
        )
        records.append(
            ledger.record(
                p.call,
                group,
                status=outcome.status,
                is_error=is_error,
                result=outcome.result,
                sim_start=sim_start,
                sim_end=sim_end,
                sub_run=outcome.sub_run,
            )
        )
    abort = next((o.abort for o in outcomes if o.abort is not None), None)
    if abort is not None:
        ledger.abort_plan([p.call for p in prepared], [p.call for p in skipped], group)
    for p, record in zip(ran, records, strict=True):
        run.emit(
            ActionExecutedEvent.of(ledger.iteration, p.call.name, p.call.id, record.status, group)
        )
        if run.observed.action_executed:  # a ToolAction only for a plugin that reads it
            run.notify_action_executed(ToolAction(tool_call=p.call), record)
    if abort is not None:
        raise abort
    _end_on_output_tool(ran, records)


def _end_on_output_tool(ran: list[Prepared], records: list[ToolCallRecord]) -> None:
    """A call to an output tool (``ends_run``) that ran ends the run, completed, with its
    arguments as the output: the first such call of the plan, in the model's order."""
    for p, record in zip(ran, records, strict=True):
        if p.tool is not None and p.tool.ends_run and record.status == "ok":
            raise RunStopped(
                Termination.completed,
                FinalResponse(data=FinalData(output_tool=p.call.name, output=p.call.arguments)),
            )
