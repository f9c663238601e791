"""What the report shows of repeated scenarios: a pass-rate table, and for each flaky
scenario (its runs disagree) a run that passed beside one that did not."""

from __future__ import annotations

from typing import Any

from harness.report.diff import trajectory
from harness.report.text import ending_sentence
from harness.results import ScenarioResult

__all__ = ["repeats_view"]


def _side(run: ScenarioResult, anchors: dict[str, str]) -> dict[str, Any]:
    """One run as its column of the comparison shows it."""
    return {
        "id": run.id,
        "run": run.run,
        "anchor": anchors.get(run.id),
        "status": run.status,
        "termination": run.termination.value,
        "iterations": run.iterations,
        "llm_calls": run.llm_calls,
        "trajectory": trajectory(run),
        "ending": ending_sentence(run),
        "unmet": [e.path for e in run.failed_expectations],
    }


def repeats_view(scenarios: list[ScenarioResult], anchors: dict[str, str]) -> list[dict[str, Any]]:
    """One row per repeated scenario (in id order): its pass rate, and its runs; a flaky
    one also gets ``sides``: its first passing run and its first run that did not pass."""
    groups: dict[str, list[ScenarioResult]] = {}
    for s in scenarios:
        if s.repeats is not None:
            groups.setdefault(s.scenario_key, []).append(s)
    rows = []
    for key in sorted(groups):
        runs = groups[key]
        repeats = runs[0].repeats
        assert repeats is not None
        row: dict[str, Any] = {
            "key": key,
            "name": runs[0].name,
            "repeats": repeats,
            "runs": [(r.run, r.status, anchors.get(r.id)) for r in runs],
            "sides": None,
        }
        if repeats.flaky:
            passed = next(r for r in runs if r.status == "passed")
            other = next(r for r in runs if r.status != "passed")
            row["sides"] = (_side(passed, anchors), _side(other, anchors))
        rows.append(row)
    return rows
