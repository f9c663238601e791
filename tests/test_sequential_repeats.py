"""Sequential repeats: ``repeat: {max_runs: N, min_pass_rate: R, decide: sequential}`` (and
``--decide sequential``) stop a scenario's runs once Wald's sequential probability ratio
test has decided, serially and under xdist; the runs not needed skip, saying why, and
results.json says after how many runs and why (docs/gate.md#sequential-repeats).
"""

from __future__ import annotations

import json
import random

import pytest
from scenario_texts import SESSION_TESTS

from harness._sequential import SequentialPlan, decide

pytestmark = SESSION_TESTS

MODEL = """\
name: m{rate}
input: What's the weather in SF?
{repeat}
llm:
  script:
    - one_of:
        - {{weight: {rate}, content: It is 72F in SF.}}
        - {{weight: {rest}, content: It is 60F in SF.}}
expect:
  final: {{contains: 72F}}
"""
SEQUENTIAL = "repeat: {max_runs: 200, min_pass_rate: 0.8, decide: sequential}"


@pytest.fixture
def project(cli_project):
    """An empty project as the current directory; ``project.run_harness(*args)``."""
    return cli_project


def _models(project, repeat: str = SEQUENTIAL, rates: tuple[int, ...] = (97, 5)) -> None:
    for rate in rates:
        text = MODEL.format(rate=rate, rest=100 - rate, repeat=repeat)
        (project.path / "scenarios" / f"m{rate}.scenario.yaml").write_text(text)


def _results(project) -> dict:
    return json.loads((project.path / "reports/results.json").read_text())


def _repeats(data: dict) -> dict[str, dict]:
    return {s["name"]: s["repeats"] for s in data["scenarios"]}


def _comparable(data: dict) -> list[dict]:
    return [{k: v for k, v in s.items() if k not in ("wall_time",)} for s in data["scenarios"]]


def test_a_good_and_a_bad_model_stop_long_before_their_cap(project):
    _models(project)
    status, out = project.run_harness("run", "--fail-on-skip", "--", "-q", "-rs")
    assert status == 1, out  # the 5% model fails
    data = _results(project)
    repeats = _repeats(data)
    good, bad = repeats["m97"], repeats["m5"]
    assert good["passes"] is True and bad["passes"] is False
    assert good["runs"] < 60 and bad["runs"] < 60
    assert good["sequential"]["decision"]["verdict"] == "pass"
    assert good["sequential"]["decision"]["by"] == "evidence"
    assert good["sequential"]["decision"]["after"] == good["runs"]
    assert bad["sequential"]["decision"] == {
        "verdict": "fail",
        "after": bad["runs"],
        "by": "evidence",
        "llr": bad["sequential"]["decision"]["llr"],
    }
    assert good["sequential"]["max_runs"] == 200
    # The runs not needed are not scenarios skipped: no entry, no --fail-on-skip.
    assert "skipped" not in data
    assert len(data["scenarios"]) == good["runs"] + bad["runs"]
    skipped = 400 - good["runs"] - bad["runs"]
    assert f"{skipped} skipped" in out
    assert (
        f"not needed: the sequential test decided the scenario passes after {good['runs']} "
        "of at most 200 runs (the evidence was clear)"
    ) in out
    assert f"sequential: decided after {bad['runs']} of at most 200 runs, the evidence clear" in out
    html = (project.path / "reports/report.html").read_text()
    assert f"sequential: decided after {good['runs']} of at most 200 runs" in html
    # The same decisions on rerun, and the same under xdist (each scenario's runs on one
    # worker: later ones skip there too).
    project.run_harness("run", "--", "-q")
    assert _comparable(_results(project)) == _comparable(data)
    status, out = project.run_harness("run", "-n", "2", "--", "-q")
    assert _comparable(_results(project)) == _comparable(data), out


def test_the_command_line_form(project):
    _models(project, repeat="", rates=(97,))
    args = ("run", "--repeat", "200", "--min-pass-rate", "0.8", "--decide", "sequential")
    status, out = project.run_harness(*args)
    assert status == 0, out
    repeats = _repeats(_results(project))["m97"]
    assert repeats["runs"] < 60
    assert repeats["sequential"]["decision"]["verdict"] == "pass"
    # Without --decide, all 200 run.
    status, out = project.run_harness("run", "--repeat", "200", "--min-pass-rate", "0.8")
    assert _repeats(_results(project))["m97"]["runs"] == 200


def test_a_scenario_undecided_at_its_cap_is_judged_by_its_pass_rate(project):
    _models(project, repeat=SEQUENTIAL.replace("200", "10"), rates=(80,))
    project.run_harness("run")
    repeats = _repeats(_results(project))["m80"]
    assert repeats["runs"] == 10
    decision = repeats["sequential"]["decision"]
    assert decision["by"] == "max_runs" and decision["after"] == 10
    assert repeats["passes"] == (repeats["passed"] >= 8) == (decision["verdict"] == "pass")


@pytest.mark.parametrize(
    ("repeat", "message"),
    [
        ("{runs: 20, decide: sequential}", "give max_runs: N (the most), not runs"),
        ("{max_runs: 20}", "max_runs: only with decide: sequential"),
        ("{decide: sequential}", "decide: sequential needs max_runs: N"),
        ("{max_runs: 9, decide: sequential, false_pass: 0.7}", "repeat.false_pass"),
    ],
)
def test_a_bad_sequential_repeat_names_its_line(project, repeat, message):
    _models(project, repeat=f"repeat: {repeat}", rates=(97,))
    status, out = project.run_harness("validate", "scenarios")
    assert status == 2, out
    assert "m97.scenario.yaml:3: repeat" in out and message in out


def test_sequential_runs_stay_in_one_shard(project):
    _models(project, rates=(97, 5, 60, 40))
    seen = []
    for shard in ("1/2", "2/2"):
        project.run_harness("run", "--shard", shard, "--json", f"shard{shard[0]}.json")
        data = json.loads((project.path / f"shard{shard[0]}.json").read_text())
        seen.append({s["name"] for s in data["scenarios"]})
        for repeats in _repeats(data).values():
            assert repeats["sequential"]["decision"] is not None  # decided within the shard
    assert not seen[0] & seen[1] and seen[0] | seen[1] == {"m97", "m5", "m60", "m40"}


def test_sequential_runs_are_not_started_ahead(project):
    _models(project)
    project.run_harness("run")
    serial = _comparable(_results(project))
    project.run_harness("run", "--concurrency", "4")
    assert _comparable(_results(project)) == serial


# -- the test itself, at the statistics level ------------------------------------------


def test_the_verdicts_go_the_right_way():
    plan = SequentialPlan(max_runs=200, min_pass_rate=0.8)
    assert decide(plan, [True] * 200).verdict == "pass"
    assert decide(plan, [False] * 200).verdict == "fail"
    assert decide(plan, [True] * 5) is None  # not enough evidence yet
    # Every run must pass (no min_pass_rate): one failure decides.
    strict = SequentialPlan(max_runs=100)
    assert decide(strict, [True, True, False]).verdict == "fail"
    # 28 passes in a row: log(0.95 / 0.05) / log(1 / 0.9) = 27.9.
    assert decide(strict, [True] * 100).after == 28


def test_the_error_rates_hold_at_the_rates_they_are_stated_at():
    plan = SequentialPlan(max_runs=1000, min_pass_rate=0.8)
    rng = random.Random(4)

    def share_passing(rate: float) -> float:
        trials = 2000
        passed = sum(
            decide(plan, (rng.random() < rate for _ in range(1000))).verdict == "pass"
            for _ in range(trials)
        )
        return passed / trials

    assert share_passing(0.7) <= 0.06  # false_pass 5% at min_pass_rate - margin
    assert share_passing(0.9) >= 0.94  # false_fail 5% at min_pass_rate + margin
