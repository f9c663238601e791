"""The gate's error rates, measured: false regressions, power, sequential repeats.

Suites of stochastic scenarios with known true pass rates (each one a ``one_of`` step:
the right answer with weight p, a wrong one with 1 - p) are run at the statistics level:
each run's outcome is drawn exactly as harness draws it (``harness.llm._script.uniform``
over the scenario's id, the run's number and the seed; the step's ``draw``), a baseline
with one seed, the run with another, and the gate harness applies (one-sided Fisher
exact tests, ``harness.report._passrates.adjust``) decides the regressions:

- false regressions: the share of suites of 200 unchanged scenarios with at least one
  regression, per correction (target: at most 5% with the default, Holm's);
- power: the share of suites in which one scenario whose pass rate fell by 10, 20 or 30
  points is the regression found (the other 199 unchanged);
- sequential repeats (Wald's test, harness._sequential): the runs used, on average over
  true pass rates spread over 0 to 1, against the fixed number of runs that has the same
  error rates (target: at least 40% fewer), and the error rates measured;
- end to end: one real suite through ``harness run`` (a baseline with one seed, a run
  with another, one scenario's pass rate 60 points lower), whose pass counts and
  regressions must equal what the simulation draws and decides for the same ids, runs
  and seeds.

    python benchmarks/gate_calibration.py [--suites 1000] [--scenarios 200] [--runs 20]
    python -m benchmarks gate_calibration

Exits 1 when a target is missed. Offline: no model, no network.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from functools import cache, lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness._baseline import SIGNIFICANCE, PassRate  # noqa: E402
from harness._sequential import SequentialPlan, decide  # noqa: E402
from harness.llm._script import ScriptStep, draw_material, parse_step, uniform  # noqa: E402
from harness.report._passrates import adjust, drop_p_value  # noqa: E402

DROPS = (0.10, 0.20, 0.30)
CORRECTIONS = ("holm", "bh", "none")


@lru_cache(maxsize=1024)
def _step(rate: float) -> ScriptStep:
    """The stochastic step of an agent that passes with probability ``rate``."""
    options = [{"weight": rate, "content": "right"}, {"weight": 1 - rate, "content": "wrong"}]
    options = [o for o in options if o["weight"] > 0]
    return parse_step(0, {"one_of": options})


def passes(scenario: str, rate: float, runs: int, seed: int) -> int:
    """How many of ``runs`` runs pass, each drawn as harness draws run k of the scenario."""
    step = _step(rate)
    return sum(
        step.draw(uniform(draw_material(scenario, k, seed), "script 1", 0)).content == "right"
        for k in range(1, runs + 1)
    )


@cache
def p_value(old: int, new: int, runs: int) -> float:
    """The one-sided Fisher exact test of a drop from old/runs to new/runs (1 when none)."""
    if new >= old:
        return 1.0
    rate = PassRate(runs=runs, passed=old, pass_rate=old / runs)
    return drop_p_value(rate, PassRate(runs=runs, passed=new, pass_rate=new / runs))


def suite_rates(suite: int, scenarios: int) -> list[float]:
    """The suite's true pass rates: known, spread over 50% to 98%."""
    rng = random.Random(suite)
    return [round(rng.uniform(0.5, 0.98), 2) for _ in range(scenarios)]


def regressions(counts: list[tuple[int, int]], runs: int, correction: str) -> set[int]:
    """Which scenarios (by index) the gate calls regressions: (baseline, now) passes."""
    raw = [p_value(old, new, runs) for old, new in counts]
    return {i for i, p in enumerate(adjust(raw, correction)) if p <= SIGNIFICANCE}


def simulate(suites: int, scenarios: int, runs: int) -> dict:
    """False-regression rates per correction, and power per drop (one scenario, index
    0, falls; the others keep their rate), over ``suites`` simulated suites."""
    false = dict.fromkeys(CORRECTIONS, 0)
    found = {(d, c): 0 for d in DROPS for c in CORRECTIONS}
    for suite in range(suites):
        rates = suite_rates(suite, scenarios)
        ids = [f"suite{suite}/s{j}.scenario.yaml::s{j}" for j in range(scenarios)]
        before = [passes(i, r, runs, 1) for i, r in zip(ids, rates, strict=True)]
        after = [passes(i, r, runs, 2) for i, r in zip(ids, rates, strict=True)]
        for correction in CORRECTIONS:
            if regressions(list(zip(before, after, strict=True)), runs, correction):
                false[correction] += 1
        for drop in DROPS:
            fell = [*after]
            fell[0] = passes(ids[0], max(0.0, rates[0] - drop), runs, 2)
            counts = list(zip(before, fell, strict=True))
            for correction in CORRECTIONS:
                found[(drop, correction)] += 0 in regressions(counts, runs, correction)
    return {
        "false": {c: n / suites for c, n in false.items()},
        "power": {f"{d:.0%} {c}": n / suites for (d, c), n in found.items()},
    }


def fixed_runs(plan: SequentialPlan) -> tuple[int, int]:
    """The fewest runs (and passes needed) a fixed count needs for the plan's error rates:
    at most false_pass passing at p_fail, at most false_fail failing at p_pass."""
    for n in range(1, 5000):
        for c in range(n + 1):
            if _tail(n, c, plan.p_fail) <= plan.false_pass:
                if 1 - _tail(n, c, plan.p_pass) <= plan.false_fail:
                    return n, c
                break
    raise ValueError("no fixed count under 5000 runs")


def _tail(n: int, c: int, p: float) -> float:
    """P(at least c of n pass) at pass rate p."""
    return sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(c, n + 1))


def sequential(plan: SequentialPlan, trials: int) -> dict:
    """The sequential test's runs per true pass rate (drawn as harness draws), its mean
    over rates spread evenly over 0 to 1, and its error rates at p_fail and p_pass."""
    grid = [round(0.025 + 0.05 * i, 3) for i in range(20)]  # 2.5%, 7.5%, ..., 97.5%
    used: dict[float, float] = {}
    passing: dict[float, float] = {}
    for rate in [*grid, plan.p_fail, plan.p_pass]:
        step = _step(rate)
        lengths, passed = [], 0
        for t in range(trials):
            sid = f"sequential/{rate}/{t}"
            outcomes = (
                step.draw(uniform(draw_material(sid, k, 0), "script 1", 0)).content == "right"
                for k in range(1, plan.max_runs + 1)
            )
            decision = decide(plan, outcomes)
            assert decision is not None
            lengths.append(decision.after)
            passed += decision.verdict == "pass"
        used[rate], passing[rate] = statistics.fmean(lengths), passed / trials
    return {
        "runs": {r: used[r] for r in grid},
        "mean": statistics.fmean(used[r] for r in grid),
        "false_pass": passing[plan.p_fail],
        "false_fail": 1 - passing[plan.p_pass],
    }


SCENARIO = """\
name: s{j}
input: What's the weather in SF?
repeat: {{runs: {runs}, min_pass_rate: 0.1}}
llm:
  script:
    - one_of:
        - {{weight: {rate}, content: right}}
        - {{weight: {rest}, content: wrong}}
expect:
  final: {{contains: right}}
"""


def end_to_end(scenarios: int, runs: int) -> bool:
    """One real suite through ``harness run``: its pass counts and regressions equal the
    simulation's for the same ids, runs and seeds (one scenario falls by 60 points)."""
    from harness import cli

    rates = suite_rates(0, scenarios)
    now = [*rates]
    now[0] = round(max(0.0, rates[0] - 0.6), 2)
    with tempfile.TemporaryDirectory(prefix="bench-gate-") as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[project]\nname = 'gate'\n")
        (root / "scenarios").mkdir()
        here = os.getcwd()
        os.chdir(root)
        try:
            runs_of = {}
            for seed, used in ((1, rates), (2, now)):
                for j, rate in enumerate(used):
                    text = SCENARIO.format(j=j, runs=runs, rate=rate, rest=round(1 - rate, 2))
                    (root / "scenarios" / f"s{j}.scenario.yaml").write_text(text)
                args = ["run", "--seed", str(seed), "--", "-q", "-p", "no:randomly"]
                if seed == 1:
                    args.insert(1, "--update-baseline")
                with contextlib.redirect_stdout(io.StringIO()):
                    cli.main(args)
                runs_of[seed] = json.loads((root / "reports/results.json").read_text())
        finally:
            os.chdir(here)
    ids = [f"scenarios/s{j}.scenario.yaml::s{j}" for j in range(scenarios)]
    drawn = {
        seed: [passes(i, r, runs, seed) for i, r in zip(ids, used, strict=True)]
        for seed, used in ((1, rates), (2, now))
    }
    counted = {seed: _counts(runs_of[seed], ids) for seed in (1, 2)}
    expected = regressions(list(zip(drawn[1], drawn[2], strict=True)), runs, "holm")
    gate = {ids.index(r["id"]) for r in runs_of[2]["baseline"]["regressions"]}
    same = counted == drawn and gate == expected
    print(
        f"end to end: {scenarios} scenarios x {runs} runs through harness run, baseline "
        f"--seed 1 and run --seed 2: pass counts {'equal' if counted == drawn else 'DIFFER'}"
        f" to the simulation's; regressions {sorted(gate)} (the simulation: "
        f"{sorted(expected)}): {'match' if same else 'MISMATCH'}"
    )
    return same


def _counts(results: dict, ids: list[str]) -> list[int]:
    passed = dict.fromkeys(ids, 0)
    for s in results["scenarios"]:
        key = s["id"].rsplit("[", 1)[0]
        passed[key] += s["status"] == "passed"
    return [passed[i] for i in ids]


def main() -> int:
    """Run the calibration; 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", type=int, default=1000)
    parser.add_argument("--scenarios", type=int, default=200)
    parser.add_argument("--runs", type=int, default=20, help="runs per scenario and side")
    parser.add_argument("--trials", type=int, default=1000, help="sequences per pass rate")
    args = parser.parse_args()
    started = time.perf_counter()
    sim = simulate(args.suites, args.scenarios, args.runs)
    print(
        f"{args.suites} suites of {args.scenarios} scenarios, {args.runs} runs a side, "
        f"true pass rates 50%-98% ({time.perf_counter() - started:.0f} s)"
    )
    for correction, rate in sim["false"].items():
        print(f"  false-regression rate (a suite with any), {correction}: {rate:.1%}")
    for key, rate in sim["power"].items():
        print(f"  power, one scenario falling {key}: {rate:.1%}")
    plan = SequentialPlan(max_runs=1000, min_pass_rate=0.8)
    fixed, needed = fixed_runs(plan)
    seq = sequential(plan, args.trials)
    saved = 1 - seq["mean"] / fixed
    print(
        f"sequential (min_pass_rate 80%, margin 10%, 5% error rates): the same error rates "
        f"take {fixed} fixed runs ({needed} passes); sequential takes {seq['mean']:.1f} on "
        f"average over true rates 2.5%-97.5% ({saved:.0%} fewer); measured false pass "
        f"{seq['false_pass']:.1%} at 70%, false fail {seq['false_fail']:.1%} at 90%"
    )
    print("  runs by true rate: " + ", ".join(f"{r:.1%} {n:.1f}" for r, n in seq["runs"].items()))
    matched = end_to_end(20, args.runs)
    ok = sim["false"]["holm"] <= 0.05 and saved >= 0.40 and matched
    print(
        f"targets: false regressions with holm <= 5% ({sim['false']['holm']:.1%}), sequential "
        f">= 40% fewer runs ({saved:.0%}), end to end as simulated: {'met' if ok else 'MISSED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
