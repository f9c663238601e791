"""The baseline diff: what changed between a saved run (the baseline) and this one.

Scenarios are matched by id; the categories (regressions, fixed, changed, added, removed,
not run) are the fields of ``harness._baseline.BaselineDiff``. Only fields that are
identical across runs of the same inputs are compared (``wall_time``, ``wall_clock`` and
``meta`` never are), so an unchanged suite diffs empty.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterator, Sequence
from typing import Any

from harness._actions import FinalResponse
from harness._baseline import (
    BaselineDiff,
    Correction,
    FieldChange,
    LostBehaviour,
    PassRateChange,
    ScenarioChange,
    ScenarioRef,
    StatusChange,
    TrajectoryChange,
    TrajectoryOp,
)
from harness._canonical import canonical_json
from harness._coverage import no_longer_covered
from harness._modeljson import dump
from harness._results import Results, ScenarioResult
from harness._spool import ScenarioList
from harness.report._passrates import compare_pass_rates, live_groups
from harness.report._plans import plans

__all__ = ["diff_results", "plan_text", "trajectory"]

# -- trajectories ------------------------------------------------------------------------


def plan_text(calls: list[Any]) -> str:
    """One plan as text: ``name {args}`` per call in the model's order, ``||`` between
    parallel calls, and ``[status]`` after a call that did not run ``ok``."""
    parts = []
    for call in calls:
        text = f"{call.name} {canonical_json(call.arguments)}"
        if call.status != "ok":
            text += f" [{call.status}]"
        parts.append(text)
    return " || ".join(parts)


def trajectory(scenario: ScenarioResult) -> list[str]:
    """The scenario's tool-call trajectory: one string per plan (group), in order."""
    return [plan_text(calls) for calls in plans(scenario).values()]


def _trajectory_change(old: ScenarioResult, new: ScenarioResult) -> TrajectoryChange | None:
    a, b = trajectory(old), trajectory(new)
    if a == b:
        return None
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    ops = [
        TrajectoryOp(op=tag, old=a[i1:i2], new=b[j1:j2])
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
    ]
    return TrajectoryChange(old=a, new=b, ops=ops)


# -- comparing ----------------------------------------------------------------------------


def _final_dict(final: FinalResponse) -> dict[str, Any]:
    return dump(final, mode="json")


def _count_change(old: int, new: int) -> FieldChange | None:
    return None if old == new else FieldChange(old=old, new=new, delta=new - old)


def _detector(scenario: ScenarioResult) -> dict[str, Any]:
    """Which detector stopped the run (the seed's repeat when final.data names none) and
    the detector settings."""
    fired = None
    if scenario.termination.value == "stagnation":
        detector = scenario.final.data.detector
        fired = detector if detector is not None else "repeat"
    agent = scenario.agent
    detectors = agent.detectors if agent is not None else None
    return {
        "fired": fired,
        "detectors": None
        if detectors is None
        else {k: v.model_dump(mode="json") for k, v in detectors.items()},
        "on_stuck": agent.on_stuck if agent is not None else "stop",
    }


def _budget(scenario: ScenarioResult) -> dict[str, Any]:
    """Which budget ended the run, what it used, and the budget settings."""
    ended = scenario.termination.value == "budget"
    data = scenario.final.data
    budget = scenario.agent.budget if scenario.agent is not None else None
    return {
        "ended": data.budget if ended else None,
        "used": data.used if ended else None,
        "budget": None if budget is None else budget.model_dump(mode="json", exclude_none=True),
    }


def _guard_change(old: dict[str, Any], new: dict[str, Any]) -> FieldChange | None:
    return None if old == new else FieldChange(old=old, new=new)


def _compare(old: ScenarioResult, new: ScenarioResult) -> ScenarioChange | None:
    change = ScenarioChange(id=new.id, name=new.name)
    if old.status != new.status:
        change.status = FieldChange(old=old.status, new=new.status)
    if old.termination != new.termination:
        change.termination = FieldChange(old=old.termination.value, new=new.termination.value)
    change.detector = _guard_change(_detector(old), _detector(new))
    change.budget = _guard_change(_budget(old), _budget(new))
    change.iterations = _count_change(old.iterations, new.iterations)
    change.llm_calls = _count_change(old.llm_calls, new.llm_calls)
    change.tool_calls = _trajectory_change(old, new)
    old_final, new_final = _final_dict(old.final), _final_dict(new.final)
    if old_final != new_final:
        change.final = FieldChange(old=old_final, new=new_final)
    return change if change.fields else None


def _ref(scenario: ScenarioResult) -> ScenarioRef:
    return ScenarioRef(
        id=scenario.id,
        name=scenario.name,
        status=scenario.status,
        termination=scenario.termination.value,
    )


def _status_change(old: ScenarioResult, new: ScenarioResult) -> StatusChange:
    return StatusChange(
        id=new.id,
        name=new.name,
        old_status=old.status,
        new_status=new.status,
        old_termination=old.termination.value,
        new_termination=new.termination.value,
        failed_expectations=[e.path for e in new.failed_expectations],
    )


def diff_results(
    old: Results,
    new: Results,
    *,
    source: str | None = None,
    not_run: Collection[str] = (),
    correction: Correction = "holm",
) -> BaselineDiff:
    """Compare ``new`` with the baseline ``old``, scenario by scenario (matched by id).

    ``source`` names the baseline (its path) in the diff. Baseline ids in ``not_run``
    that ``new`` lacks go to ``not_run`` instead of ``removed``. Every list is sorted by id.
    A scenario repeated live (or with stochastic steps) is compared by its pass rate
    (harness.report._passrates), not run by run: a drop's p-value is adjusted for the
    scenarios compared so (``correction``), and a significant drop is a regression. Both
    sides are gone through side by side in results order, one scenario of each at a time
    (a ScenarioList on disk stays there).
    """
    groups = live_groups(old.scenarios, new.scenarios)
    diff = BaselineDiff(source=source, baseline_started=_started(old))
    diff.pass_rates, diff.unchanged, rate_test = compare_pass_rates(groups, correction)
    diff.rate_test = rate_test if groups else None
    diff.regressions.extend(r for r in diff.pass_rates if r.verdict == "regression")
    diff.compared = len(groups)
    pairs = _pairs(_in_order(old.scenarios, groups), _in_order(new.scenarios, groups))
    for was, now in pairs:
        if was is None or now is None:
            if now is not None:
                diff.added.append(_ref(now))
            elif was is not None:
                (diff.not_run if was.id in not_run else diff.removed).append(_ref(was))
            continue
        diff.compared += 1
        if was.status == "passed" and now.status != "passed":
            diff.regressions.append(_status_change(was, now))
        elif was.status != "passed" and now.status == "passed":
            diff.fixed.append(_status_change(was, now))
        change = _compare(was, now)
        if change is None:
            diff.unchanged += 1
        else:
            diff.changed.append(change)
    # Results order puts name[2] before name[10]; the diff's lists are by id.
    for found in (diff.added, diff.removed, diff.not_run, diff.regressions, diff.fixed):
        found.sort(key=_by_id)
    diff.changed.sort(key=_by_id)
    if old.coverage is not None and new.coverage is not None:
        left_out = [ref.id for ref in diff.not_run]
        diff.no_longer_covered = [
            LostBehaviour(kind=cell.kind, key=cell.key, scenarios=cell.scenarios)
            for cell in no_longer_covered(old.coverage, new.coverage, left_out)
        ]
    return diff


def _by_id(item: ScenarioRef | StatusChange | ScenarioChange | PassRateChange) -> str:
    return item.id


def _place(scenario: ScenarioResult) -> tuple[str, int]:
    """Where a scenario is in results order: by id, a repeated one's runs by number."""
    return (scenario.scenario_key, scenario.run or 0)


def _in_order(
    scenarios: Sequence[ScenarioResult], live: Collection[str]
) -> Iterator[ScenarioResult]:
    """The scenarios outside the live groups in results order, one at a time; of an id
    given twice, the last (as a dict by id keeps).

    A list is sorted here (it is in memory already); a ScenarioList is in results order
    (build_results and load_results make them so) and is read as it comes.
    """
    if not isinstance(scenarios, ScenarioList):
        scenarios = sorted(scenarios, key=_place)
    held: ScenarioResult | None = None
    for scenario in scenarios:
        if scenario.scenario_key in live:
            continue
        if held is not None and held.id != scenario.id:
            if _place(scenario) < _place(held):
                raise ValueError(f"scenarios out of results order: {scenario.id} after {held.id}")
            yield held
        held = scenario
    if held is not None:
        yield held


def _pairs(
    old: Iterator[ScenarioResult], new: Iterator[ScenarioResult]
) -> Iterator[tuple[ScenarioResult | None, ScenarioResult | None]]:
    """Both sides in results order joined by id: (the baseline's, this run's), None on
    the side that lacks the id."""
    was, now = next(old, None), next(new, None)
    while was is not None or now is not None:
        if now is None or (was is not None and _place(was) < _place(now)):
            yield was, None
            was = next(old, None)
        elif was is None or _place(now) < _place(was):
            yield None, now
            now = next(new, None)
        else:
            yield was, now
            was, now = next(old, None), next(new, None)


def _started(results: Results) -> str | None:
    started = results.meta.get("started")
    return started if isinstance(started, str) else None
