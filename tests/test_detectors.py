"""Stuck detectors (docs/loop.md#stuck-detectors): each fires at an exact iteration, and its
near miss runs to the end; ``on_stuck: nudge`` adds one message and stops on the next repeat."""

from __future__ import annotations

import pytest

from harness import Agent, Termination, hookimpl, tool
from harness._actions import CompleteAction, MakeLLMRequestAction
from harness._messages import AssistantMessage, UserMessage
from harness.detectors import Stuck


def make_tools():
    """lookup (echoes), poll (always the same), flaky (fails), counter (changes each call)."""
    state = {"counter": 0, "flaky": 0}

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    @tool
    def poll(job: str) -> str:
        """The status of a job."""
        return "pending"

    @tool
    def flaky(x: int) -> str:
        """Always fails the same way."""
        raise RuntimeError("service down")

    @tool
    def drifting(x: int) -> str:
        """Fails with a different message each call."""
        state["flaky"] += 1
        raise RuntimeError(f"attempt {state['flaky']} failed")

    @tool
    def counter(job: str) -> str:
        """Progress that changes every call."""
        state["counter"] += 1
        return f"{state['counter'] * 10}% done"

    return [lookup, poll, flaky, drifting, counter]


def call(name, **args):
    return {"tool_calls": [{name: args}]}


def run(script, planner="react", **options):
    return Agent(llm=script, tools=make_tools(), planner=planner, **options).run("go")


def ran(result):
    return [(r.name, r.arguments, r.iteration) for r in result.tool_calls if r.status != "not_run"]


# -- repeat ---------------------------------------------------------------------------------


def test_repeat_configured_explicitly_gives_the_new_final_data_shape():
    result = run([call("lookup", key="a")] * 5, detectors={"repeat": {"window": 2}})

    assert result.termination == Termination.stagnation
    assert result.iterations == 3  # two identical plans ran, the third is declined
    assert result.final.data == {
        "stagnation": True,
        "detector": "repeat",
        "window": [
            {"iteration": 1, "plan": [["lookup", '{"key":"a"}']]},
            {"iteration": 2, "plan": [["lookup", '{"key":"a"}']]},
        ],
    }
    assert [r.status for r in result.tool_calls] == ["ok", "ok", "not_run"]


def test_repeat_with_the_default_config_keeps_the_seed_final_data():
    result = run([call("lookup", key="a")] * 5)

    assert result.iterations == 4
    assert result.final.data == {
        "stagnation": True,
        "signature": [["lookup", '{"key":"a"}']],
        "window": 3,
    }


# -- alternating ----------------------------------------------------------------------------

A, B, C = call("lookup", key="a"), call("lookup", key="b"), call("lookup", key="c")
ALTERNATING = {"alternating": {"window": 2}}


def test_alternating_declines_the_plan_after_two_pairs_at_iteration_5():
    result = run([A, B, A, B, A, B, {"content": "done"}], detectors=ALTERNATING)

    assert result.termination == Termination.stagnation
    assert result.iterations == 5
    assert len(ran(result)) == 4
    assert result.tool_calls[-1].status == "not_run"
    data = result.final.data
    assert data["detector"] == "alternating"
    assert [e["iteration"] for e in data["window"]] == [1, 2, 3, 4]
    assert [e["plan"][0][1] for e in data["window"]] == ['{"key":"a"}', '{"key":"b"}'] * 2


def test_alternating_under_agentbuilder_fires_at_iteration_10():
    result = run(
        [A, B, A, B, A, {"content": "done"}], planner="agentbuilder", detectors=ALTERNATING
    )

    assert result.termination == Termination.stagnation
    assert result.iterations == 10  # (request, tools) x 4, request, declined plan
    assert [e["iteration"] for e in result.final.data["window"]] == [2, 4, 6, 8]


def test_alternating_near_miss_a_third_plan_breaks_the_pattern():
    result = run([A, B, A, C, A, B, A, C, {"content": "done"}], detectors=ALTERNATING)

    assert result.termination == Termination.completed
    assert len(ran(result)) == 8


def test_two_identical_plans_are_not_an_alternation():
    result = run([A, A, A, A, A, {"content": "done"}], detectors=ALTERNATING)

    assert result.termination == Termination.completed


# -- repeated_error -------------------------------------------------------------------------


def test_repeated_error_stops_after_the_third_identical_failure_at_iteration_3():
    script = [call("flaky", x=i) for i in range(1, 6)] + [{"content": "done"}]
    result = run(script, detectors={"repeated_error": {}})

    assert result.termination == Termination.stagnation
    assert result.iterations == 3  # the plan holding the third failure ran, then the stop
    assert len(ran(result)) == 3
    data = result.final.data
    assert data["detector"] == "repeated_error"
    assert [(e["iteration"], e["tool"]) for e in data["window"]] == [
        (1, "flaky"),
        (2, "flaky"),
        (3, "flaky"),
    ]
    assert data["window"][0]["error"] == "RuntimeError: service down"


def test_repeated_error_near_miss_different_errors_or_a_success_between():
    drifting = [call("drifting", x=i) for i in range(1, 6)] + [{"content": "done"}]
    assert run(drifting, detectors={"repeated_error": {}}).termination == Termination.completed

    broken = [call("flaky", x=1), call("flaky", x=2), call("lookup", key="a")]
    broken = [*broken, call("flaky", x=3), call("flaky", x=4), {"content": "done"}]
    # Another tool's success does not break flaky's run; only flaky succeeding would. So
    # a window of 5 is a near miss: four failures.
    result = run(broken, detectors={"repeated_error": {"window": 5}})
    assert result.termination == Termination.completed


def test_repeated_error_counts_again_from_zero_after_the_tool_succeeds():
    # The tool itself succeeding breaks its run of failures (docs/loop.md#stuck-detectors:
    # "the same tool failed with the same error W times running"): two failures, a
    # success, two failures is no run of three.
    @tool
    def unreliable(fail: bool) -> str:
        """Fails when asked to."""
        if fail:
            raise RuntimeError("service down")
        return "ok"

    script = [call("unreliable", fail=f) for f in (True, True, False, True, True)]
    result = Agent(
        llm=[*script, {"content": "done"}],
        tools=[unreliable],
        planner="react",
        detectors={"repeated_error": {}},
    ).run("go")

    assert result.termination == Termination.completed
    assert [r.is_error for r in result.tool_calls] == [True, True, False, True, True]


# -- same_result ----------------------------------------------------------------------------


def test_same_result_fires_on_the_third_equal_answer_with_calls_between_at_iteration_5():
    script = [
        call("poll", job="j1"),
        call("lookup", key="a"),
        call("poll", job="j1"),
        call("lookup", key="b"),
        call("poll", job="j1"),
        call("lookup", key="c"),
        {"content": "done"},
    ]
    result = run(script, detectors={"same_result": {}})

    assert result.termination == Termination.stagnation
    assert result.iterations == 5
    data = result.final.data
    assert data["detector"] == "same_result"
    assert [e["iteration"] for e in data["window"]] == [1, 3, 5]
    assert data["window"][0]["result"] == "pending"


def test_same_result_near_miss_the_answer_changes():
    script = [call("counter", job="j1")] * 6 + [{"content": "done"}]
    result = run(script, detectors={"same_result": {}})

    assert result.termination == Termination.completed
    assert len(ran(result)) == 6


# -- monologue ------------------------------------------------------------------------------


class KeepGoing:
    """A planner that needs the word DONE to finish: it asks again after any other text."""

    def step(self, run):
        last = run.conversation.messages[-1]
        if isinstance(last, AssistantMessage) and "DONE" in (last.content or ""):
            return CompleteAction(content=last.content)
        if isinstance(last, AssistantMessage) and last.tool_calls:
            from harness._actions import ExecuteToolsAction

            return ExecuteToolsAction(tool_calls=last.tool_calls)
        return MakeLLMRequestAction()


class KeepGoingPlugin:
    @hookimpl
    def harness_register_planners(self, register):
        register("keep_going", lambda config: KeepGoing())


def chatty(script, **options):
    agent = Agent(
        llm=script,
        tools=make_tools(),
        planner="keep_going",
        plugins=[KeepGoingPlugin()],
        **options,
    )
    return agent.run("go")


def test_monologue_stops_the_request_after_three_text_replies_at_iteration_4():
    script = [{"content": f"thinking {i}"} for i in range(6)]
    result = chatty(script, detectors={"monologue": {}})

    assert result.termination == Termination.stagnation
    assert result.iterations == 4
    assert result.llm_calls == 3  # the fourth request was not made
    data = result.final.data
    assert data["detector"] == "monologue"
    assert [(e["call"], e["iteration"]) for e in data["window"]] == [(1, 1), (2, 2), (3, 3)]
    assert data["window"][2]["content"] == "thinking 2"


def test_monologue_near_miss_a_tool_round_between():
    script = [
        {"content": "thinking"},
        {"content": "still thinking"},
        call("lookup", key="a"),
        {"content": "hm"},
        {"content": "hm hm"},
        {"content": "DONE"},
    ]
    result = chatty(script, detectors={"monologue": {}})

    assert result.termination == Termination.completed


# -- nudge ----------------------------------------------------------------------------------


def test_a_nudge_that_works_the_model_changes_course_and_completes():
    script = [A, A, A, A, {"content": "I will stop repeating: the value is a."}]
    result = run(script, on_stuck="nudge")

    assert result.termination == Termination.completed
    messages = result.conversation.messages
    nudge = [m for m in messages if isinstance(m, UserMessage)][-1]
    assert "same tool plan was requested 4 times" in nudge.content
    # The declined plan's call is answered before the nudge: the transcript stays valid.
    assert messages[-3].content.startswith("not executed:")
    assert [r.status for r in result.tool_calls] == ["ok", "ok", "ok", "not_run"]
    entry = next(m for m in result.memory if m["kind"] == "nudge")
    assert (entry["detector"], entry["iteration"], entry["window"]) == ("repeat", 4, [1, 2, 3])


def test_a_nudge_that_does_not_work_stops_at_the_next_repeat():
    result = run([A] * 8, on_stuck="nudge")

    assert result.termination == Termination.stagnation
    assert result.iterations == 5  # declined + nudged at 4, declined and stopped at 5
    assert [m["kind"] for m in result.memory] == ["nudge", "error"]


def test_a_nudge_for_an_after_the_fact_detector_goes_after_the_tool_results():
    script = [call("flaky", x=i) for i in range(1, 9)]
    result = run(script, detectors={"repeated_error": {}}, on_stuck="nudge")

    assert result.termination == Termination.stagnation
    assert result.iterations == 4  # nudged after the 3rd failure, stopped after the 4th
    kinds = [type(m).__name__ for m in result.conversation.messages]
    assert kinds[-2:] == ["AssistantMessage", "ToolMessage"]
    assert "UserMessage" in kinds[2:]


# -- plugins --------------------------------------------------------------------------------


class EveryThirdPlan:
    """A plugin detector: stops at the third plan, whatever it is."""

    def __init__(self, window):
        self.window = window
        self.plans = 0

    def check_plan(self, run, calls, signature):
        self.plans += 1
        if self.plans >= self.window:
            return Stuck(message="too many plans", window=[{"iteration": run.iteration}])
        return None


class CountingPlugin:
    @hookimpl
    def harness_register_detectors(self, register):
        register("plans", lambda settings, config: EveryThirdPlan(settings.window or 3))


@pytest.mark.hooks("harness_register_detectors")
def test_a_plugin_detector_is_selected_by_name():
    agent = Agent(
        llm=[A, B, C, {"content": "done"}],
        tools=make_tools(),
        planner="react",
        plugins=[CountingPlugin()],
        detectors={"plans": {}},
    )
    result = agent.run("go")

    assert result.termination == Termination.stagnation
    assert result.final.data == {
        "stagnation": True,
        "detector": "plans",
        "window": [{"iteration": 3}],
    }


def test_an_unknown_detector_ends_the_run_in_error_naming_the_known_ones():
    result = run([A], detectors={"repaet": {}})

    assert result.termination == Termination.error
    assert "unknown detector 'repaet'" in result.final.error["message"]
    assert "alternating" in result.final.error["message"]


def test_every_detector_on_a_long_varied_run_never_fires():
    script = [call("lookup", key=f"k{i}") for i in range(300)] + [{"content": "done"}]
    everything = {name: {} for name in ("repeat", "alternating", "repeated_error")}
    everything |= {"same_result": {}, "monologue": {}}
    result = run(script, detectors=everything, max_iterations=400)

    assert result.termination == Termination.completed
    assert len(result.tool_calls) == 300
