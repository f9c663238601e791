"""How a run reads as text, for the terminal and the HTML report alike.

- ``format_failure``: why a scenario did not pass, with a compact trajectory (one line
  per iteration, ``trajectory_lines``), what pytest prints for a failed scenario item;
- ``ending_sentence``: the one sentence on how a run ended that the report shows;
- ``results_lines`` / ``repeat_lines`` / ``baseline_lines``: the counts, the repeated
  and flaky scenarios, and the baseline diff of the end-of-run summary (the report
  sections, the budget's among them, are ``harness.report._sections``'s).

The trajectory is built on the run's plans (``harness.report._plans``), as the timeline
and the baseline diff are.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Mapping
from typing import Any

from harness._actions import RunError
from harness._baseline import BaselineDiff
from harness._errors import printable
from harness._repeats import Repeats
from harness._results import Results, ScenarioResult
from harness._secrets import scrub_model
from harness.events import LLMFailedEvent, LLMRequestEvent, LLMResponseEvent
from harness.report._changes import (
    change_details,
    counted,
    divergence_lines,
    rate_sentence,
    rate_test_sentence,
    repeats_text,
)
from harness.report._plans import plans
from harness.report._timeline import failure_text, is_target

__all__ = [
    "baseline_lines",
    "ending_sentence",
    "format_failure",
    "repeat_lines",
    "results_lines",
    "skipped_lines",
    "target_failure",
    "trajectory_lines",
]

# The longest error message a failure shows whole (-v shows any).
_MESSAGE_LINES = 100

# Values in a trajectory line are cut at this many characters (-v: never).
_TRAJECTORY_LIMIT = 60

# The summary names at most this many changed (or skipped) scenarios.
_NAMED = 20

# The summary's "slowest" list leaves out what would print as 0.00s.
_SHOWN_WALL_TIME = 0.005


# -- failure text --------------------------------------------------------------------------


def _value(value: Any, limit: int | None) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    if limit is not None and len(text) > limit:
        return f"{text[:limit]}… ({len(text) - limit} more characters; -v shows all)"
    return text


def format_failure(result: ScenarioResult, *, verbose: bool = False) -> str:
    """Why a scenario did not pass: each unmet expectation, then a compact trajectory."""
    result = scrub_model(result)  # before long values are shortened
    limit = None if verbose else 300
    message = _error_message(result)
    lines = _error_header(result, message)
    lines.extend(_stderr_lines(result, verbose))
    lines.extend(_unmet_expectations(result, limit))
    lines.append(
        f"trajectory ({result.agent.planner if result.agent else 'planner'}, "
        f"{result.iterations} iteration(s), "
        f"{result.llm_calls} LLM call(s)):"
    )
    lines.extend("  " + line for line in trajectory_lines(result, verbose=verbose))
    if message and _shown_below(result, message, None if verbose else _TRAJECTORY_LIMIT):
        # A cassette miss's diff, a traceback-like text: readable only as its own lines.
        lines.append(f"{result.termination.value} message:")
        shown = message.splitlines()
        if not verbose and len(shown) > _MESSAGE_LINES:
            hidden = len(shown) - _MESSAGE_LINES
            shown = [*shown[:_MESSAGE_LINES], f"... {hidden} more line(s); -v shows all"]
        lines.extend("  " + line for line in shown)
    return "\n".join(lines)


def _error_header(result: ScenarioResult, message: str) -> list[str]:
    """The first lines of a scenario that ended in error: what was raised."""
    if result.status != "error":
        return []
    error = result.final.error or RunError()
    first = message.splitlines()[0] if message else ""
    if is_target(result):
        # The target's own code failed, not the scenario or harness.
        return [f"scenario {result.name!r}: {target_failure(error, first)}"]
    kind = error.exception or error.type or "error"
    return [
        f"scenario {result.name!r} ended in error (a scenario or harness bug)",
        f"  {kind}: {first}",
    ]


def target_failure(error: RunError, message: str) -> str:
    """How a target failed: ``the target raised ValueError (at myagents/bad.py:12 in
    raises): my agent broke``, its command's exit (with the last line of its stderr), or
    its timeout."""
    if error.type == "timeout":
        return message
    if error.exit_status is not None:
        last = _last_line(error.stderr)
        return f"the target failed: {message}" + (f": {last}" if last else "")
    at = f" (at {error.where})" if error.where else ""
    return f"the target raised {error.exception or 'an exception'}{at}: {message}"


# A crashed command's stderr lines shown under its failure (-v shows them all).
_STDERR_LINES = 20


def _last_line(text: str | None) -> str:
    """The last line of a text that says something (a traceback's exception)."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _stderr_lines(result: ScenarioResult, verbose: bool) -> list[str]:
    """A command target's stderr, as the lines it wrote (its tail, unless ``verbose``)."""
    error = result.final.error
    if error is None or not error.stderr or result.status != "error":
        return []
    lines = error.stderr.rstrip().splitlines()
    head = "the target's stderr:"
    if not verbose and len(lines) > _STDERR_LINES:
        head = f"the target's stderr (its last {_STDERR_LINES} lines; -v shows all):"
        lines = lines[-_STDERR_LINES:]
    return [head, *("  " + line for line in lines)]


def _unmet_expectations(result: ScenarioResult, limit: int | None) -> list[str]:
    """Each unmet expectation with its expected and actual values."""
    failed = result.failed_expectations
    if not failed:
        return []
    lines = [
        f"scenario {result.name!r}: {len(failed)} of {len(result.expectations)} "
        "expectation(s) not met"
    ]
    for e in failed:
        lines.append(f"  expect.{e.path}")
        lines.append(f"    expected: {_value(e.expected, limit)}")
        lines.append(f"    actual:   {_value(e.actual, limit)}")
    return lines


def _shown_below(result: ScenarioResult, message: str, limit: int | None) -> bool:
    """Whether an error message gets lines of its own below the trajectory: when it has
    several, or is too long for the trajectory's last line (and not already whole in the
    header of a scenario that ended in error)."""
    if "\n" in message:
        return True
    return result.status != "error" and limit is not None and len(_value(message, None)) > limit


def _error_message(result: ScenarioResult) -> str:
    """final.error's message, whatever ended the run ('' without one).

    The trajectory's last line says "(message below)" for any long one: a validation
    error listing several calls, say, as much as an LLM error's diff.
    """
    error = result.final.error
    return error.message if error is not None else ""


# -- the compact trajectory ----------------------------------------------------------------


def trajectory_lines(result: ScenarioResult, *, verbose: bool = False) -> list[str]:
    """One line per iteration: ``N  llm#k -> tools asked; ran: calls`` and the ending."""
    limit = None if verbose else _TRAJECTORY_LIMIT
    rows = _llm_parts(result, limit)
    for iteration, calls in _calls_by_iteration(result).items():
        rows.setdefault(iteration, []).append(_plan_part(result, calls, limit))
    lines = []
    last = max(result.iterations, max(rows, default=0))
    for it in range(1, last + 1):
        parts = rows.get(it)
        if parts:
            lines.append(f"{it:>3}  " + "; ".join(parts))
        elif it < last:
            lines.append(f"{it:>3}  (planner step, no LLM call or tool)")
    lines.append(f"  => {_trajectory_ending(result, limit)}")
    # Tool names may come from outside (a target's calls to harness's MCP server).
    lines = [printable(line) for line in lines]
    if not verbose and len(lines) > 24:
        hidden = len(lines) - 20
        lines = [*lines[:10], f"  ... {hidden} more iteration(s); -v shows all ...", *lines[-10:]]
    return lines


def _llm_parts(result: ScenarioResult, limit: int | None) -> dict[int, list[str]]:
    """Per iteration, its LLM calls: ``llm#k -> tools asked`` (or ``text``, ``failed``),
    a target's call named by its conversation when it held several (``llm#2 researcher``)."""
    rows: dict[int, list[str]] = {}
    named = {call: c.conversation for c in result.conversations for call in c.calls}

    def llm(call: int) -> str:
        return f"llm#{call} {named[call]}" if call in named else f"llm#{call}"

    for event in result.events:
        if isinstance(event, LLMFailedEvent):
            why = failure_text(event)
            if limit is not None and len(why) > limit:
                why = why[:limit] + "…"
            rows.setdefault(event.iteration, []).append(f"{llm(event.call)} -> failed ({why})")
        elif isinstance(event, LLMResponseEvent):
            names = event.tool_calls
            text = f"{llm(event.call)} -> " + (", ".join(names) if names else "text")
            if event.finish_reason == "length":
                text += " (truncated)"
            rows.setdefault(event.iteration, []).append(text)
        elif isinstance(event, LLMRequestEvent):
            rows.setdefault(event.iteration, []).append(f"{llm(event.call)} -> ?")
    for it, parts in rows.items():
        # A request without a response failed: the run's ending says how.
        rows[it] = [p.replace(" -> ?", " -> failed") for p in parts if not _superseded(p, parts)]
    return rows


def _calls_by_iteration(result: ScenarioResult) -> dict[int, list[Any]]:
    """The calls of the plans of each iteration, in order."""
    by_iteration: dict[int, list[Any]] = {}
    for calls in plans(result).values():
        by_iteration.setdefault(calls[0].iteration, []).extend(calls)
    return by_iteration


def _plan_part(result: ScenarioResult, calls: list[Any], limit: int | None) -> str:
    """``ran in parallel: name(args), ...`` (or how else the calls ran, or not)."""
    ran = [c for c in calls if c.status in ("ok", "error")]
    together = (result.agent is None or result.agent.parallel_tools) and _parallel(ran)
    if not ran and is_target(result):  # no later request carried their results
        label = "results not seen"
    elif not ran:  # declined by stagnation, stopped by validation, left at the limit
        label = "not run"
    elif together:
        label = "ran in parallel"
    else:
        label = "ran one after another" if len(ran) > 1 else "ran"
    return f"{label}: " + ", ".join(_call_text(c, limit) for c in calls)


def _call_text(call: Any, limit: int | None) -> str:
    args = ", ".join(
        f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in call.arguments.items()
    )
    if limit is not None and len(args) > limit:
        args = args[:limit] + "…"
    status = "" if call.status == "ok" else f" [{call.status}]"
    return f"{call.name}({args}){status}"


def _superseded(part: str, parts: list[str]) -> bool:
    # "llm#2 -> ?" is dropped when "llm#2 -> <reply>" is in the same iteration.
    if not part.endswith(" -> ?"):
        return False
    head = part[: -len("?")]
    return any(p.startswith(head) and p != part for p in parts)


def _parallel(calls: list[Any]) -> bool:
    return len({c.group for c in calls}) == 1 and len(calls) > 1


def _trajectory_ending(result: ScenarioResult, limit: int | None) -> str:
    """The trajectory's last line: the termination and what the run ended with."""
    final = result.final
    text = result.termination.value
    if final.error:
        error = final.error
        message = error.message or (error.type if "type" in error else "")
        if _shown_below(result, message, limit):
            # The start of it: format_failure prints the whole text below the trajectory.
            first = message.splitlines()[0]
            if limit is not None and len(first) > limit:
                first = first[:limit] + "…"
            return f"{text}: {_value(first, None)} (message below)"
        return f"{text}: {_value(message, limit)}"
    if final.content:
        return f"{text}: {_value(final.content, limit)}"
    if final.data:
        return f"{text}: data {_value(final.data.model_dump(), limit)}"
    return text


# -- the report's ending sentence ----------------------------------------------------------


def ending_sentence(scenario: ScenarioResult) -> str:
    """One sentence on how the run ended, as the report says it."""
    final = scenario.final
    kind = scenario.termination.value
    if kind == "completed" and final.content is None and is_target(scenario):
        return "Completed without a final answer (the target returned None)"
    if kind == "completed":
        return "Completed with a final response" + (
            " (truncated: finish_reason length)" if final.data.truncated else ""
        )
    if kind == "empty":
        return "Nothing to do: the planner returned an empty action"
    if kind == "stagnation" and final.data.detector is not None:
        return f"Stuck ({final.data.detector}): the run was stopped"
    if kind == "budget":
        data = final.data
        return f"Budget exceeded: {data.budget} used {data.used}, limit {data.limit}"
    if kind == "stagnation" and is_target(scenario) and scenario.agent is not None:
        # The observer sees a plan only once it ran: the request after it is refused.
        repeats = scenario.agent.stagnation_window + 1
        return (
            f"Stagnation: the same plan ran {repeats} times in a row; the agent's next "
            "request was refused (HTTP 400)"
        )
    if kind == "stagnation":
        window = scenario.agent.stagnation_window if scenario.agent else final.data.window
        return (
            f"Stagnation: the plan repeated the previous {window} identical plans and was declined"
        )
    if kind == "max_iterations" and is_target(scenario) and final.error:
        # The framework's own limit: harness's max_iterations never applied.
        error = final.error
        return f"Max iterations reached: {error.exception}: {error.message}"
    if kind == "max_iterations":
        limit = scenario.agent.max_iterations if scenario.agent else scenario.iterations
        return f"Max iterations reached ({limit})" + (
            ", with a final answer" if final.content is not None else ""
        )
    if kind == "validation_error":
        return "Stopped: a tool call had invalid arguments, so no call of the plan ran"
    if kind == "llm_error":
        error = final.error or RunError()
        status = f" (HTTP {error.status})" if error.status else ""
        return f"LLM call failed{status}: {error.message}"
    if kind == "tool_error":
        error = final.error or RunError()
        return f"Tool server failed: {error.message}"
    if kind == "error" and is_target(scenario):
        error = final.error or RunError()
        text = target_failure(error, error.message)
        return text[0].upper() + text[1:]
    if kind == "error":
        error = final.error or RunError()
        exception = error.exception if "exception" in error else "exception"
        return f"Error: {exception}: {error.message}"
    return kind


# -- the end-of-run summary ----------------------------------------------------------------


def results_lines(results: Results, *, slowest: int = 5) -> list[str]:
    """The summary's counts by status and termination, and the slowest scenarios."""
    s = results.summary
    lines = [
        f"scenarios: {s.total} ("
        + ", ".join(f"{n} {k}" for k, n in s.by_status.items())
        + f"), simulated time {s.sim_time:.2f}s",
        "terminations: " + ", ".join(f"{k} {n}" for k, n in s.by_termination.items()),
    ]
    lines.extend(repeat_lines(results))
    # The budget is a report section (harness.report._summary), shown after these lines.
    # Entries that would print as 0.00s say nothing: a quick suite gets no list.
    # (wall time, id) only: results.scenarios may be a large suite's, read from disk.
    times = ((r.wall_time, r.id) for r in results.counted() if r.wall_time >= _SHOWN_WALL_TIME)
    slow = heapq.nsmallest(slowest, times, key=lambda t: (-t[0], t[1]))
    if slow:
        lines.append("slowest:")
        lines.extend(f"  {wall:7.2f}s  {sid}" for wall, sid in slow)
    return lines


def repeat_lines(results: Results) -> list[str]:
    """Repeated scenarios: how many passed every run; each flaky one, or one judged by its
    pass rate, with its pass rate, 95% interval and verdict, and where its runs part."""
    repeats: dict[str, Repeats] = {}
    for s in results.counted():
        if s.repeats is not None:
            repeats.setdefault(s.scenario_key, s.repeats)
    if not repeats:
        return []
    every = sum(1 for r in repeats.values() if r.pass_all)
    flaky = sum(1 for r in repeats.values() if r.flaky)
    below = sum(1 for r in repeats.values() if not r.passes and r.min_pass_rate is not None)
    lines = [
        f"repeated: {len(repeats)} scenario(s), {every} passed every run, "
        f"{flaky} flaky (runs disagree)" + (f", {below} below its min_pass_rate" if below else "")
    ]
    for key, r in repeats.items():
        if not (r.flaky or r.min_pass_rate is not None or r.divergence is not None):
            continue
        label = (
            "below min_pass_rate"
            if r.min_pass_rate is not None and not r.passes
            else ("flaky" if r.flaky else "repeated")
        )
        lines.append(f"  {label}: {key}: {repeats_text(r)}")
        if r.divergence is not None:
            lines.extend("    " + line for line in divergence_lines(r.divergence))
    return lines


def skipped_lines(skipped: Mapping[str, str]) -> list[str]:
    """The scenarios that were skipped, each with why (at most 20 named)."""
    if not skipped:
        return []
    lines = [f"skipped: {len(skipped)} (not run, so not in results.json)"]
    shown = sorted(skipped.items())
    lines.extend(f"  {key}: {why}" for key, why in shown[:_NAMED])
    if len(shown) > _NAMED:
        lines.append(f"  ... and {len(shown) - _NAMED} more (results.json lists every one)")
    return lines


def baseline_lines(diff: BaselineDiff, shown: str, *, report: str | None = None) -> list[str]:
    """The summary's baseline diff: counts, each regression, each change with its values
    (shortened: harness.report._changes), each moved live pass rate, and the report."""
    counts = ", ".join(counted(n, k) for k, n in diff.counts().items())
    not_run = len(diff.not_run)
    lines = [f"baseline {shown}: {counts}" + (f", {not_run} not run" if not_run else "")]
    for entry in diff.status_regressions:
        unmet = (
            f"; unmet: {', '.join(entry.failed_expectations)}" if entry.failed_expectations else ""
        )
        lines.append(f"  regression: {entry.id} ({entry.old_status} -> {entry.new_status}{unmet})")
    if diff.rate_test is not None and diff.pass_rates:
        lines.append(f"  {rate_test_sentence(diff.rate_test)}")
    for rate in diff.pass_rates:
        label = {"regression": "regression", "within_noise": "within noise"}.get(
            rate.verdict, "pass rate rose"
        )
        lines.append(f"  {label}: {rate.id}: {rate_sentence(rate, diff.rate_test)}")
    for change in diff.changed[:_NAMED]:
        lines.append(f"  changed: {change.id}")
        lines.extend(f"    {line}" for line in change_details(change))
    if len(diff.changed) > _NAMED:
        lines.append(f"  ... and {len(diff.changed) - _NAMED} more changed")
    lost = diff.no_longer_covered
    if lost:
        lines.append(f"  no longer covered: {len(lost)} behaviour(s)")
        for cell in lost[:_NAMED]:
            was = ", ".join(cell.scenarios[:3]) + (" ..." if len(cell.scenarios) > 3 else "")
            lines.append(f"    {cell.kind} {cell.key}" + (f" (was: {was})" if was else ""))
        if len(lost) > _NAMED:
            lines.append(f"    ... and {len(lost) - _NAMED} more")
    if report is not None and not diff.is_empty:
        lines.append(f"  details: {report}")
    return lines
