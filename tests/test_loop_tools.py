"""Running a tool plan: concurrency, model order, validation, failures, the simulated clock."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from harness import Agent, Termination, simclock, tool
from harness._messages import ToolMessage
from harness.llm import ScriptedLLM

PYDANTIC_URL = "https://errors.pydantic.dev"


def tool_messages(result):
    return [m for m in result.conversation.messages if isinstance(m, ToolMessage)]


# -- concurrency -----------------------------------------------------------------------------


def test_three_sleeping_tools_take_about_the_longest_and_answer_in_model_order():
    finished = []

    @tool
    async def nap(name: str, seconds: float) -> str:
        """Sleep for real."""
        await asyncio.sleep(seconds)
        finished.append(name)
        return f"{name} slept {seconds}"

    sleeps = {"slow": 0.6, "medium": 0.5, "fast": 0.4}
    plan = [{"nap": {"name": name, "seconds": seconds}} for name, seconds in sleeps.items()]
    agent = Agent(llm=[{"tool_calls": plan}, {"content": "rested"}], tools=[nap])
    result = agent.run("nap")

    # They finished shortest first (the sleeps overlap: the barrier tests below prove
    # it without a stopwatch), yet the answers are in the model's order.
    assert finished == ["fast", "medium", "slow"]
    assert [m.content for m in tool_messages(result)] == [
        "slow slept 0.6",
        "medium slept 0.5",
        "fast slept 0.4",
    ]
    assert [m.tool_call_id for m in tool_messages(result)] == ["call_1_0", "call_1_1", "call_1_2"]
    assert [r.id for r in result.tool_calls] == ["call_1_0", "call_1_1", "call_1_2"]
    assert [r.group for r in result.tool_calls] == [1, 1, 1]


def test_async_calls_of_one_plan_overlap():
    barrier = asyncio.Barrier(3)

    @tool
    async def meet(name: str) -> str:
        """Wait for the two others: a deadlock unless all three run at once."""
        await asyncio.wait_for(barrier.wait(), timeout=5)
        return name

    plan = [{"meet": {"name": n}} for n in "abc"]
    result = Agent(llm=[{"tool_calls": plan}, {"content": "met"}], tools=[meet]).run("?")

    assert [(r.status, r.result) for r in result.tool_calls] == [
        ("ok", "a"),
        ("ok", "b"),
        ("ok", "c"),
    ]


def test_sync_calls_of_one_plan_overlap_in_threads():
    barrier = threading.Barrier(3, timeout=5)

    @tool
    def meet(name: str) -> str:
        """Wait for the two others, blocking."""
        barrier.wait()
        return name

    plan = [{"meet": {"name": n}} for n in "abc"]
    result = Agent(llm=[{"tool_calls": plan}, {"content": "met"}], tools=[meet]).run("?")

    assert [r.status for r in result.tool_calls] == ["ok", "ok", "ok"]


def _logging_step(log: list[str]):
    """A tool that logs its entry and exit around a real pause."""

    @tool
    async def step(name: str) -> str:
        """Log entry and exit around a pause."""
        log.append(f"start {name}")
        await asyncio.sleep(0.01)
        log.append(f"end {name}")
        return name

    return step


def test_parallel_tools_false_runs_calls_one_after_another():
    log = []
    step = _logging_step(log)
    plan = [{"step": {"name": n}} for n in "abc"]
    result = Agent(
        llm=[{"tool_calls": plan}, {"content": "ok"}], tools=[step], parallel_tools=False
    ).run("?")

    assert log == ["start a", "end a", "start b", "end b", "start c", "end c"]
    assert [r.group for r in result.tool_calls] == [1, 1, 1]


def test_parallel_plans_interleave_when_parallel():
    log = []
    step = _logging_step(log)
    plan = [{"step": {"name": n}} for n in "abc"]
    Agent(llm=[{"tool_calls": plan}, {"content": "ok"}], tools=[step]).run("?")

    assert log[:3] == ["start a", "start b", "start c"]


def test_each_record_carries_its_plan_group():
    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    script = [
        {"tool_calls": [{"echo": {"text": "a"}}, {"echo": {"text": "b"}}]},
        {"tool_calls": [{"echo": {"text": "c"}}]},
        {"tool_calls": [{"echo": {"text": "d"}}, {"echo": {"text": "e"}}, {"echo": {"text": "f"}}]},
        {"content": "done"},
    ]
    result = Agent(llm=script, tools=[echo]).run("?")

    assert [(r.result, r.group, r.iteration) for r in result.tool_calls] == [
        ("a", 1, 2),
        ("b", 1, 2),
        ("c", 2, 4),
        ("d", 3, 6),
        ("e", 3, 6),
        ("f", 3, 6),
    ]
    assert result.parallel_groups == [["echo", "echo"], ["echo", "echo", "echo"]]


def test_the_simulated_clock_overlaps_parallel_calls_and_adds_sequential_ones():
    @tool
    def slow(seconds: float) -> str:
        """Spend simulated time."""
        simclock.sleep(seconds)
        return "ok"

    plan = [{"slow": {"seconds": 2.0}}, {"slow": {"seconds": 0.5}}]
    script = [{"tool_calls": plan}, {"content": "done", "latency": 1.0}]

    parallel = Agent(llm=list(script), tools=[slow]).run("?")
    assert [(r.sim_start, r.sim_end) for r in parallel.tool_calls] == [(0.0, 2.0), (0.0, 0.5)]
    assert parallel.sim_time == 3.0

    sequential = Agent(llm=list(script), tools=[slow], parallel_tools=False).run("?")
    assert [(r.sim_start, r.sim_end) for r in sequential.tool_calls] == [(0.0, 2.0), (2.0, 2.5)]
    assert sequential.sim_time == 3.5


# -- validation ------------------------------------------------------------------------------


def validation_tools():
    ran = []

    @tool
    async def get_weather(city: str, days: int = 1) -> str:
        """Weather."""
        ran.append(city)
        return f"sunny in {city}"

    return [get_weather], ran


def test_two_invalid_calls_give_one_validation_error_and_no_call_of_the_plan_runs():
    tools, ran = validation_tools()
    plan = [
        {"get_weather": {"city": "SF"}},  # valid, but its plan is rejected
        {"get_weather": {"town": "LA"}},
        {"get_weather": {"city": "NY", "days": "many"}},
    ]
    result = Agent(llm=[{"tool_calls": plan}, {"content": "never"}], tools=tools).run("?")

    assert result.termination == Termination.validation_error
    assert ran == []
    error = result.final.error
    assert error["type"] == "validation_error"
    assert [(e["call_id"], e["tool"]) for e in error["errors"]] == [
        ("call_1_1", "get_weather"),
        ("call_1_2", "get_weather"),
    ]
    assert {e["type"] for e in error["errors"][0]["errors"]} == {"missing", "extra_forbidden"}
    assert [(e["type"], e["loc"]) for e in error["errors"][1]["errors"]] == [
        ("int_parsing", ["days"])
    ]
    assert [r.status for r in result.tool_calls] == ["not_run", "invalid", "invalid"]
    assert [r.is_error for r in result.tool_calls] == [False, True, True]
    assert tool_messages(result) == []
    assert result.llm_calls == 1
    assert not [e for e in result.events if e["event"] == "action_executed"]
    assert [m["kind"] for m in result.memory] == ["error"]


def test_malformed_json_arguments_are_a_validation_failure():
    tools, ran = validation_tools()
    plan = [{"name": "get_weather", "raw_arguments": '{"city": '}]
    result = Agent(llm=[{"tool_calls": plan}], tools=tools).run("?")

    assert result.termination == Termination.validation_error
    [failure] = result.final.error["errors"]
    assert failure["errors"][0]["type"] == "json_invalid"
    assert result.conversation.messages[-1].tool_calls[0].raw_arguments == '{"city": '
    assert ran == []


def test_arguments_that_are_not_an_object_are_a_validation_failure():
    tools, _ = validation_tools()
    plan = [{"name": "get_weather", "raw_arguments": '["SF"]'}]
    result = Agent(llm=[{"tool_calls": plan}], tools=tools).run("?")

    assert result.termination == Termination.validation_error


# A model's arguments text -> (arguments, raw_arguments): one reading for every source.
ARGUMENT_TEXTS = [
    ('{"city": "SF"}', {"city": "SF"}, None),
    ("", {}, None),  # streamed replies send "" for a tool without parameters
    ('{"city": ', {}, '{"city": '),
    ('["SF"]', {}, '["SF"]'),
    ("null", {}, "null"),
    ("  ", {}, "  "),
]


@pytest.mark.parametrize(("text", "arguments", "raw"), ARGUMENT_TEXTS)
def test_scripted_raw_arguments_are_read_like_a_recorded_models(text, arguments, raw):
    from harness._messages import Conversation, parse_arguments

    script = [{"tool_calls": [{"name": "get_weather", "raw_arguments": text}]}]
    [call] = Agent(llm=script, max_iterations=1).run("?").conversation.messages[-1].tool_calls
    assert (call.arguments, call.raw_arguments) == (arguments, raw)
    # The OpenAI SDK path and saved OpenAI histories read arguments with the same function.
    assert parse_arguments(text) == (arguments, raw)
    openai = [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": text}}]}]
    [read] = Conversation.from_openai(openai).messages[0].tool_calls
    assert (read.arguments, read.raw_arguments) == (arguments, raw)


def test_scripted_raw_arguments_that_are_a_json_object_run_the_tool():
    tools, ran = validation_tools()
    plan = [{"name": "get_weather", "raw_arguments": '{"city": "SF"}'}]
    result = Agent(llm=[{"tool_calls": plan}, {"content": "ok"}], tools=tools).run("?")

    assert result.termination == Termination.completed
    assert result.tool_calls[0].arguments == {"city": "SF"}
    assert ran == ["SF"]


def test_extra_arguments_are_a_validation_failure():
    tools, ran = validation_tools()
    plan = [{"get_weather": {"city": "SF", "units": "metric"}}]
    result = Agent(llm=[{"tool_calls": plan}], tools=tools).run("?")

    assert result.termination == Termination.validation_error
    [failure] = result.final.error["errors"]
    assert [(e["type"], e["loc"]) for e in failure["errors"]] == [("extra_forbidden", ["units"])]
    assert ran == []


def test_retry_runs_the_valid_calls_and_answers_invalid_ones_with_errors():
    tools, ran = validation_tools()
    plan = [
        {"get_weather": {"town": "LA"}},
        {"get_weather": {"city": "SF"}},
        {"name": "get_weather", "raw_arguments": '{"city": '},
    ]
    result = Agent(
        llm=[{"tool_calls": plan}, {"content": "SF is sunny"}],
        tools=tools,
        on_validation_error="retry",
    ).run("?")

    assert result.termination == Termination.completed
    assert ran == ["SF"]
    messages = tool_messages(result)
    assert [(m.tool_call_id, m.is_error) for m in messages] == [
        ("call_1_0", True),
        ("call_1_1", False),
        ("call_1_2", True),
    ]
    assert messages[0].content.startswith("Invalid arguments for get_weather: ")
    assert "city" in messages[0].content and "town" in messages[0].content
    assert "Invalid JSON" in messages[2].content
    assert [r.status for r in result.tool_calls] == ["invalid", "ok", "invalid"]
    executed = [e["status"] for e in result.events if e["event"] == "action_executed"]
    assert executed == ["invalid", "ok", "invalid"]


@pytest.mark.parametrize("mode", ["stop", "retry"])
def test_validation_texts_carry_no_pydantic_urls(mode):
    tools, _ = validation_tools()
    plan = [
        {"get_weather": {"town": "LA"}},
        {"get_weather": {"city": 3, "days": [1]}},
        {"name": "get_weather", "raw_arguments": "{nope"},
    ]
    result = Agent(
        llm=[{"tool_calls": plan}, {"content": "ok"}], tools=tools, on_validation_error=mode
    ).run("?")

    text = json.dumps(result.model_dump(mode="json"))
    assert "errors.pydantic.dev" not in text
    assert PYDANTIC_URL not in text
    assert "Field required" in text  # the errors themselves are there


# -- tool failures ---------------------------------------------------------------------------


def test_a_raising_tool_becomes_an_error_tool_message_and_the_run_continues():
    @tool
    def lookup(city: str) -> str:
        """Fails for unknown cities."""
        raise LookupError(f"no such city: {city}")

    script = [{"tool_calls": [{"lookup": {"city": "Atlantis"}}]}, {"content": "Sorry."}]
    result = Agent(llm=script, tools=[lookup]).run("?")

    assert result.termination == Termination.completed
    assert result.final.content == "Sorry."
    [message] = tool_messages(result)
    assert message.content == "LookupError: no such city: Atlantis"
    assert message.is_error is True
    [record] = result.tool_calls
    assert (record.status, record.is_error, record.result) == (
        "error",
        True,
        "LookupError: no such city: Atlantis",
    )


def test_a_raising_call_does_not_stop_the_others_of_its_plan():
    @tool
    async def flaky(n: int) -> int:
        """Fails on odd numbers."""
        if n % 2:
            raise ValueError(f"odd {n}")
        return n * 10

    plan = [{"flaky": {"n": n}} for n in range(4)]
    result = Agent(llm=[{"tool_calls": plan}, {"content": "ok"}], tools=[flaky]).run("?")

    assert [m.content for m in tool_messages(result)] == [
        "0",
        "ValueError: odd 1",
        "20",
        "ValueError: odd 3",
    ]
    assert [r.status for r in result.tool_calls] == ["ok", "error", "ok", "error"]


@pytest.mark.parametrize("kind", ["async", "sync"])
@pytest.mark.parametrize("calls", [1, 2])
def test_a_tool_raising_cancelled_error_is_a_tool_failure(kind, calls):
    # A tool whose own inner task was cancelled re-raises CancelledError: that is the
    # tool failing, not the run being cancelled.
    if kind == "async":

        @tool
        async def fetch(n: int) -> str:
            """Gives up."""
            raise asyncio.CancelledError(f"gave up on {n}")

    else:

        @tool
        def fetch(n: int) -> str:
            """Gives up (in a thread when parallel)."""
            raise asyncio.CancelledError(f"gave up on {n}")

    plan = [{"fetch": {"n": n}} for n in range(calls)]
    result = Agent(llm=[{"tool_calls": plan}, {"content": "ok"}], tools=[fetch]).run("?")

    assert result.termination == Termination.completed
    assert [m.content for m in tool_messages(result)] == [
        f"CancelledError: gave up on {n}" for n in range(calls)
    ]
    assert [r.status for r in result.tool_calls] == ["error"] * calls


@pytest.mark.parametrize("calls", [1, 2])
def test_cancelling_the_run_from_outside_still_cancels_it(calls):
    started = []

    @tool
    async def wait(n: int) -> str:
        """Waits until cancelled."""
        started.append(n)
        await asyncio.sleep(60)
        return "never"

    plan = [{"wait": {"n": n}} for n in range(calls)]
    agent = Agent(llm=[{"tool_calls": plan}, {"content": "never"}], tools=[wait])

    async def main():
        task = asyncio.create_task(agent.arun("?"))
        while len(started) < calls:
            await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert task.cancelled()

    asyncio.run(asyncio.wait_for(main(), timeout=10))


def test_keyboard_interrupt_in_a_tool_is_not_swallowed():
    @tool
    def stop(n: int) -> str:
        """The user pressed Ctrl-C."""
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Agent(llm=[{"tool_calls": [{"stop": {"n": 1}}]}], tools=[stop]).run("?")


def test_an_unknown_tool_becomes_an_error_tool_message():
    @tool
    def get_weather(city: str) -> str:
        """Weather."""
        return "sunny"

    script = [
        {"tool_calls": [{"get_wether": {"city": "SF"}}], "unknown_tools": True},
        {"content": "oops"},
    ]
    result = Agent(llm=script, tools=[get_weather]).run("?")

    assert result.termination == Termination.completed
    [message] = tool_messages(result)
    assert message.is_error is True
    assert "get_wether" in message.content and "get_weather" in message.content
    [record] = result.tool_calls
    assert (record.status, record.is_error) == ("unknown_tool", True)


@pytest.mark.parametrize("parallel", [True, False])
def test_a_call_that_aborts_the_run_keeps_the_plan_in_the_results(parallel):
    """AbortRun ends the run in `error`, but what ran is recorded, and what never ran too."""
    from harness import AbortRun

    @tool
    async def fine(x: int) -> int:
        """Echo."""
        return x

    @tool
    async def broken(x: int) -> int:
        """A scenario bug."""
        raise AbortRun("template broke")

    plan = [{"fine": {"x": 1}}, {"broken": {"x": 2}}, {"fine": {"x": 3}}]
    result = Agent(
        ScriptedLLM([{"tool_calls": plan}, {"content": "never"}]),
        tools=[fine, broken],
        planner="react",
        parallel_tools=parallel,
    ).run("go")
    assert result.termination == "error"
    assert result.final.error["message"] == "template broke"
    statuses = [(r.name, r.status) for r in result.tool_calls]
    last = "ok" if parallel else "not_run"  # one after another, the third never starts
    assert statuses == [("fine", "ok"), ("broken", "error"), ("fine", last)]
    assert result.tool_calls[1].result == "template broke"  # no internal class name
