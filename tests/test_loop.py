"""The loop's seed behaviours: round trip, max_iterations, final answer, LLM errors, logging."""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import Any

import pytest

from harness import Agent, Conversation, HarnessError, Termination, hookimpl, tool
from harness._actions import ExecuteToolsAction, FinalResponse
from harness._messages import AssistantMessage, SystemMessage, ToolMessage, UserMessage
from harness.llm import ScriptedLLM

WEATHER_SCRIPT = [
    {"tool_calls": [{"get_weather": {"city": "SF"}}]},
    {"content": "Sunny and 72F."},
]


@tool
async def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"72F in {city}"


class RecordingLLM:
    """A ScriptedLLM that keeps what every request carried."""

    def __init__(self, steps):
        self.script = ScriptedLLM(steps)
        self.requests = []

    async def complete(self, request):
        self.requests.append(
            {
                "call": request.call,
                "options": dict(request.options),
                "messages": request.messages,
                "tools": [schema["function"]["name"] for schema in request.tool_schemas],
            }
        )
        return await self.script.complete(request)


def weather_agent(script=WEATHER_SCRIPT, **options):
    return Agent(llm=list(script), tools=[get_weather], **options)


# -- the round trip ------------------------------------------------------------------------


def test_round_trip_under_agentbuilder_takes_four_iterations():
    result = weather_agent().run("What's the weather in SF?")

    assert result.termination == Termination.completed
    assert result.iterations == 4  # request, tools, request, complete
    assert result.llm_calls == 2
    assert result.final.content == "Sunny and 72F."
    assert result.final.error is None
    assert result.conversation.to_openai() == [
        {"role": "user", "content": "What's the weather in SF?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1_0",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "SF"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1_0", "content": "72F in SF"},
        {"role": "assistant", "content": "Sunny and 72F."},
    ]
    [record] = result.tool_calls
    assert (record.id, record.name, record.arguments, record.result) == (
        "call_1_0",
        "get_weather",
        {"city": "SF"},
        "72F in SF",
    )
    assert (record.status, record.is_error, record.iteration, record.group) == ("ok", False, 2, 1)


def test_round_trip_under_react_takes_two_iterations():
    result = weather_agent(planner="react").run("What's the weather in SF?")

    assert result.termination == Termination.completed
    assert result.iterations == 2  # one LLM round each
    assert result.llm_calls == 2
    assert result.final.content == "Sunny and 72F."
    assert [m.role for m in result.conversation.messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert result.tool_calls[0].iteration == 1


def test_call_ids_number_the_llm_call_and_the_index_in_the_reply():
    script = [
        {"tool_calls": [{"get_weather": {"city": "SF"}}, {"get_weather": {"city": "LA"}}]},
        {"tool_calls": [{"id": "call_abc", "name": "get_weather", "arguments": {"city": "NY"}}]},
        {"content": "done"},
    ]
    result = weather_agent(script).run("weather?")

    assert [r.id for r in result.tool_calls] == ["call_1_0", "call_1_1", "call_abc"]
    tool_ids = [m.tool_call_id for m in result.conversation.messages if isinstance(m, ToolMessage)]
    assert tool_ids == ["call_1_0", "call_1_1", "call_abc"]


def test_a_non_string_tool_result_is_sent_as_json():
    @tool
    def forecast(city: str) -> dict:
        """Forecast."""
        return {"city": city, "temps": [70, 72.5], "rain": None}

    script = [{"tool_calls": [{"forecast": {"city": "SF"}}]}, {"content": "ok"}]
    result = Agent(llm=script, tools=[forecast]).run("?")

    [tool_message] = [m for m in result.conversation.messages if isinstance(m, ToolMessage)]
    assert tool_message.content == '{"city": "SF", "temps": [70, 72.5], "rain": null}'
    assert result.tool_calls[0].result == {"city": "SF", "temps": [70, 72.5], "rain": None}


def test_usage_is_summed_over_the_replies():
    script = [
        {**WEATHER_SCRIPT[0], "usage": {"prompt_tokens": 10, "completion_tokens": 5}},
        {**WEATHER_SCRIPT[1], "usage": {"prompt_tokens": 20, "completion_tokens": 7}},
    ]
    result = weather_agent(script).run("?")

    assert result.usage == {"prompt_tokens": 30, "completion_tokens": 12, "total_tokens": 42}


# -- max_iterations ------------------------------------------------------------------------


def limit_error(limit: int, rounds: int, planner: str = "agentbuilder") -> dict[str, Any]:
    """final.error at the limit: what a tool round costs under the planner, and what this
    run's rounds and an answer need."""
    per_round, answer = {"agentbuilder": (2, 2), "react": (1, 1)}[planner]
    message = (
        f"Max iterations reached ({limit}): under planner {planner} a tool round takes "
        f"{per_round} iteration{'s' if per_round > 1 else ''} and the final answer {answer}, "
        f"so this run's {rounds} tool round{'' if rounds == 1 else 's'} and an answer need "
        f"max_iterations: {rounds * per_round + answer} or more"
    )
    return {"type": "max_iterations", "message": message, "max_iterations": limit}


@pytest.mark.parametrize(("limit", "rounds"), [(1, 0), (2, 1), (5, 2)])
def test_max_iterations_stops_at_the_limit(limit, rounds):
    # A different city each round: no stagnation, the limit is what stops the run.
    script = [{"tool_calls": [{"get_weather": {"city": f"city {n}"}}]} for n in range(10)]
    result = weather_agent(script, max_iterations=limit).run("?")

    assert result.termination == Termination.max_iterations
    assert result.iterations == limit
    assert result.final.error == limit_error(limit, rounds)
    assert result.final.content is None
    assert {"kind": "final", "content": "Max iterations reached"} in result.memory


def test_max_iterations_under_react_counts_llm_rounds():
    script = [{"tool_calls": [{"get_weather": {"city": f"city {n}"}}]} for n in range(10)]
    result = weather_agent(script, planner="react", max_iterations=3).run("?")

    assert result.termination == Termination.max_iterations
    assert (result.iterations, result.llm_calls, len(result.tool_calls)) == (3, 3, 3)
    assert result.final.error == limit_error(3, 3, "react")


def test_a_text_answer_one_trip_too_late_is_still_max_iterations_under_agentbuilder():
    # The answer arrives in iteration 3; completing it would take a fourth.
    result = weather_agent(max_iterations=3).run("What's the weather in SF?")

    assert result.termination == Termination.max_iterations
    assert result.iterations == 3
    assert result.llm_calls == 2
    # The message says why 3 was too few for one tool call: 4 are needed.
    assert result.final.error == limit_error(3, 1)
    assert result.final.error.message.endswith("need max_iterations: 4 or more")
    assert result.final.content is None
    assert result.conversation.messages[-1] == AssistantMessage(
        content="Sunny and 72F.", finish_reason="stop"
    )
    assert result.memory == [{"kind": "final", "content": "Max iterations reached"}]


def test_final_answer_at_the_limit_makes_one_request_with_tool_choice_none():
    llm = RecordingLLM(
        [
            {"tool_calls": [{"get_weather": {"city": "SF"}}]},
            {"tool_calls": [{"get_weather": {"city": "LA"}}]},
            {"content": "SF is sunny."},
        ]
    )
    agent = Agent(llm=llm, tools=[get_weather], max_iterations=3, on_max_iterations="final_answer")
    result = agent.run("weather?")

    assert result.termination == Termination.max_iterations
    assert result.iterations == 3
    assert result.llm_calls == 3
    assert result.final.content == "SF is sunny."
    assert result.final.error == limit_error(3, 1)
    assert [r["options"] for r in llm.requests] == [{}, {}, {"tool_choice": "none"}]
    # The calls of the last assistant message were never run (the limit came first):
    # they are answered before the final request, so the transcript is valid for the API.
    last_request = llm.requests[-1]["messages"]
    assert last_request[-2]["tool_calls"][0]["id"] == "call_2_0"
    assert last_request[-1] == {
        "role": "tool",
        "tool_call_id": "call_2_0",
        "content": "not executed: max iterations reached",
    }
    unanswered = result.conversation.messages[-2]
    assert unanswered == ToolMessage(
        tool_call_id="call_2_0",
        name="get_weather",
        content="not executed: max iterations reached",
        is_error=True,
    )
    # call_2_0 never became a plan, but it was requested: recorded not_run in a group
    # of its own, once.
    assert [(r.id, r.status, r.group, r.iteration) for r in result.tool_calls] == [
        ("call_1_0", "ok", 1, 2),
        ("call_2_0", "not_run", 2, 3),
    ]


@pytest.mark.parametrize("mode", ["stop", "final_answer"])
def test_calls_left_pending_at_the_limit_are_recorded_not_run(mode):
    script = [
        {"tool_calls": [{"get_weather": {"city": "SF"}}, {"get_weather": {"city": "LA"}}]},
        {"content": "x", "latency": 0.5},
    ]
    result = weather_agent(script, max_iterations=1, on_max_iterations=mode).run("?")

    assert result.termination == Termination.max_iterations
    assert [(r.id, r.arguments, r.status, r.is_error, r.group) for r in result.tool_calls] == [
        ("call_1_0", {"city": "SF"}, "not_run", False, 1),
        ("call_1_1", {"city": "LA"}, "not_run", False, 1),
    ]
    assert result.parallel_groups == []  # never executed
    # Placed on the simulated clock where they were given up: before the final-answer
    # request (0.5 s long) answered them "not executed", or at the run's end.
    assert result.sim_time == (0.5 if mode == "final_answer" else 0.0)
    assert {(r.sim_start, r.sim_end) for r in result.tool_calls} == {(0.0, 0.0)}


def test_calls_left_pending_when_a_hook_raises_are_recorded_not_run():
    class Broken:
        @hookimpl
        def harness_iteration_start(self, run, iteration):
            if iteration == 2:
                raise RuntimeError("observer bug")

    result = weather_agent(plugins=[Broken()]).run("?")

    assert result.termination == Termination.error
    assert [(r.id, r.status, r.group) for r in result.tool_calls] == [("call_1_0", "not_run", 1)]


def test_calls_of_an_earlier_run_are_not_recorded_again():
    first = weather_agent(max_iterations=1).run("?")
    assert [r.status for r in first.tool_calls] == ["not_run"]

    class Broken:
        @hookimpl
        def harness_iteration_start(self, run, iteration):
            raise RuntimeError("observer bug")

    again = weather_agent(plugins=[Broken()]).run(conversation=first.conversation)
    assert again.tool_calls == []


def test_calls_left_unanswered_in_a_continued_conversation_are_answered_before_a_request():
    """docs/loop.md: every unanswered call gets a ToolMessage before any request,
    also one of the conversation the run continues (react asks the model first)."""
    sent = []

    class Observer:
        @hookimpl
        def harness_llm_request(self, run, request):
            sent.append(request.conversation.to_openai())

    history = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "SF"}'},
                }
            ],
        },
    ]
    result = weather_agent([{"content": "done"}], planner="react", plugins=[Observer()]).run(
        conversation=history
    )

    assert result.termination == Termination.completed
    (messages,) = sent
    assert messages[-1]["role"] == "tool" and messages[-1]["tool_call_id"] == "c1"
    assert messages[-1]["content"].startswith("not executed: ")
    assert result.tool_calls == []  # an earlier run's call: not this run's to record


def test_final_answer_request_is_seen_by_the_llm_request_hook():
    seen = []

    class Observer:
        @hookimpl
        def harness_llm_request(self, run, request):
            seen.append((request.call, request.tool_choice))

    script = [{"tool_calls": [{"get_weather": {"city": f"c{n}"}}]} for n in range(2)]
    result = weather_agent(
        [*script, {"content": "best effort"}],
        planner="react",
        max_iterations=2,
        on_max_iterations="final_answer",
        plugins=[Observer()],
    ).run("?")

    assert seen == [(1, None), (2, None), (3, "none")]
    assert result.termination == Termination.max_iterations
    assert result.final.content == "best effort"
    # Under react both plans ran, so nothing is left unanswered.
    assert not any(
        isinstance(m, ToolMessage) and m.content.startswith("not executed")
        for m in result.conversation.messages
    )


def test_final_answer_uses_a_late_text_answer_without_a_request():
    llm = RecordingLLM(WEATHER_SCRIPT)
    agent = Agent(llm=llm, tools=[get_weather], max_iterations=3, on_max_iterations="final_answer")
    result = agent.run("weather?")

    assert result.termination == Termination.max_iterations
    assert result.final.content == "Sunny and 72F."
    assert result.llm_calls == 2
    assert all(r["options"] == {} for r in llm.requests)


def test_final_answer_after_a_late_reply_with_text_and_tool_calls_makes_one_more_request():
    # Only assistant *text* is an answer (docs/loop.md#max_iterations): a late reply that
    # also asks for tools is not, so its calls are answered and one more request made.
    llm = RecordingLLM(
        [
            {"tool_calls": [{"get_weather": {"city": "SF"}}]},
            {"content": "Let me check LA too.", "tool_calls": [{"get_weather": {"city": "LA"}}]},
            {"content": "SF is sunny."},
        ]
    )
    agent = Agent(llm=llm, tools=[get_weather], max_iterations=3, on_max_iterations="final_answer")
    result = agent.run("weather?")

    assert result.termination == Termination.max_iterations
    assert result.llm_calls == 3
    assert result.final.content == "SF is sunny."
    assert [r["options"] for r in llm.requests] == [{}, {}, {"tool_choice": "none"}]
    assert llm.requests[-1]["messages"][-1]["content"] == "not executed: max iterations reached"


def test_final_answer_answered_with_tool_calls_is_a_scenario_error():
    script = [{"tool_calls": [{"get_weather": {"city": "SF"}}]}] * 2
    result = weather_agent(script, max_iterations=1, on_max_iterations="final_answer").run("?")

    assert result.termination == Termination.error
    assert 'tool_choice="none"' in result.final.error["message"]


def test_a_truncated_final_answer_is_marked():
    script = [
        {"tool_calls": [{"get_weather": {"city": "SF"}}]},
        {"content": "It is sunn", "finish_reason": "length"},
    ]
    result = weather_agent(script, max_iterations=1, on_max_iterations="final_answer").run("?")

    assert result.final.content == "It is sunn"
    assert result.final.data == {"truncated": True}


def test_a_truncated_late_answer_at_the_limit_is_marked():
    # The answer arrives in iteration 3 (one trip too late): it is used without a request.
    script = [
        {"tool_calls": [{"get_weather": {"city": "SF"}}]},
        {"content": "It is sunn", "finish_reason": "length"},
    ]
    result = weather_agent(script, max_iterations=3, on_max_iterations="final_answer").run("?")

    assert result.llm_calls == 2
    assert result.final.content == "It is sunn"
    assert result.final.data == {"truncated": True}


# -- truncation, empty runs, starting state ---------------------------------------------------


@pytest.mark.parametrize("planner", ["agentbuilder", "react"])
def test_a_truncated_reply_completes_with_data_truncated(planner):
    script = [{"content": "The weather in SF is", "finish_reason": "length"}]
    result = weather_agent(script, planner=planner).run("?")

    assert result.termination == Termination.completed
    assert result.final.content == "The weather in SF is"
    assert result.final.data == {"truncated": True}


def test_a_complete_reply_is_not_marked_truncated():
    result = weather_agent([{"content": "Sunny."}]).run("?")

    assert result.final.data == {}


@pytest.mark.parametrize("planner", ["agentbuilder", "react"])
def test_only_system_messages_end_the_run_empty(planner):
    llm = RecordingLLM([{"content": "never sent"}])
    result = Agent(llm=llm, system="You are terse.", planner=planner).run()

    assert result.termination == Termination.empty
    assert result.iterations == 1
    assert result.llm_calls == 0
    assert llm.requests == []
    assert result.conversation.messages == [SystemMessage(content="You are terse.")]


def test_the_system_prompt_comes_first():
    llm = RecordingLLM([{"content": "Hi."}])
    Agent(llm=llm, system="Be brief.").run("Hello")

    assert llm.requests[0]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hello"},
    ]


def test_a_saved_conversation_continues_with_new_input(tmp_path):
    first = weather_agent(system="Be brief.").run("Weather in SF?")
    first.conversation.save(tmp_path / "saved.json")
    saved = Conversation.load(tmp_path / "saved.json")

    llm = RecordingLLM(
        [{"tool_calls": [{"get_weather": {"city": "LA"}}]}, {"content": "LA is sunny too."}]
    )
    second = Agent(llm=llm, tools=[get_weather]).run("And in LA?", conversation=saved)

    assert second.termination == Termination.completed
    assert second.final.content == "LA is sunny too."
    assert second.conversation.messages[: len(saved)] == saved.messages
    assert second.conversation.messages[len(saved)] == UserMessage(content="And in LA?")
    # The whole history went to the model, and the caller's conversation is untouched.
    assert llm.requests[0]["messages"] == [
        *saved.to_openai(),
        {"role": "user", "content": "And in LA?"},
    ]
    assert saved == Conversation.load(tmp_path / "saved.json")
    # Call ids count this run's LLM calls.
    assert second.tool_calls[0].id == "call_1_0"


def test_a_saved_conversation_continues_without_input():
    conversation = Conversation(
        messages=[
            UserMessage(content="Weather in SF?"),
            AssistantMessage(
                tool_calls=[{"id": "c1", "name": "get_weather", "arguments": {"city": "SF"}}]
            ),
        ]
    )
    result = weather_agent([{"content": "Sunny."}]).run(conversation=conversation)

    # agentbuilder runs the pending calls first, then asks the model.
    assert result.termination == Termination.completed
    assert [(r.id, r.status) for r in result.tool_calls] == [("c1", "ok")]
    assert result.iterations == 3
    assert len(conversation) == 2


def test_pending_tool_calls_are_answered_before_a_new_user_turn():
    # A run stopped at the limit leaves the model's last calls unanswered.
    stopped = weather_agent(max_iterations=1).run("Weather in SF?")
    assert stopped.conversation.messages[-1].tool_calls

    llm = RecordingLLM([{"content": "Sorry, let me answer directly."}])
    Agent(llm=llm, tools=[get_weather]).run("Just guess.", conversation=stopped.conversation)

    sent = llm.requests[0]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[2]["tool_call_id"] == "call_1_0"
    assert sent[2]["content"].startswith("not executed: ")


def test_run_inside_a_running_event_loop_points_to_arun():
    agent = weather_agent()

    async def main():
        with pytest.raises(HarnessError, match=r"await agent\.arun\("):
            agent.run("?")
        return await agent.arun("?")

    result = asyncio.run(main())
    assert result.termination == Termination.completed


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"max_iterations": 0},
            "Agent: max_iterations: expected 1 or more, got 0",
        ),
        ({"on_validation_error": "retyr"}, "Agent: on_validation_error: expected 'stop' or"),
    ],
)
def test_bad_agent_options_are_a_clear_error(options, message):
    with pytest.raises(HarnessError) as info:
        weather_agent(**options)

    assert str(info.value).startswith(message)
    assert "errors.pydantic.dev" not in str(info.value)


# -- bad Python-API input: one clear HarnessError naming the parameter -------------------------


def _add(a: int, b: int = 1) -> int:
    """Add."""
    return a + b


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"llm": None}, "Agent(llm=...) takes an LLM source (an object with async complete"),
        ({"llm": "gpt-4o"}, "Agent(llm=...) takes an LLM source"),
        ({"tools": get_weather}, "Agent(tools=...) takes a list of tools"),
        ({"tools": "get_weather"}, "Agent(tools=...) takes a list of tools"),
        (
            {"tools": [functools.partial(_add, b=2)]},
            f"Agent(tools=...): functools.partial of {__name__}._add has no __name__",
        ),
        ({"plugins": object()}, "Agent(plugins=...) takes a list of plugin objects"),
        (
            {"max_iterations": True},
            "Agent: max_iterations: expected a valid integer, got True",
        ),
        (
            {"max_iterations": "3"},
            "Agent: max_iterations: expected a valid integer, got '3'",
        ),
        ({"stagnation_window": False}, "Agent: stagnation_window: expected a valid integer"),
    ],
)
def test_bad_agent_arguments_are_one_clear_error(options, message):
    options = {"llm": [], **options}
    with pytest.raises(HarnessError) as info:
        Agent(**options)

    text = str(info.value)
    assert text.startswith(message)
    assert "errors.pydantic.dev" not in text
    assert " at 0x" not in text  # no memory addresses


def test_a_partial_with_a_name_is_a_tool_documented_like_its_function():
    add_two = tool(functools.partial(_add, b=2), name="add_two")

    assert add_two.description == "Add."
    assert add_two.parameters["properties"]["a"] == {"type": "integer"}
    script = [{"tool_calls": [{"add_two": {"a": 1}}]}, {"content": "3"}]
    assert Agent(llm=script, tools=[add_two]).run("?").tool_calls[0].result == 3


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"input": 123}, "Agent.run(input=...) takes the user's message as a string, got int 123"),
        ({"conversation": "hi"}, "Agent.run(conversation=...) takes a Conversation or a list"),
        ({"conversation": ["hi"]}, "Agent.run(conversation=...): item 0 is str 'hi'; expected"),
        (
            {"conversation": [{"role": "robot", "content": "beep"}]},
            "Agent.run(conversation=...): item 0 is not an OpenAI message: unknown message role",
        ),
        (
            {"conversation": [{"role": "assistant", "tool_calls": ["x"]}]},
            "Agent.run(conversation=...): item 0 is not an OpenAI message: each tool_calls entry",
        ),
        (
            {"conversation": [{"role": "tool", "tool_call_id": 7, "content": "x"}]},
            "Agent.run(conversation=...): item 0 is not an OpenAI message: tool_call_id: Input",
        ),
    ],
)
def test_bad_run_arguments_are_one_clear_error(arguments, message):
    with pytest.raises(HarnessError) as info:
        weather_agent().run(**arguments)

    assert str(info.value).startswith(message)
    assert "errors.pydantic.dev" not in str(info.value)


def test_a_conversation_may_be_a_list_of_openai_messages_or_of_messages():
    history = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "Weather in SF?"},
        {"role": "assistant", "content": "Sunny."},
    ]
    llm = RecordingLLM([{"content": "Also sunny."}])
    result = Agent(llm=llm).run("And LA?", conversation=history)

    assert result.termination == Termination.completed
    assert llm.requests[0]["messages"] == [*history, {"role": "user", "content": "And LA?"}]
    as_messages = Conversation.from_openai(history).messages
    again = Agent(llm=[{"content": "Also sunny."}]).run("And LA?", conversation=as_messages)
    assert again.conversation.messages[:3] == as_messages


@pytest.mark.parametrize("made", [None, object()])
def test_a_planner_factory_must_return_an_object_with_step(made):
    class Plugin:
        @hookimpl
        def harness_register_planners(self, register):
            register("lazy", lambda config: made)

    result = Agent(llm=[], planner="lazy", plugins=[Plugin()]).run("?")

    assert result.termination == Termination.error
    message = result.final.error["message"]
    assert message.startswith("planner 'lazy': its factory returned ")
    assert message.endswith("a planner factory must return an object with step(run)")


def test_plugin_errors_name_an_instance_by_its_class():
    class BadTools:
        @hookimpl
        def harness_register_tools(self, register):
            register("not", "a tool")

    class Misspelled:
        def harness_agent_strat(self, run):
            pass

    where = f"{__name__}.test_plugin_errors_name_an_instance_by_its_class"
    for plugin, expected in [
        (BadTools(), f"{where}.BadTools: register(tool) takes one @tool function"),
        (Misspelled(), f"plugin {where}.Misspelled: unknown hook harness_agent_strat"),
    ]:
        with pytest.raises(HarnessError) as info:
            Agent(llm=[], plugins=[plugin])
        assert str(info.value).startswith(expected)
        assert " at 0x" not in str(info.value)


def test_two_instances_of_one_plugin_class_both_register():
    seen = []

    class Counter:
        def __init__(self, label):
            self.label = label

        @hookimpl
        def harness_agent_start(self, run):
            seen.append(self.label)

    Agent(llm=[{"content": "hi"}], plugins=[Counter("a"), Counter("b")]).run("?")
    assert sorted(seen) == ["a", "b"]


def test_a_bad_script_step_names_the_step():
    with pytest.raises(HarnessError) as info:
        weather_agent([{"content": "fine"}, {"contnet": "typo"}])

    assert str(info.value) == "script step 2: contnet: Extra inputs are not permitted"


@pytest.mark.parametrize("name", ["id", "arguments", "raw_arguments", "name"])
def test_the_short_form_calls_tools_named_like_long_form_keys(name):
    @tool(name=name)
    def echo(x: int) -> int:
        """Echo."""
        return x

    script = [{"tool_calls": [{name: {"x": 1}}]}, {"content": "done"}]
    result = Agent(llm=script, tools=[echo]).run("?")

    assert result.termination == Termination.completed
    assert [(r.name, r.arguments, r.result) for r in result.tool_calls] == [(name, {"x": 1}, 1)]


def test_the_long_form_is_the_one_with_a_name():
    script = ScriptedLLM(
        [
            {"tool_calls": [{"name": "get_weather"}]},
            {"tool_calls": [{"name": "get_weather", "arguments": {"city": "SF"}, "id": "c1"}]},
        ]
    )
    calls = [s.tool_calls[0] for s in script.steps]
    assert [(c.name, c.arguments, c.id) for c in calls] == [
        ("get_weather", None, None),
        ("get_weather", {"city": "SF"}, "c1"),
    ]


def test_a_long_form_key_without_name_is_a_clear_error():
    with pytest.raises(HarnessError, match=r"script step 1: .*'id' needs `name` too"):
        Agent(llm=[{"tool_calls": [{"id": "call_abc"}]}])


# -- LLM errors ------------------------------------------------------------------------------


def test_an_http_error_ends_the_run_in_llm_error():
    script = [WEATHER_SCRIPT[0], {"error": {"status": 429, "message": "Rate limited"}}]
    result = weather_agent(script).run("?")

    assert result.termination == Termination.llm_error
    assert result.final.error["message"] == "Rate limited"
    assert result.final.error["status"] == 429
    assert set(result.final.error) == {"type", "message", "status"}
    assert result.llm_calls == 2  # the failed request counts
    assert [r.status for r in result.tool_calls] == ["ok"]
    assert result.memory == [{"kind": "error", "content": "LLM error: Rate limited"}]


def test_a_timeout_ends_the_run_in_llm_error_without_status():
    result = weather_agent([{"error": "timeout"}]).run("?")

    assert result.termination == Termination.llm_error
    assert result.final.error["status"] is None
    assert "timed out" in result.final.error["message"]
    assert set(result.final.error) == {"type", "message", "status"}


@pytest.mark.parametrize("planner", ["agentbuilder", "react"])
def test_an_exhausted_script_ends_the_run_in_llm_error(planner):
    result = weather_agent(WEATHER_SCRIPT[:1], planner=planner).run("?")

    assert result.termination == Termination.llm_error
    assert result.final.error["message"] == "script exhausted after 1 responses"
    assert result.final.error["status"] is None
    assert result.llm_calls == 2


def test_a_repeated_step_counts_each_reply():
    script = [
        {"tool_calls": [{"get_weather": {"city": "SF"}}], "repeat": 2},
        {"content": "done"},
    ]
    result = weather_agent(script, stagnation_window=0).run("?")

    assert result.llm_calls == 3
    assert [r.id for r in result.tool_calls] == ["call_1_0", "call_2_0"]


# -- errors that are not the model's ------------------------------------------------------------


def test_a_planner_that_raises_ends_the_run_in_error():
    class Broken:
        def step(self, run):
            raise RuntimeError("planner bug")  # the line the message points to

    class Plugin:
        @hookimpl
        def harness_register_planners(self, register):
            register("broken", lambda config: Broken())

    result = Agent(llm=[], planner="broken", plugins=[Plugin()]).run("?")

    assert result.termination == Termination.error
    assert result.final.error["exception"] == "RuntimeError"
    # Where the plugin raised: its file (as imported) and line, and the function.
    line = Broken.step.__code__.co_firstlineno + 1
    assert result.final.error["message"] == (f"planner bug (raised at test_loop.py:{line} in step)")
    assert result.memory[-1]["content"] == f"RuntimeError: {result.final.error['message']}"
    assert result.iterations == 1


def test_a_planner_returning_something_else_is_an_error_naming_it():
    class Odd:
        def step(self, run):
            return "not a plan"

    class Plugin:
        @hookimpl
        def harness_register_planners(self, register):
            register("odd", lambda config: Odd())

    result = Agent(llm=[], planner="odd", plugins=[Plugin()]).run("?")

    assert result.termination == Termination.error
    assert "'odd'" in result.final.error["message"]
    assert "'not a plan'" in result.final.error["message"]


def planner_plugin(name, step):
    """A plugin registering a planner whose step() is ``step``."""

    class Planner:
        def __init__(self, config):
            self.step = step

    class Plugin:
        @hookimpl
        def harness_register_planners(self, register):
            register(name, Planner)

    return Plugin()


@pytest.mark.parametrize("plan", [[], ExecuteToolsAction(tool_calls=[])])
def test_an_empty_tool_plan_ends_the_run_empty(plan, caplog):
    plugin = planner_plugin("idle", lambda run: plan)
    with caplog.at_level(logging.INFO, logger="harness"):
        result = Agent(llm=[], planner="idle", plugins=[plugin]).run("?")

    assert result.termination == Termination.empty
    assert result.iterations == 1
    assert result.tool_calls == []
    assert "Executing 0 tool call(s)" not in caplog.messages


# -- logging ---------------------------------------------------------------------------------


def _harness_log(caplog):
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "harness"]


def test_log_lines_of_a_round_trip(caplog):
    caplog.set_level(logging.INFO, logger="harness")
    weather_agent(max_iterations=10).run("?")

    assert _harness_log(caplog) == [
        ("INFO", "Agentic iteration 1/10"),
        ("INFO", "Agentic iteration 2/10"),
        ("INFO", "Executing 1 tool call(s)"),
        ("INFO", "Agentic iteration 3/10"),
        ("INFO", "Final response received (no tool calls)"),
        ("INFO", "Agentic iteration 4/10"),
    ]


def test_log_lines_of_a_parallel_plan_and_the_limit(caplog):
    caplog.set_level(logging.INFO, logger="harness")
    script = [
        {"tool_calls": [{"get_weather": {"city": "SF"}}, {"get_weather": {"city": "LA"}}]},
        {"content": "too late"},
    ]
    weather_agent(script, max_iterations=2).run("?")

    assert _harness_log(caplog) == [
        ("INFO", "Agentic iteration 1/2"),
        ("INFO", "Agentic iteration 2/2"),
        ("INFO", "Executing 2 tool call(s)"),
        ("WARNING", "Max agentic iterations reached without final response"),
    ]


def test_no_executing_line_when_validation_stops_the_plan(caplog):
    # Nothing runs when a plan fails validation: the log must not say it does.
    caplog.set_level(logging.INFO, logger="harness")
    result = weather_agent([{"tool_calls": [{"get_weather": {"city": 5}}]}]).run("?")
    assert result.termination == Termination.validation_error
    assert [m for _, m in _harness_log(caplog) if m.startswith("Executing")] == []
    assert _harness_log(caplog)[-1] == ("INFO", "Agentic iteration 2/80")


def test_a_final_response_displays_a_message_unless_told_otherwise():
    assert FinalResponse().operation == "display_message"
    assert weather_agent().run("?").final.operation == "display_message"
