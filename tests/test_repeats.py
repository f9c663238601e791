"""Repeats: `repeat:` in a scenario and `harness run --repeat N` (docs/running.md#repeats).

Each scenario runs N times as items `path::name[k]`; every run's entry in results.json
carries `repeats: {runs, passed, pass_rate, pass_all}`; scenarios whose runs disagree are
flaky in the summary and the report.
"""

from __future__ import annotations

import json
import random
import sys

import pytest
from scenario_texts import PASSING, SESSION_TESTS

from harness import cli
from harness._repeats import wilson_interval
from harness._results import load_results
from harness.report._html import render_html

pytestmark = SESSION_TESTS

# A real tool (`use:`) whose backend fails on a random but seeded subset of its calls:
# each run calls it once, so run k fails when the k-th draw is below the failure rate.
FLAKY_SEED, FAILURE_RATE, RUNS = 1234, 0.4, 10
FLAKY_TOOL = f"""\
import random

_draws = random.Random({FLAKY_SEED})


def lookup_order(order_id: str) -> str:
    \"\"\"Look an order up (its backend fails now and then).\"\"\"
    if _draws.random() < {FAILURE_RATE}:
        raise RuntimeError("backend hiccup")
    return f"order {{order_id}}: shipped"
"""
FLAKY = f"""\
name: flaky-order
repeat: {RUNS}
input: Where is order 7?
tools:
  lookup_order: {{use: "flaky_backend:lookup_order"}}
llm:
  script:
    - tool_calls: [{{lookup_order: {{order_id: "7"}}}}]
    - content: Your order has shipped.
expect:
  requests:
    - {{call: 2, tool_results_include: [shipped]}}
"""


@pytest.fixture
def project(pytester):
    """An empty project: a pyproject.toml and a scenarios/ folder."""
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (pytester.path / "scenarios").mkdir()
    return pytester


def add(project, name: str, text: str) -> None:
    (project.path / "scenarios" / f"{name}.scenario.yaml").write_text(text, encoding="utf-8")


@pytest.fixture
def run(project, monkeypatch, capsys):
    """``harness ARGS`` in this process: (exit status, stdout, stderr)."""
    monkeypatch.chdir(project.path)
    monkeypatch.syspath_prepend(str(project.path))

    def call(*args: str) -> tuple[int, str, str]:
        status = cli.main(list(args))
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return call


def _without_run_identity(entry: dict) -> dict:
    """A run's entry minus what tells runs apart (id, run number, wall time)."""
    return {k: v for k, v in entry.items() if k not in ("id", "run", "wall_time")}


def test_scripted_scenarios_run_n_times_give_n_identical_results(project, run):
    add(project, "greet", PASSING)
    add(project, "other", PASSING.replace("name: greet", "name: other"))
    status, out, _ = run("run", "--repeat", "4")
    assert status == 0, out
    data = json.loads((project.path / "reports/results.json").read_text())
    ids = [s["id"] for s in data["scenarios"]]
    assert ids == [f"scenarios/greet.scenario.yaml::greet[{k}]" for k in range(1, 5)] + [
        f"scenarios/other.scenario.yaml::other[{k}]" for k in range(1, 5)
    ]
    greet = [s for s in data["scenarios"] if s["name"] == "greet"]
    assert [s["run"] for s in greet] == [1, 2, 3, 4]
    assert greet[0]["repeats"] == {
        "runs": 4,
        "passed": 4,
        "pass_rate": 1.0,
        "pass_all": True,
        "interval": [0.510109, 1.0],  # 95% Wilson: four runs say little
        "passes": True,
    }
    first = _without_run_identity(greet[0])
    assert all(_without_run_identity(s) == first for s in greet[1:])
    assert "flaky" not in data["summary"]
    assert "repeated: 2 scenario(s), 2 passed every run, 0 flaky (runs disagree)" in out


def test_a_scenario_that_runs_once_has_no_repeat_fields(project, run):
    add(project, "greet", PASSING)
    assert run("run")[0] == 0
    entry = json.loads((project.path / "reports/results.json").read_text())["scenarios"][0]
    assert entry["id"] == "scenarios/greet.scenario.yaml::greet"
    assert "run" not in entry and "repeats" not in entry


def test_a_files_own_repeat_wins_over_the_command_line(project, run):
    add(project, "greet", PASSING.replace("name: greet", "name: greet\nrepeat: 2"))
    add(project, "other", PASSING.replace("name: greet", "name: other"))
    status, out, _ = run("run", "--repeat", "3", "--", "-q")
    assert status == 0, out
    ids = [s.id for s in load_results(project.path / "reports/results.json").scenarios]
    assert sum(i.startswith("scenarios/greet") for i in ids) == 2
    assert sum(i.startswith("scenarios/other") for i in ids) == 3


def test_one_run_is_selected_by_its_id(project, run):
    add(project, "greet", PASSING.replace("name: greet", "name: greet\nrepeat: 3"))
    status, out, _ = run("run", "scenarios/greet.scenario.yaml::greet[2]")
    assert status == 0, out
    results = load_results(project.path / "reports/results.json")
    assert [s.id for s in results.scenarios] == ["scenarios/greet.scenario.yaml::greet[2]"]
    assert results.scenarios[0].repeats.runs == 1


@pytest.mark.parametrize("value", ["0", "-1", "two"])
def test_a_bad_repeat_is_bad_input(project, run, value):
    add(project, "greet", PASSING)
    status, _, err = run("run", "--repeat", value)
    assert status == 2
    assert "--repeat" in err


def test_a_bad_repeat_key_names_its_line(project, run):
    add(project, "greet", PASSING.replace("name: greet", "name: greet\nrepeat: 0"))
    status, out, _ = run("validate", "scenarios")
    assert status == 2
    assert "scenarios/greet.scenario.yaml:2: repeat:" in out


def test_a_randomly_failing_tool_makes_its_scenario_flaky_with_the_right_pass_rate(project):
    (project.path / "flaky_backend.py").write_text(FLAKY_TOOL)
    add(project, "flaky", FLAKY)
    add(project, "greet", PASSING.replace("name: greet", "name: greet\nrepeat: 3"))
    draws = random.Random(FLAKY_SEED)
    fails = [k for k in range(1, RUNS + 1) if draws.random() < FAILURE_RATE]
    assert 0 < len(fails) < RUNS  # the seed gives a mixed outcome: the test can fail
    passed = RUNS - len(fails)
    # A process of its own: the tool's random draws start from the seed.
    result = project.run(sys.executable, "-m", "harness.cli", "run", "--", "-q", timeout=300)
    assert result.ret == 1
    results = load_results(project.path / "reports/results.json")
    flaky = [s for s in results.scenarios if s.name == "flaky-order"]
    assert [s.run for s in flaky if s.status != "passed"] == fails
    repeats = flaky[0].repeats
    assert all(s.repeats == repeats for s in flaky)
    counts = (repeats.runs, repeats.passed, repeats.pass_rate, repeats.pass_all, repeats.passes)
    assert counts == (RUNS, passed, passed / RUNS, False, False)
    assert repeats.interval == wilson_interval(passed, RUNS)
    # The runs part at the tool call: its backend answered, or it raised.
    divergence = repeats.divergence
    assert (divergence.step, divergence.at) == (2, "tool call 1")
    assert [(v.step, v.runs) for v in divergence.variants] == [
        (
            'tool call 1: lookup_order {"order_id":"7"}',
            [k for k in range(1, RUNS + 1) if k not in fails],
        ),
        ('tool call 1: lookup_order {"order_id":"7"} [error]', fails),
    ]
    assert results.summary.flaky == ["scenarios/flaky.scenario.yaml::flaky-order"]
    low, high = (f"{x:.0%}" for x in repeats.interval)
    passing = ", ".join(str(k) for k in range(1, RUNS + 1) if k not in fails)
    lines = result.stdout.lines
    start = lines.index("repeated: 2 scenario(s), 1 passed every run, 1 flaky (runs disagree)")
    assert lines[start + 1 : start + 5] == [
        f"  flaky: scenarios/flaky.scenario.yaml::flaky-order: {passed}/{RUNS} runs passed "
        f"({passed / RUNS:.0%}, 95% CI {low}-{high})",
        "    first divergence at step 2 (tool call 1):",
        f'      {passed} run(s) [{passing}]: tool call 1: lookup_order {{"order_id":"7"}}',
        f"      {len(fails)} run(s) [{', '.join(map(str, fails))}]: tool call 1: "
        'lookup_order {"order_id":"7"} [error]',
    ]
    html = render_html(results)
    assert f'<td class="num">{passed / RUNS:.0%}</td>' in html  # the pass-rate column
    assert '<td class="num">100%</td>' in html  # greet: every run passed
    # The disagreeing runs side by side: the first that passed, the first that failed.
    first_pass = min(set(range(1, RUNS + 1)) - set(fails))
    side_by_side = html.split("a run that passed beside one that did not", 1)[1]
    assert f"run {first_pass} · " in side_by_side and f"run {fails[0]} · " in side_by_side
    assert "RuntimeError" in results.scenarios[fails[0] - 1].model_dump_json()
