"""What the report shows of repeated scenarios: a pass-rate table, and for each flaky
scenario (its runs disagree) a run that passed beside one that did not."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from harness._results import ScenarioResult
from harness.report._diff import trajectory
from harness.report._text import ending_sentence

if TYPE_CHECKING:
    from harness.report._cards import Digest

__all__ = ["FlakySides", "repeats_view"]


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


class FlakySides:
    """For each flaky scenario, its first run that passed and its first that did not, as
    their columns show them: taken as the runs go by, so that the report reads each run
    once and keeps only these two of a scenario's runs."""

    def __init__(self) -> None:
        self._sides: dict[str, list[dict[str, Any] | None]] = {}

    def add(self, run: ScenarioResult, anchor: str | None) -> None:
        """Look at one run (in id order)."""
        if run.repeats is None or not run.repeats.flaky:
            return
        pair = self._sides.setdefault(run.scenario_key, [None, None])
        at = 0 if run.status == "passed" else 1
        if pair[at] is None:
            pair[at] = _side(run, {run.id: anchor} if anchor else {})

    def of(self, key: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The two sides of a flaky scenario (None: not flaky, or a side not seen)."""
        passed, other = self._sides.get(key, (None, None))
        return (passed, other) if passed is not None and other is not None else None


def repeats_view(
    scenarios: Iterable[Digest], anchors: dict[str, str], sides: FlakySides
) -> list[dict[str, Any]]:
    """One row per repeated scenario (in id order): its pass rate, and its runs; a flaky
    one also gets ``sides``: its first passing run and its first run that did not pass."""
    groups: dict[str, list[Digest]] = {}
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
            "sides": sides.of(key) if repeats.flaky else None,
        }
        rows.append(row)
    return rows
