"""One rule for which tool calls the expectations count (docs/scenarios.md#which-calls-count):
every call the model asked for, whatever became of it. `tool_calls.count` and
`never_called` see the same calls: a call refused for its arguments, a valid call stopped
with its plan, and a plan declined by stagnation all count."""

from __future__ import annotations

from pathlib import Path

import yaml

from harness.scenario import run_scenario

TOOLS = {
    "get_weather": {"parameters": {"city": "str"}, "returns": "sunny in {{ args.city }}"},
    "delete_account": {"parameters": {"user": "str"}, "returns": "deleted {{ args.user }}"},
}


def _run(tmp_path: Path, script: list, expect: dict, agent: dict | None = None):
    scenario = {"name": "rule", "input": "Weather?", "tools": TOOLS, "llm": {"script": script}}
    scenario |= {"agent": agent or {"planner": "react"}, "expect": expect}
    path = tmp_path / "rule.scenario.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False), encoding="utf-8")
    result = run_scenario(path)
    return {e.path: (e.ok, e.actual) for e in result.expectations}, result


def test_a_call_stopped_with_its_plan_counts_for_count_and_never_called_alike(tmp_path):
    # The model asks for delete_account next to a call with invalid arguments: validation
    # stops the plan, so delete_account never ran. The model still tried: both guards fail.
    script = [
        {"tool_calls": [{"get_weather": {"town": "SF"}}, {"delete_account": {"user": "bob"}}]},
    ]
    expect = {
        "termination": "validation_error",
        "tool_calls": {"count": {"delete_account": 0, "get_weather": 1}},
        "never_called": ["delete_account"],
    }
    checked, result = _run(tmp_path, script, expect)
    assert [c.status for c in result.tool_calls] == ["invalid", "not_run"]
    # get_weather was refused for its arguments and still counts: the model called it.
    assert checked["tool_calls.count"] == (False, {"delete_account": 1, "get_weather": 1})
    assert checked["never_called"] == (False, {"delete_account": 1})


def test_a_plan_declined_by_stagnation_counts(tmp_path):
    script = [{"tool_calls": [{"get_weather": {"city": "SF"}}], "repeat": 5}]
    expect = {
        "termination": "stagnation",
        "tool_calls": {"count": {"get_weather": 4}, "sequence": ["get_weather"] * 4},
    }
    checked, result = _run(
        tmp_path, script, expect, {"planner": "react", "stagnation": {"window": 3}}
    )
    assert [c.status for c in result.tool_calls] == ["ok", "ok", "ok", "not_run"]
    assert checked["tool_calls.count"] == (True, {"get_weather": 4})
    assert checked["tool_calls.sequence"][0] is True
