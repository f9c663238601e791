"""Live repeated scenarios in the baseline diff: compared by pass rate, never run by run.

Run 3 of today's live run and run 3 of the baseline's are two samples of the same agent,
not the same run: their wording, trajectories and statuses differ by chance. So the runs
of a scenario repeated live (on either side) are compared as a group: its pass rate now
against the baseline's, with a one-sided Fisher exact test of a drop (the hypergeometric
tail, summed exactly in integers: the same p-values as ``scipy.stats.fisher_exact``, which
a test checks, without the 200 MB of scipy and numpy in every install). A drop the test
finds significant (p at most ``SIGNIFICANCE``) is a regression; a smaller one is within
noise, shown as such and never counted as a regression.

A suite compares many scenarios at once: 200 unchanged ones tested at 5% each would give
ten chance regressions. So the p-values are adjusted for the number compared
(``adjust``, --regression-correction): Holm's step-down by default (S. Holm, "A simple
sequentially rejective multiple test procedure", Scandinavian Journal of Statistics 6,
1979), which keeps the chance of any false regression in the whole suite at most
``SIGNIFICANCE``; or Benjamini and Hochberg's (Journal of the Royal Statistical Society
B 57, 1995), which keeps the expected share of false ones among the regressions there.
"""

from __future__ import annotations

from collections.abc import Iterable
from math import comb

from harness._baseline import SIGNIFICANCE, Correction, PassRate, PassRateChange, RateTest
from harness._results import ScenarioResult

__all__ = ["adjust", "compare_pass_rates", "drop_p_value", "fisher_less", "live_groups"]


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
    # "less": the odds of passing now are lower than in the baseline.
    table = (new.passed, new.runs - new.passed, old.passed, old.runs - old.passed)
    return round(fisher_less(*table), 6)


def fisher_less(a: int, b: int, c: int, d: int) -> float:
    """The one-sided ("less") Fisher exact test of the table [[a, b], [c, d]]: the chance,
    with the margins fixed, of a top-left count of ``a`` or less (scipy.stats.fisher_exact's
    ``alternative="less"``). The hypergeometric terms are whole numbers, summed exactly."""
    row, column, total = a + b, a + c, a + b + c + d
    if total == 0:
        return 1.0
    lowest = max(0, column - (total - row))
    tail = sum(comb(row, k) * comb(total - row, column - k) for k in range(lowest, a + 1))
    return min(1.0, tail / comb(total, column))


def _rate(runs: list[ScenarioResult]) -> PassRate:
    passed = sum(1 for s in runs if s.status == "passed")
    return PassRate(runs=len(runs), passed=passed, pass_rate=round(passed / len(runs), 6))


def adjust(p_values: list[float], correction: Correction) -> list[float]:
    """The p-values adjusted for being tested together (in their order): Holm's or
    Benjamini-Hochberg's adjusted p-values (each compared with the significance level
    as it is), or the p-values themselves (``none``)."""
    m = len(p_values)
    if correction == "none" or m < 2:
        return list(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    if correction == "holm":
        # Step down: the k-th smallest is multiplied by the m - k + 1 hypotheses left,
        # and never falls below an adjusted value before it.
        running = 0.0
        for rank, i in enumerate(order):
            running = max(running, min(1.0, (m - rank) * p_values[i]))
            adjusted[i] = running
    else:
        # Step up: the k-th smallest is multiplied by m / k, and never rises above an
        # adjusted value after it.
        running = 1.0
        for rank in range(m - 1, -1, -1):
            i = order[rank]
            running = min(running, m * p_values[i] / (rank + 1))
            adjusted[i] = running
    return [round(value, 6) for value in adjusted]


def compare_pass_rates(
    groups: dict[str, tuple[list[ScenarioResult], list[ScenarioResult]]],
    correction: Correction = "holm",
) -> tuple[list[PassRateChange], int, RateTest]:
    """The groups whose pass rate moved (by id), how many kept theirs, and how they were
    tested: a drop is a regression when its p-value, adjusted for the number of groups
    compared (``correction``), is at most SIGNIFICANCE."""
    rates = {key: (_rate(before), _rate(after)) for key, (before, after) in groups.items()}
    # Every group compared is one hypothesis of the family (one that kept or raised its
    # rate has p = 1), so the correction counts them all.
    raw = {
        key: drop_p_value(old, new) if new.pass_rate < old.pass_rate else 1.0
        for key, (old, new) in rates.items()
    }
    adjusted = dict(zip(raw, adjust(list(raw.values()), correction), strict=True))
    corrected = correction != "none" and len(groups) > 1
    changes: list[PassRateChange] = []
    unchanged = 0
    for key, (old, new) in rates.items():
        if old.pass_rate == new.pass_rate:
            unchanged += 1
            continue
        name = groups[key][1][0].name
        if new.pass_rate > old.pass_rate:
            changes.append(PassRateChange(id=key, name=name, old=old, new=new, verdict="rose"))
            continue
        changes.append(
            PassRateChange(
                id=key,
                name=name,
                old=old,
                new=new,
                p_value=raw[key],
                adjusted_p_value=adjusted[key] if corrected else None,
                verdict="regression" if adjusted[key] <= SIGNIFICANCE else "within_noise",
            )
        )
    return changes, unchanged, RateTest(correction=correction, compared=len(groups))
