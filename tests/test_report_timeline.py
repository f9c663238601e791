"""The timeline behind the report: iterations, LLM calls and tool plans on the simulated clock."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from report_samples import run_script, sample_results

from harness._results import ScenarioResult
from harness.report import render_html
from harness.report._timeline import build_timeline


@pytest.fixture(autouse=True)
def _quiet_loop_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="harness")


def run(script: list[dict[str, Any]], name: str = "t", **agent: Any) -> ScenarioResult:
    return run_script(script, name, **agent)


def spans(scenario: ScenarioResult) -> list[tuple[int, str, float, float]]:
    """(iteration, what, start, end) for every item, in order."""
    out = []
    for iteration in build_timeline(scenario).iterations:
        for item in iteration.items:
            what = f"llm{item.call}" if item.kind == "llm" else f"plan{item.group}"
            out.append((iteration.number, what, round(item.start, 3), round(item.end, 3)))
    return out


def test_llm_calls_fill_the_time_between_tool_plans() -> None:
    scenario = run(
        [
            {"tool_calls": [{"get_weather": {"city": "San Francisco"}}], "latency": 0.6},
            {
                "tool_calls": [
                    {"find_restaurants": {"location": "SF"}},
                    {"get_weather": {"city": "Oakland"}},
                ],
                "latency": 0.7,
            },
            {"content": "Done.", "latency": 0.9},
        ],
        planner="react",
        tools={"get_weather": {"latency": 0.5}},
    )
    # get_weather takes 0.5 s; find_restaurants 0.8 s and get_weather(Oakland) 0.5 s in
    # parallel: the plan takes the longer one.
    assert spans(scenario) == [
        (1, "llm1", 0.0, 0.6),
        (1, "plan1", 0.6, 1.1),
        (2, "llm2", 1.1, 1.8),
        (2, "plan2", 1.8, 2.6),
        (3, "llm3", 2.6, 3.5),
    ]
    timeline = build_timeline(scenario)
    assert timeline.total == 3.5 and not timeline.approximate
    plan = timeline.iterations[1].items[1]
    assert plan.parallel and [c.name for c in plan.calls] == ["find_restaurants", "get_weather"]


def test_sequential_calls_are_not_parallel() -> None:
    script = [
        {"tool_calls": [{"get_weather": {"city": "A"}}, {"get_weather": {"city": "B"}}]},
        {"content": "ok"},
    ]
    # get_weather takes 0.35 s.
    plan = build_timeline(run(script, parallel_tools=False)).iterations[1].items[0]
    assert not plan.parallel
    assert [(c.sim_start, c.sim_end) for c in plan.calls] == [(0.0, 0.35), (0.35, 0.7)]


def test_agentbuilder_iterations_and_the_completing_one() -> None:
    scenario = run([{"tool_calls": [{"lookup_order": {"order_id": "A-1"}}]}, {"content": "ok"}])
    timeline = build_timeline(scenario)
    assert [(it.number, [i.kind for i in it.items]) for it in timeline.iterations] == [
        (1, ["llm"]),
        (2, ["tools"]),
        (3, ["llm"]),
        (4, []),
    ]
    assert timeline.iterations[-1].note == "The planner completed the run with the final response."


def test_stagnation_window_and_declined_plan() -> None:
    scenario = run(
        [{"tool_calls": [{"search_docs": {"query": "x"}}], "repeat": 6}],
        planner="react",
        stagnation={"window": 2},
    )
    timeline = build_timeline(scenario)
    assert scenario.termination.value == "stagnation"
    assert (timeline.window, timeline.window_size) == ([1, 2], 2)
    last = timeline.iterations[-1].items[-1]
    assert last.kind == "tools" and last.declined
    assert [it.in_window for it in timeline.iterations] == [True, True, False]


def test_failed_llm_call() -> None:
    scenario = run([{"error": {"status": 503, "message": "overloaded"}}])
    (item,) = build_timeline(scenario).iterations[0].items
    assert item.kind == "llm" and item.failed and item.reply is None


def _two_llm_calls_in_a_row() -> ScenarioResult:
    # At the limit, final_answer makes one more request right after the first reply: two
    # LLM calls with no plan between them.
    scenario = run(
        [
            {"tool_calls": [{"search_docs": {"query": "a"}}], "latency": 0.2},
            {"content": "Final.", "latency": 0.6},
        ],
        max_iterations=1,
        on_max_iterations="final_answer",
    )
    assert scenario.termination.value == "max_iterations"
    assert scenario.final.content == "Final."
    return scenario


def test_llm_calls_in_a_row_are_placed_by_the_times_their_events_carry() -> None:
    scenario = _two_llm_calls_in_a_row()
    timeline = build_timeline(scenario)
    # The call left unrun at the limit (not_run, not declined) is drawn where it was given
    # up: after the reply that asked for it, before the forced final answer.
    assert spans(scenario) == [(1, "llm1", 0.0, 0.2), (1, "plan1", 0.2, 0.2), (1, "llm2", 0.2, 0.8)]
    assert not any(i.declined for it in timeline.iterations for i in it.items)
    assert not timeline.approximate
    assert all(i.exact for it in timeline.iterations for i in it.items)


def test_llm_calls_in_a_row_without_times_share_the_time_and_say_so() -> None:
    # Events without simulated times and no plan between the calls (an edited or
    # hand-made results file): only the calls' total time is known.
    data = _two_llm_calls_in_a_row().model_dump(mode="json")
    events = [{k: v for k, v in e.items() if k != "sim"} for e in data["events"]]
    scenario = ScenarioResult.model_validate({**data, "events": events, "tool_calls": []})
    timeline = build_timeline(scenario)
    assert spans(scenario) == [(1, "llm1", 0.0, 0.4), (1, "llm2", 0.4, 0.8)]
    assert timeline.approximate
    assert not any(i.exact for it in timeline.iterations for i in it.items if i.kind == "llm")
    html = render_html(sample_results([scenario]))
    assert "0 s → 0.40 s*" in html and "share the simulated time" in html


def test_without_events_plans_still_show() -> None:
    scenario = run([{"tool_calls": [{"get_weather": {"city": "A"}}]}, {"content": "ok"}])
    bare = scenario.model_copy(update={"events": []})
    items = [i for it in build_timeline(bare).iterations for i in it.items]
    assert [i.kind for i in items] == ["tools"]
    assert "get_weather" in render_html(sample_results([bare]))


def test_history_replies_are_not_taken_for_this_runs_replies() -> None:
    earlier = [
        {"role": "user", "content": "Before."},
        {"role": "assistant", "content": "Earlier answer."},
    ]
    scenario = run([{"content": "New answer."}], "history", prompt="Again.", history=earlier)
    (item,) = [i for it in build_timeline(scenario).iterations for i in it.items]
    assert item.reply is not None and item.reply.content == "New answer."


def test_a_plan_left_at_the_limit_is_drawn_before_the_forced_final_answer():
    from pathlib import Path

    from harness.scenario import run_scenario

    root = Path(__file__).resolve().parent.parent
    result = run_scenario(root / "scenarios/core/max-iterations-final-answer.scenario.yaml")
    last = build_timeline(result).iterations[-1]
    # The reply asked for tools, the limit came, the calls were never run, and then the
    # final answer was requested with tool_choice "none": in that order, and labelled.
    assert [(i.kind, i.tool_choice) for i in last.items] == [
        ("llm", None),
        ("tools", None),
        ("llm", "none"),
    ]
    assert {c.status for c in last.items[1].calls} == {"not_run"}
