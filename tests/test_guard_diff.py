"""The baseline diff tells a change of stuck detector or budget apart from other changes,
and ``expect.failing`` inverts the expectations it names (a known weakness)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from harness._results import build_results
from harness.report import diff_results
from harness.scenario import run_scenario

STUCK = """\
name: guarded
input: Which site has the order?
agent: AGENT
tools:
  check:
    parameters: {site: str}
    returns: "{{ args.site }}: not here"
llm:
  script:
    - tool_calls: [{check: {site: a}}]
    - tool_calls: [{check: {site: b}}]
    - tool_calls: [{check: {site: a}}]
    - tool_calls: [{check: {site: b}}]
    - tool_calls: [{check: {site: a}}]
    - tool_calls: [{check: {site: b}}]
    - tool_calls: [{check: {site: a}}]
    - tool_calls: [{check: {site: b}}]
    - content: ANSWER
"""


def run(tmp_path: Path, agent: str, answer: str = "Not found.", name: str = "a"):
    text = STUCK.replace("AGENT", agent).replace("ANSWER", answer)
    path = tmp_path / f"{name}.scenario.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    result = run_scenario(path)
    return result.model_copy(update={"id": "s::guarded"})


def diff(old, new):
    return diff_results(build_results([old]), build_results([new]))


def test_another_detector_firing_is_a_detector_change(tmp_path):
    old = run(tmp_path, "{planner: react, detectors: {alternating: {window: 2}}}")
    new = run(tmp_path, "{planner: react, detectors: {same_result: {window: 2}}}", name="b")
    assert (old.final.data["detector"], new.final.data["detector"]) == (
        "alternating",
        "same_result",
    )

    change = diff(old, new).changed[0]

    assert "detector" in change.fields and "budget" not in change.fields
    assert change.detector.old["fired"] == "alternating"
    assert change.detector.new["fired"] == "same_result"


def test_a_budget_ending_the_run_is_a_budget_change(tmp_path):
    old = run(tmp_path, "{planner: react}")
    new = run(tmp_path, "{planner: react, budget: {tool_calls: 2}}", name="b")

    change = diff(old, new).changed[0]

    assert "budget" in change.fields
    assert change.budget.old == {"ended": None, "used": None, "budget": None}
    assert change.budget.new == {"ended": "tool_calls", "used": 3, "budget": {"tool_calls": 2}}
    # The seed's repeat never fired in either: the detector did not change.
    assert change.detector is None


def test_a_changed_answer_alone_is_neither(tmp_path):
    old = run(tmp_path, "{planner: react, detectors: {repeat: {}}}")
    new = run(tmp_path, "{planner: react, detectors: {repeat: {}}}", "Nowhere.", name="b")

    change = diff(old, new).changed[0]

    assert change.fields == ["final"]


def test_raising_a_budget_that_was_not_crossed_is_still_a_budget_change(tmp_path):
    old = run(tmp_path, "{planner: react, budget: {tokens: 100000}}")
    new = run(tmp_path, "{planner: react, budget: {tokens: 200000}}", name="b")

    change = diff(old, new).changed[0]

    assert change.fields == ["budget"]


def test_failing_expectations_pass_while_they_fail_and_fail_once_they_hold(tmp_path):
    text = STUCK.replace("AGENT", "{planner: react}").replace("ANSWER", "Not found.")
    failing = text + "expect:\n  tool_calls: {count: {check: 9}}\n  failing: [tool_calls.count]\n"
    path = tmp_path / "f.scenario.yaml"
    path.write_text(failing, encoding="utf-8")

    result = run_scenario(path)
    assert result.status == "passed"
    assert result.expectations[0].expected == {"failing": {"check": 9}}

    path.write_text(failing.replace("check: 9", "check: 8"), encoding="utf-8")
    assert run_scenario(path).status == "failed"
