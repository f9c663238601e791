"""Live repeated scenarios in the baseline diff: compared by pass rate, never run by run.

Run 3 of today's live run and run 3 of the baseline's are two samples of the same agent,
not the same run: their wording, trajectories and statuses differ by chance. So the runs
of a scenario repeated live (on either side) are compared as a group: its pass rate now
against the baseline's, with a one-sided Fisher exact test (``scipy.stats.fisher_exact``)
of a drop. A drop the test finds significant (p at most ``SIGNIFICANCE``) is a
regression; a smaller one is within noise, shown as such and never counted as a
regression.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.baseline import SIGNIFICANCE, PassRate, PassRateChange
from harness.results import ScenarioResult

__all__ = ["compare_pass_rates", "drop_p_value", "live_groups"]


def live_groups(
    before: Iterable[ScenarioResult], after: Iterable[ScenarioResult]
) -> dict[str, tuple[list[ScenarioResult], list[ScenarioResult]]]:
    """The scenarios repeated on both sides and live (or stochastic) on at least one:
    key -> (the baseline's runs, this run's runs)."""
    old: dict[str, list[ScenarioResult]] = {}
    new: dict[str, list[ScenarioResult]] = {}
    for side, scenarios in ((old, before), (new, after)):
        for s in scenarios:
            if s.run is not None and s.repeats is not None:
                side.setdefault(s.scenario_key, []).append(s)
    return {
        key: (old[key], new[key])
        for key in sorted(old.keys() & new.keys())
        if any(s.repeats is not None and s.repeats.by_rate for s in [*old[key], *new[key]])
    }


def drop_p_value(old: PassRate, new: PassRate) -> float:
    """The one-sided Fisher exact test of a drop from ``old`` to ``new``: the chance of a
    pass rate at least this much lower when both come from the same agent."""
    from scipy.stats import fisher_exact  # type: ignore[import-untyped]

    table = [
        [new.passed, new.runs - new.passed],
        [old.passed, old.runs - old.passed],
    ]
    # "less": the odds of passing now are lower than in the baseline.
    _, p_value = fisher_exact(table, alternative="less")
    return round(float(p_value), 6)


def _rate(runs: list[ScenarioResult]) -> PassRate:
    passed = sum(1 for s in runs if s.status == "passed")
    return PassRate(runs=len(runs), passed=passed, pass_rate=round(passed / len(runs), 6))


def compare_pass_rates(
    groups: dict[str, tuple[list[ScenarioResult], list[ScenarioResult]]],
) -> tuple[list[PassRateChange], int]:
    """The groups whose pass rate moved (by id), and how many kept theirs."""
    changes: list[PassRateChange] = []
    unchanged = 0
    for key, (before, after) in groups.items():
        old, new = _rate(before), _rate(after)
        if old.pass_rate == new.pass_rate:
            unchanged += 1
            continue
        name = after[0].name
        if new.pass_rate > old.pass_rate:
            changes.append(PassRateChange(id=key, name=name, old=old, new=new, verdict="rose"))
            continue
        p_value = drop_p_value(old, new)
        significant = p_value <= SIGNIFICANCE
        changes.append(
            PassRateChange(
                id=key,
                name=name,
                old=old,
                new=new,
                p_value=p_value,
                verdict="regression" if significant else "within_noise",
            )
        )
    return changes, unchanged
