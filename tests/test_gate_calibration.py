"""The calibration benchmark's pieces (benchmarks/gate_calibration.py), small: its fixed
count is the binomial one, its simulation draws as harness draws, and sequential repeats
use far fewer runs than that count at the same error rates (the published figures come
from the benchmark itself: docs/performance.md#the-gates-error-rates)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

from harness._sequential import SequentialPlan
from harness.llm._script import draw_material, parse_step, uniform

# The benchmark's module, by its file (plain `pytest` does not put the repository on
# sys.path, and benchmarks/ is no installed package).
_FILE = Path(__file__).resolve().parents[1] / "benchmarks" / "gate_calibration.py"
_SPEC = importlib.util.spec_from_file_location("gate_calibration", _FILE)
assert _SPEC is not None and _SPEC.loader is not None
gate = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(gate)
fixed_runs, passes, regressions, sequential = (
    gate.fixed_runs,
    gate.passes,
    gate.regressions,
    gate.sequential,
)


def _tail(n: int, c: int, p: float) -> float:
    return sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(c, n + 1))


def test_the_fixed_count_is_the_smallest_with_the_same_error_rates():
    plan = SequentialPlan(max_runs=1000, min_pass_rate=0.8)
    n, c = fixed_runs(plan)
    assert (n, c) == (41, 34)
    assert _tail(n, c, 0.7) <= 0.05 and 1 - _tail(n, c, 0.9) <= 0.05
    # One run fewer cannot keep both rates, whatever the count needed.
    assert not any(
        _tail(n - 1, k, 0.7) <= 0.05 and 1 - _tail(n - 1, k, 0.9) <= 0.05 for k in range(n)
    )


def test_the_simulation_draws_as_a_scripted_run_does():
    step = parse_step(
        0, {"one_of": [{"weight": 0.8, "content": "right"}, {"weight": 0.2, "content": "wrong"}]}
    )
    drawn = sum(
        step.draw(uniform(draw_material("a::a", k, 3), "script 1", 0)).content == "right"
        for k in range(1, 31)
    )
    assert passes("a::a", 0.8, 30, 3) == drawn


def test_sequential_repeats_use_far_fewer_runs_than_the_fixed_count():
    plan = SequentialPlan(max_runs=1000, min_pass_rate=0.8)
    measured = sequential(plan, trials=100)
    assert measured["mean"] <= 0.6 * fixed_runs(plan)[0]
    assert measured["runs"][0.975] < 20 and measured["runs"][0.025] < 5


def test_the_gate_corrects_for_the_scenarios_compared():
    # One drop from 16/20 to 6/20 among 199 unchanged scenarios: alone it is significant,
    # among 200 it is not (Holm); uncorrected, every small chance drop would count too.
    counts = [(16, 6)] + [(15, 15)] * 199
    assert regressions(counts, 20, "none") == {0}
    assert regressions(counts, 20, "holm") == set()
