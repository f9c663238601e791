"""The example suite in scenarios/: every file passes, deterministically, with its plugins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness._results import ScenarioResult
from harness.scenario import Scenario, expand_matrix, load_scenario, run_scenario
from harness.scenario._schema import json_schema

# The example suite uses this repository's own plugins.
pytestmark = pytest.mark.repo_plugins

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = sorted((ROOT / "scenarios").rglob("*.scenario.yaml"))


def _id(path: Path) -> str:
    return path.relative_to(ROOT / "scenarios").as_posix()


def stable(result) -> dict:
    """A result's JSON form without the wall-clock fields."""
    data = json.loads(result.model_dump_json())
    data.pop("wall_time")
    data.pop("wall_clock", None)  # an external target's
    return data


def test_the_suite_is_not_empty():
    assert len(SCENARIOS) >= 15


def runs(path: Path) -> list[Scenario]:
    """The scenarios a file runs as: itself, or each combination of its matrix. An example
    on a framework that is not installed (`target.requires`) is skipped, as `harness run`
    skips it."""
    scenarios = expand_matrix(load_scenario(path))
    for scenario in scenarios:
        if scenario.skip_reason is not None:
            pytest.skip(scenario.skip_reason)
    return scenarios


# Each file's scenarios with their first runs, shared by the three tests below: each
# compares that run with another, rather than starting from a run of its own (5 runs of
# each example became 3).
_FIRST_RUNS: dict[Path, list[tuple[Scenario, ScenarioResult]]] = {}


def first_runs(path: Path) -> list[tuple[Scenario, ScenarioResult]]:
    """The scenarios ``path`` runs as, each with its first run (made once per process)."""
    if path not in _FIRST_RUNS:
        _FIRST_RUNS[path] = [(scenario, run_scenario(scenario)) for scenario in runs(path)]
    return _FIRST_RUNS[path]


@pytest.mark.parametrize("path", SCENARIOS, ids=_id)
def test_every_example_scenario_passes(path):
    for _, result in first_runs(path):
        failed = [(e.path, e.expected, e.actual) for e in result.failed_expectations]
        assert result.status == "passed", (result.termination, failed, result.final.error)
        assert result.id == f"{path.relative_to(ROOT).as_posix()}::{result.name}"


@pytest.mark.parametrize("path", SCENARIOS, ids=_id)
def test_the_same_file_twice_gives_identical_results(path):
    for (_, first), second in zip(first_runs(path), runs(path), strict=True):
        assert stable(first) == stable(run_scenario(second))


@pytest.mark.parametrize("path", SCENARIOS, ids=_id)
def test_the_same_scenario_object_twice_gives_identical_results(path):
    # Stubs count their calls (errors and results by on_call): each run starts afresh.
    for scenario, first in first_runs(path):
        assert stable(first) == stable(run_scenario(scenario))


def test_the_scenario_api_is_exported_from_harness():
    import harness
    import harness.scenario

    for name in ("run_scenario", "arun_scenario", "load_scenario"):
        assert getattr(harness, name) is getattr(harness.scenario, name)
        assert name in harness.__all__


def test_a_scenario_built_in_python_starts_from_its_history():
    scenario = Scenario.model_validate(
        {
            "history": [
                {"role": "user", "content": "Before?"},
                {"role": "assistant", "content": "Earlier."},
            ],
            "input": "And now?",
            "llm": {"script": [{"content": "Now too."}]},
        }
    )
    result = run_scenario(scenario)
    assert [m.content for m in result.transcript] == ["Before?", "Earlier.", "And now?", "Now too."]


def test_faker_results_do_not_depend_on_the_process(tmp_path):
    """The seed comes from sha256, never hash(): a fresh interpreter gives the same values."""
    import subprocess
    import sys

    path = ROOT / "scenarios/core/weather-and-restaurants.scenario.yaml"
    code = (
        "import json, sys; from harness.scenario import run_scenario; "
        "r = run_scenario(sys.argv[1]); print(json.dumps([c.result for c in r.tool_calls]))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code, str(path)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        ).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1
    assert json.loads(outputs.pop()) == [c.result for c in run_scenario(path).tool_calls]


def test_simulated_latency_costs_no_real_time(no_real_sleep):
    path = ROOT / "scenarios/core/sequential-tools.scenario.yaml"
    result = run_scenario(path)
    assert result.sim_time == 6.0
    assert no_real_sleep == []


def test_committed_json_schema_is_current():
    committed = json.loads((ROOT / "harness-scenario.schema.json").read_text())
    assert committed == json_schema(), (
        "regenerate with: harness schema > harness-scenario.schema.json"
    )


@pytest.mark.parametrize("path", SCENARIOS, ids=_id)
def test_example_files_validate_against_the_json_schema(path):
    """What an editor with yaml-language-server checks must agree with the loader."""
    import jsonschema
    import yaml

    jsonschema.validate(yaml.safe_load(path.read_text()), json_schema())
    load_scenario(path)


def test_trace_observer_writes_jsonl(tmp_path, monkeypatch):
    trace = tmp_path / "trace.jsonl"
    monkeypatch.setenv("HARNESS_TRACE", str(trace))
    result = run_scenario(ROOT / "scenarios/core/roundtrip.scenario.yaml")
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    events = [line["event"] for line in lines]
    assert events[0] == "agent_start"
    assert events[-2:] == ["agent_end", "summary"]
    assert lines[-1]["termination"] == "completed"
    assert len(lines) == len(result.events) + 1


def test_budget_planner_stops_offering_tools():
    result = run_scenario(ROOT / "scenarios/plugins/budget-planner.scenario.yaml")
    assert [r.status for r in result.tool_calls] == ["ok", "ok"]
    assert result.final.data == {"budget_exhausted": True, "tool_budget": 2}


def test_shop_tools_are_deterministic():
    from plugins.shop_tools import restaurants, weather

    assert weather("Austin") == weather("Austin")
    assert weather("Austin") != weather("Boston")
    assert restaurants("Austin", limit=2) == restaurants("Austin", limit=2)
