"""Stagnation: the tool plan that equals each of the previous W plans is stopped."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import harness._plugins
from harness import Agent, Termination, hookimpl, tool
from harness._canonical import canonical_json
from harness._messages import ToolCall
from harness._stagnation import StagnationDetector, plan_signature

SF = [{"get_weather": {"city": "SF"}}]


def make_tools():
    """Fresh tools per test, counting their real calls."""
    calls = []

    @tool
    async def get_weather(city: str) -> str:
        """Current weather for a city."""
        calls.append(("get_weather", city))
        return f"72F in {city}"

    @tool
    def get_time(zone: str, timestamp: float = 0.0, verbose: bool = False) -> str:
        """The time in a zone."""
        calls.append(("get_time", zone))
        return f"noon in {zone}"

    return [get_weather, get_time], calls


def run(script, **options):
    tools, calls = make_tools()
    result = Agent(llm=script, tools=tools, **options).run("?")
    return result, calls


def test_agentbuilder_runs_three_identical_rounds_and_stops_the_fourth_at_iteration_8():
    result, calls = run([{"tool_calls": SF, "repeat": 10}])

    assert result.termination == Termination.stagnation
    assert result.iterations == 8  # (request, tools) x 3, request, stopped plan
    assert result.llm_calls == 4
    assert calls == [("get_weather", "SF")] * 3
    assert result.final.data == {
        "stagnation": True,
        "signature": [["get_weather", '{"city":"SF"}']],
        "window": 3,
    }
    assert result.final.error is None
    assert [m["kind"] for m in result.memory] == ["error"]
    assert "Stagnation" in result.memory[0]["content"]
    # The stopped plan's call is still pending in the conversation: recorded once.
    assert [(r.id, r.status, r.group) for r in result.tool_calls] == [
        ("call_1_0", "ok", 1),
        ("call_2_0", "ok", 2),
        ("call_3_0", "ok", 3),
        ("call_4_0", "not_run", 4),
    ]


def test_react_stops_the_fourth_identical_round_at_iteration_4():
    result, calls = run([{"tool_calls": SF, "repeat": 10}], planner="react")

    assert result.termination == Termination.stagnation
    assert result.iterations == 4
    assert result.llm_calls == 4
    assert len(calls) == 3
    assert result.final.data["stagnation"] is True
    assert result.final.data["window"] == 3


def test_the_stopped_plan_is_recorded_as_not_run():
    result, _ = run(
        [{"tool_calls": [*SF, {"get_time": {"zone": "UTC"}}], "repeat": 10}], planner="react"
    )

    assert [(r.status, r.group, r.iteration) for r in result.tool_calls] == [
        ("ok", 1, 1),
        ("ok", 1, 1),
        ("ok", 2, 2),
        ("ok", 2, 2),
        ("ok", 3, 3),
        ("ok", 3, 3),
        ("not_run", 4, 4),
        ("not_run", 4, 4),
    ]
    stopped = result.tool_calls[-2:]
    assert [r.id for r in stopped] == ["call_4_0", "call_4_1"]
    assert not any(r.is_error for r in stopped)
    # Calls that never ran fire no action_executed.
    executed = [e for e in result.events if e["event"] == "action_executed"]
    assert len(executed) == 6


@pytest.mark.parametrize("planner", ["agentbuilder", "react"])
def test_reordered_parallel_sets_and_argument_keys_are_the_same_plan(planner):
    script = [
        {
            "tool_calls": [
                {"get_weather": {"city": "SF"}},
                {"get_time": {"zone": "PT", "verbose": True}},
            ]
        },
        {
            "tool_calls": [
                {"get_time": {"verbose": True, "zone": "PT"}},
                {"get_weather": {"city": "SF"}},
            ]
        },
        {
            "tool_calls": [
                {"get_weather": {"city": "SF"}},
                {"get_time": {"verbose": True, "zone": "PT"}},
            ]
        },
        {
            "tool_calls": [
                {"get_time": {"zone": "PT", "verbose": True}},
                {"get_weather": {"city": "SF"}},
            ]
        },
        {"content": "never reached"},
    ]
    result, calls = run(script, planner=planner)

    assert result.termination == Termination.stagnation
    assert len(calls) == 6
    assert result.iterations == (8 if planner == "agentbuilder" else 4)


@pytest.mark.parametrize("planner", ["agentbuilder", "react"])
def test_changing_arguments_is_not_stagnation(planner):
    script = [{"tool_calls": [{"get_weather": {"city": city}}]} for city in "ABCDEF"]
    result, calls = run([*script, {"content": "done"}], planner=planner)

    assert result.termination == Termination.completed
    assert len(calls) == 6


def test_a_different_plan_in_between_resets_the_count():
    a = {"tool_calls": SF}
    b = {"tool_calls": [{"get_weather": {"city": "LA"}}]}
    result, calls = run([a, a, a, b, a, a, a, {"content": "done"}], planner="react")

    assert result.termination == Termination.completed
    assert len(calls) == 7


@pytest.mark.parametrize(("window", "stopped_at"), [(1, 2), (2, 3), (5, 6)])
def test_the_window_sets_how_many_repeats_run(window, stopped_at):
    result, calls = run(
        [{"tool_calls": SF, "repeat": 10}], planner="react", stagnation_window=window
    )

    assert result.termination == Termination.stagnation
    assert result.iterations == stopped_at
    assert len(calls) == window
    assert result.final.data["window"] == window


def test_window_0_turns_detection_off():
    result, calls = run(
        [{"tool_calls": SF, "repeat": 10}], planner="react", stagnation_window=0, max_iterations=6
    )

    assert result.termination == Termination.max_iterations
    assert len(calls) == 6


class IgnoreTimestamp:
    """A signature that ignores the ``timestamp`` argument of every call."""

    @hookimpl
    def harness_action_signature(self, run, tool_calls):
        return tuple(
            sorted(
                (c.name, canonical_json({k: v for k, v in c.arguments.items() if k != "timestamp"}))
                for c in tool_calls
            )
        )


def _ticking_script(n):
    return [
        {"tool_calls": [{"get_time": {"zone": "UTC", "timestamp": 1000.0 + i}}]} for i in range(n)
    ]


@pytest.mark.hooks("harness_action_signature")
def test_the_signature_hook_replaces_the_signature():
    script = [*_ticking_script(6), {"content": "done"}]

    plain, _ = run(script, planner="react")
    assert plain.termination == Termination.completed  # every timestamp differs

    hooked, calls = run(script, planner="react", plugins=[IgnoreTimestamp()])
    assert hooked.termination == Termination.stagnation
    assert hooked.iterations == 4
    assert len(calls) == 3
    assert hooked.final.data["signature"] == [["get_time", '{"zone":"UTC"}']]


@pytest.mark.hooks("harness_action_signature")
def test_a_signature_hook_answering_none_leaves_the_built_in():
    seen = []

    class Abstains:
        @hookimpl
        def harness_action_signature(self, run, tool_calls):
            seen.append([c.id for c in tool_calls])

    result, _ = run([{"tool_calls": SF, "repeat": 10}], planner="react", plugins=[Abstains()])

    assert result.termination == Termination.stagnation
    assert result.iterations == 4
    assert seen == [["call_1_0"], ["call_2_0"], ["call_3_0"], ["call_4_0"]]


def test_the_signature_hook_is_per_agent():
    script = [*_ticking_script(6), {"content": "done"}]
    tools, _ = make_tools()
    Agent(llm=list(script), tools=tools, plugins=[IgnoreTimestamp()])

    result = Agent(llm=list(script), tools=tools, planner="react").run("?")
    assert result.termination == Termination.completed


def test_without_any_signature_detection_is_off(monkeypatch, tmp_path):
    # HARNESS_DISABLE_PLUGINS=harness._stagnation removes the built-in signature: no plan
    # may then look like another (it used to make every plan the same one).
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HARNESS_DISABLE_PLUGINS", "harness.stagnation")
    harness._plugins.discovery.reset()  # discovered again, with the variable
    script = [{"tool_calls": [{"get_weather": {"city": city}}]} for city in "ABCDE"]

    result, calls = run([*script, {"content": "done"}], planner="react")

    assert result.termination == Termination.completed
    assert len(calls) == 5


def test_invalid_plans_count_too_under_retry():
    # A model repeating the same broken call is stuck even though nothing runs.
    result, calls = run(
        [{"tool_calls": [{"get_weather": {"town": "SF"}}], "repeat": 10}],
        planner="react",
        on_validation_error="retry",
    )

    assert result.termination == Termination.stagnation
    assert result.iterations == 4
    assert calls == []


# -- the signature itself --------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=8,
)
arguments = st.dictionaries(st.text(max_size=6), json_values, max_size=4)
calls = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), arguments), min_size=1, max_size=4)


def _reordered(value, rng):
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _reordered(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_reordered(v, rng) for v in value]
    return value


@given(calls=calls, rng=st.randoms(use_true_random=False))
def test_signature_ignores_call_order_and_key_order(calls, rng):
    plan = [ToolCall(id=f"x{i}", name=name, arguments=args) for i, (name, args) in enumerate(calls)]
    shuffled = [
        ToolCall(id=f"y{i}", name=c.name, arguments=_reordered(c.arguments, rng))
        for i, c in enumerate(plan)
    ]
    rng.shuffle(shuffled)

    assert plan_signature(shuffled) == plan_signature(plan)


@given(calls=calls)
def test_signature_tells_different_arguments_apart(calls):
    plan = [ToolCall(id="x", name=name, arguments=args) for name, args in calls]
    changed = [
        *plan[:-1],
        plan[-1].model_copy(update={"arguments": {**plan[-1].arguments, "changed": 1}}),
    ]

    assert plan_signature(changed) != plan_signature(plan)


def test_signature_keeps_malformed_arguments_as_sent():
    a = ToolCall(id="1", name="get_weather", raw_arguments='{"city": ')
    b = ToolCall(id="2", name="get_weather", raw_arguments='{"city": "S')

    assert plan_signature([a]) == (("get_weather", '{"city": '),)
    assert plan_signature([a]) != plan_signature([b])


def test_detector_fires_only_after_window_equal_signatures():
    detector = StagnationDetector(3)
    for _ in range(3):
        assert not detector.is_stagnant("s")
        detector.add("s")
    assert detector.is_stagnant("s")
    assert not detector.is_stagnant("t")


def test_a_declined_plan_is_recorded_once_when_the_planner_copies_its_calls():
    """Calls are told apart by id, not identity: a planner may rebuild the calls it plans."""
    from harness._actions import CompleteAction, ExecuteToolsAction, MakeLLMRequestAction
    from harness._messages import AssistantMessage

    class Copying:
        def __init__(self, config=None):
            pass

        def step(self, run):
            last = run.conversation.messages[-1]
            if isinstance(last, AssistantMessage) and last.tool_calls:
                return ExecuteToolsAction(tool_calls=[c.model_copy() for c in last.tool_calls])
            if isinstance(last, AssistantMessage):
                return CompleteAction(content=last.content)
            return MakeLLMRequestAction()

    class Planners:
        @hookimpl
        def harness_register_planners(self, register):
            register("copying", Copying)

    tools, _ = make_tools()
    result = Agent(
        llm=[{"tool_calls": SF, "repeat": 5}],
        tools=tools,
        planner="copying",
        plugins=[Planners()],
        stagnation_window=2,
    ).run("?")

    assert result.termination == Termination.stagnation
    assert [(r.id, r.status) for r in result.tool_calls] == [
        ("call_1_0", "ok"),
        ("call_2_0", "ok"),
        ("call_3_0", "not_run"),
    ]
