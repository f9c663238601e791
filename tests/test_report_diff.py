"""The baseline diff: every category, on results of real agent runs."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from report_samples import run_script, sample_baseline, sample_results

from harness._results import ExpectationResult, Results, ScenarioResult, build_results
from harness.report import diff_results, trajectory


@pytest.fixture(autouse=True)
def _quiet_loop_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="harness")


def run_scenario(
    name: str,
    script: list[dict[str, Any]],
    *,
    status: str = "passed",
    expectations: list[ExpectationResult] | None = None,
    **agent: Any,
) -> ScenarioResult:
    """One scenario from a real run of a scripted agent, given the status and unmet
    expectations the test compares (the run itself passes)."""
    result = run_script(script, name, tools=TOOLS, **agent)
    return result.model_copy(update={"status": status, "expectations": expectations or []})


# The order service is down: looking an order up raises.
TOOLS = {
    "lookup_order": {"errors": [{"raise": "order service unavailable", "type": "RuntimeError"}]}
}


WEATHER = [
    {"tool_calls": [{"get_weather": {"city": "Paris"}}], "latency": 0.2},
    {"content": "Sunny in Paris."},
]


def results(*scenarios: ScenarioResult) -> Results:
    return build_results(list(scenarios))


def test_identical_runs_diff_empty() -> None:
    old = results(run_scenario("a", WEATHER), run_scenario("b", WEATHER, planner="react"))
    new = results(run_scenario("a", WEATHER), run_scenario("b", WEATHER, planner="react"))
    diff = diff_results(old, new)
    assert diff.is_empty
    assert not diff.has_regressions_or_changes
    assert (diff.compared, diff.unchanged) == (2, 2)
    assert diff.counts() == dict.fromkeys(
        ("regressions", "fixed", "changed", "added", "removed"), 0
    )


def test_meta_and_wall_time_are_not_compared() -> None:
    old = results(run_scenario("a", WEATHER))
    again = run_scenario("a", WEATHER).model_copy(update={"wall_time": 123.0})
    new = results(again)
    new.meta["started"] = "2030-01-01T00:00:00+00:00"
    assert diff_results(old, new).is_empty


def test_regression_passed_before_failing_now() -> None:
    unmet = ExpectationResult(
        path="final.contains", expected="rain", actual="Sunny in Paris.", ok=False
    )
    old = results(run_scenario("a", WEATHER))
    new = results(run_scenario("a", WEATHER, status="failed", expectations=[unmet]))
    diff = diff_results(old, new)
    assert [r.id for r in diff.regressions] == ["scenarios/a.scenario.yaml::a"]
    regression = diff.regressions[0]
    assert (regression.old_status, regression.new_status) == ("passed", "failed")
    assert regression.failed_expectations == ["final.contains"]
    assert diff.fixed == []
    # Only the status differs: the change lists that field and nothing else.
    assert [c.fields for c in diff.changed] == [["status"]]
    assert diff.has_regressions_or_changes


def test_error_now_is_a_regression_too() -> None:
    old = results(run_scenario("a", WEATHER))
    new = results(run_scenario("a", WEATHER, status="error"))
    assert [r.new_status for r in diff_results(old, new).regressions] == ["error"]


def test_fixed_failing_before_passing_now() -> None:
    old = results(
        run_scenario("a", [{"error": {"status": 500, "message": "boom"}}], status="failed")
    )
    new = results(run_scenario("a", WEATHER))
    diff = diff_results(old, new)
    assert [f.id for f in diff.fixed] == ["scenarios/a.scenario.yaml::a"]
    assert (diff.fixed[0].old_termination, diff.fixed[0].new_termination) == (
        "llm_error",
        "completed",
    )
    assert diff.regressions == []
    change = diff.changed[0]
    assert change.termination is not None
    assert (change.termination.old, change.termination.new) == ("llm_error", "completed")


def test_failed_to_error_is_a_change_not_a_regression() -> None:
    old = results(run_scenario("a", WEATHER, status="failed"))
    new = results(run_scenario("a", WEATHER, status="error"))
    diff = diff_results(old, new)
    assert diff.regressions == [] and diff.fixed == []
    assert diff.changed[0].status is not None


def test_changed_iterations_only() -> None:
    # The same script under two planners: same calls, same answer, different iteration counts.
    old = results(run_scenario("a", WEATHER))  # agentbuilder: 4 iterations
    new = results(run_scenario("a", WEATHER, planner="react"))  # react: 2 iterations
    change = diff_results(old, new).changed[0]
    assert change.fields == ["iterations"]
    assert change.iterations is not None
    assert (change.iterations.old, change.iterations.new, change.iterations.delta) == (4, 2, -2)


def test_changed_llm_calls_and_trajectory() -> None:
    twice = [
        {"tool_calls": [{"get_weather": {"city": "Paris"}}]},
        {"tool_calls": [{"get_weather": {"city": "Lyon"}}]},
        {"content": "Sunny in Paris."},
    ]
    old = results(run_scenario("a", WEATHER, planner="react"))
    new = results(run_scenario("a", twice, planner="react"))
    change = diff_results(old, new).changed[0]
    assert change.llm_calls is not None
    assert (change.llm_calls.old, change.llm_calls.new, change.llm_calls.delta) == (2, 3, 1)
    assert change.tool_calls is not None
    assert change.tool_calls.old == ['get_weather {"city":"Paris"}']
    assert change.tool_calls.new == ['get_weather {"city":"Paris"}', 'get_weather {"city":"Lyon"}']
    assert [(op.op, op.old, op.new) for op in change.tool_calls.ops] == [
        ("equal", ['get_weather {"city":"Paris"}'], ['get_weather {"city":"Paris"}']),
        ("insert", [], ['get_weather {"city":"Lyon"}']),
    ]
    assert change.final is None


def test_trajectory_shows_parallel_plans_and_failed_calls() -> None:
    parallel = [
        {"tool_calls": [{"get_weather": {"city": "Paris"}}, {"lookup_order": {"order_id": "X-1"}}]},
        {"content": "Done."},
    ]
    sequential = [
        {"tool_calls": [{"get_weather": {"city": "Paris"}}]},
        {"tool_calls": [{"lookup_order": {"order_id": "X-1"}}]},
        {"content": "Done."},
    ]
    old = run_scenario("a", sequential, planner="react")
    new = run_scenario("a", parallel, planner="react")
    # Plans are the unit: parallel calls join with ||, a call that raised says so.
    assert trajectory(new) == [
        'get_weather {"city":"Paris"} || lookup_order {"order_id":"X-1"} [error]'
    ]
    assert trajectory(old) == [
        'get_weather {"city":"Paris"}',
        'lookup_order {"order_id":"X-1"} [error]',
    ]
    change = diff_results(results(old), results(new)).changed[0]
    assert change.tool_calls is not None
    assert [op.op for op in change.tool_calls.ops] == ["replace"]


def test_trajectory_ignores_argument_key_order() -> None:
    a = [
        {"tool_calls": [{"find_restaurants": {"location": "Paris", "limit": 2}}]},
        {"content": "ok"},
    ]
    b = [
        {"tool_calls": [{"find_restaurants": {"limit": 2, "location": "Paris"}}]},
        {"content": "ok"},
    ]
    assert diff_results(results(run_scenario("a", a)), results(run_scenario("a", b))).is_empty


def test_changed_final_answer_old_and_new() -> None:
    other = [WEATHER[0], {"content": "Rainy in Paris."}]
    change = diff_results(
        results(run_scenario("a", WEATHER)), results(run_scenario("a", other))
    ).changed[0]
    assert change.fields == ["final"]
    assert change.final is not None
    assert change.final.old["content"] == "Sunny in Paris."
    assert change.final.new["content"] == "Rainy in Paris."


def test_changed_termination_with_final_error() -> None:
    loop = [{"tool_calls": [{"search_docs": {"query": f"q{i}"}}]} for i in range(5)]
    old = results(run_scenario("a", WEATHER, planner="react"))
    new = results(run_scenario("a", loop, planner="react", max_iterations=3, status="failed"))
    change = diff_results(old, new).changed[0]
    assert change.termination is not None
    assert (change.termination.old, change.termination.new) == ("completed", "max_iterations")
    assert change.final is not None
    assert change.final.new["error"]["type"] == "max_iterations"
    assert change.final.old["error"] is None


def test_added_and_removed() -> None:
    old = results(run_scenario("kept", WEATHER), run_scenario("gone", WEATHER, status="failed"))
    new = results(run_scenario("kept", WEATHER), run_scenario("new", WEATHER))
    diff = diff_results(old, new)
    assert [(r.id, r.status) for r in diff.added] == [
        ("scenarios/new.scenario.yaml::new", "passed")
    ]
    assert [(r.id, r.status) for r in diff.removed] == [
        ("scenarios/gone.scenario.yaml::gone", "failed")
    ]
    assert diff.compared == 1 and diff.changed == []
    # Added or removed scenarios alone are not a behaviour change of a compared scenario.
    assert not diff.has_regressions_or_changes


def test_every_list_is_sorted_by_id() -> None:
    names = ["c", "a", "b"]
    old = results(*(run_scenario(n, WEATHER) for n in names))
    new = results(*(run_scenario(n, WEATHER, status="failed") for n in reversed(names)))
    diff = diff_results(old, new)
    assert [r.name for r in diff.regressions] == ["a", "b", "c"]
    assert [c.name for c in diff.changed] == ["a", "b", "c"]


def test_samples_cover_every_category() -> None:
    diff = diff_results(sample_baseline(), sample_results(), source="reports/baseline.json")
    assert {k: v > 0 for k, v in diff.counts().items()} == dict.fromkeys(diff.counts(), True)
    assert diff.source == "reports/baseline.json"
    assert diff.baseline_started == "2024-12-20T09:30:00+00:00"


def test_diff_goes_into_results_json_and_back() -> None:
    new = sample_results()
    diff = diff_results(sample_baseline(), new, source="baseline.json")
    new.baseline = diff
    reloaded = Results.model_validate_json(new.to_json())
    assert reloaded.baseline is not None
    assert reloaded.baseline == diff
    # Plain JSON: numbers stay numbers (a delta of 2 is 2, not 2.0).
    text = new.to_json()
    assert '"delta": 2.0' not in text
