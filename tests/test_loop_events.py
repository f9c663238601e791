"""Events: the hooks fire in order, and RunResult.events records the same sequence."""

from __future__ import annotations

import inspect

import pytest

from harness import Agent, Termination, hookimpl, tool
from harness._errors import AbortRun

EVENT_HOOKS = [
    "harness_agent_start",
    "harness_iteration_start",
    "harness_llm_request",
    "harness_llm_response",
    "harness_action_executed",
    "harness_agent_end",
]


@tool
async def get_weather(city: str) -> str:
    """Weather."""
    return f"sunny in {city}"


class Recorder:
    """Implements every event hook and keeps what each one saw."""

    def __init__(self):
        self.calls = []

    @hookimpl
    def harness_agent_start(self, run):
        self.calls.append(("agent_start", run.iteration))

    @hookimpl
    def harness_iteration_start(self, run, iteration):
        assert iteration == run.iteration
        self.calls.append(("iteration_start", iteration))

    @hookimpl
    def harness_llm_request(self, run, request):
        self.calls.append(("llm_request", request.call, len(request.messages)))

    @hookimpl
    def harness_llm_response(self, run, response):
        # The reply is already in the conversation.
        assert run.conversation.messages[-1] is response.message
        self.calls.append(("llm_response", [c.name for c in response.message.tool_calls]))

    @hookimpl
    def harness_action_executed(self, run, action, result):
        assert action.tool_call.id == result.id
        self.calls.append(("action_executed", result.id, result.status))

    @hookimpl
    def harness_agent_end(self, run, final):
        self.calls.append(("agent_end", run.termination.value, final.content))


PARALLEL = [
    {"tool_calls": [{"get_weather": {"city": "SF"}}, {"get_weather": {"city": "LA"}}]},
    {"content": "Both sunny."},
]


@pytest.mark.hooks(*EVENT_HOOKS)
def test_event_hooks_fire_in_order_and_match_the_recorded_events():
    recorder = Recorder()
    result = Agent(llm=PARALLEL, tools=[get_weather], plugins=[recorder]).run("?")

    assert recorder.calls == [
        ("agent_start", 0),
        ("iteration_start", 1),
        ("llm_request", 1, 1),
        ("llm_response", ["get_weather", "get_weather"]),
        ("iteration_start", 2),
        ("action_executed", "call_1_0", "ok"),
        ("action_executed", "call_1_1", "ok"),
        ("iteration_start", 3),
        ("llm_request", 2, 4),
        ("llm_response", []),
        ("iteration_start", 4),
        ("agent_end", "completed", "Both sunny."),
    ]
    assert [e["event"] for e in result.events] == [c[0] for c in recorder.calls]
    assert result.events[0]["event"] == "agent_start"
    assert result.events[-1] == {"event": "agent_end", "iteration": 4, "termination": "completed"}
    executed = [e for e in result.events if e["event"] == "action_executed"]
    assert executed == [
        {
            "event": "action_executed",
            "iteration": 2,
            "tool": "get_weather",
            "call_id": "call_1_0",
            "status": "ok",
            "group": 1,
        },
        {
            "event": "action_executed",
            "iteration": 2,
            "tool": "get_weather",
            "call_id": "call_1_1",
            "status": "ok",
            "group": 1,
        },
    ]


@pytest.mark.hooks("harness_agent_start", "harness_agent_end", "harness_action_executed")
@pytest.mark.parametrize(
    ("script", "options", "termination"),
    [
        ([{"error": "timeout"}], {}, Termination.llm_error),
        (
            [{"tool_calls": [{"get_weather": {"city": "SF"}}], "repeat": 9}],
            {},
            Termination.stagnation,
        ),
        ([{"tool_calls": [{"get_weather": {"town": "SF"}}]}], {}, Termination.validation_error),
        (
            [{"tool_calls": [{"get_weather": {"city": "SF"}}]}],
            {"max_iterations": 1},
            Termination.max_iterations,
        ),
        ([], {"system": "only a system prompt"}, Termination.empty),
    ],
)
def test_agent_start_is_first_and_agent_end_last_whatever_ends_the_run(
    script, options, termination
):
    recorder = Recorder()
    prompt = None if options.get("system") else "?"
    result = Agent(llm=script, tools=[get_weather], plugins=[recorder], **options).run(prompt)

    assert result.termination == termination
    assert recorder.calls[0][0] == "agent_start"
    assert recorder.calls[-1][:2] == ("agent_end", termination.value)
    assert [c[0] for c in recorder.calls].count("agent_end") == 1
    assert [e["event"] for e in result.events] == [c[0] for c in recorder.calls]
    ran = [r for r in result.tool_calls if r.status in ("ok", "error")]
    assert len([c for c in recorder.calls if c[0] == "action_executed"]) == len(ran)


def test_events_are_the_same_on_every_run():
    def events():
        return Agent(llm=PARALLEL, tools=[get_weather]).run("?").events

    assert events() == events()


@pytest.mark.hooks("harness_iteration_start", "harness_agent_end")
def test_a_raising_hook_ends_the_run_in_error_and_agent_end_still_fires():
    ended = []

    class Broken:
        @hookimpl
        def harness_iteration_start(self, run, iteration):
            if iteration == 2:
                raise RuntimeError("observer bug")

        @hookimpl
        def harness_agent_end(self, run, final):
            ended.append((run.termination, final.error["message"]))

    result = Agent(llm=PARALLEL, tools=[get_weather], plugins=[Broken()]).run("?")

    assert result.termination == Termination.error
    assert result.final.error["exception"] == "RuntimeError"
    assert result.iterations == 2
    line = raise_line(Broken.harness_iteration_start)
    assert ended == [
        (
            Termination.error,
            f"observer bug (raised at test_loop_events.py:{line} in harness_iteration_start)",
        )
    ]
    assert result.events[-1]["event"] == "agent_end"


@pytest.mark.hooks("harness_action_executed")
def test_an_action_executed_hook_that_raises_loses_no_result_of_its_plan():
    class Broken:
        @hookimpl
        def harness_action_executed(self, run, action, result):
            raise RuntimeError("observer bug")

    result = Agent(llm=PARALLEL, tools=[get_weather], plugins=[Broken()]).run("?")

    assert result.termination == Termination.error
    # Both calls ran: both are answered and recorded as what they were, not as not_run.
    assert [(r.id, r.status) for r in result.tool_calls] == [
        ("call_1_0", "ok"),
        ("call_1_1", "ok"),
    ]
    assert [m.tool_call_id for m in result.conversation.messages if m.role == "tool"] == [
        "call_1_0",
        "call_1_1",
    ]


@pytest.mark.hooks("harness_action_executed")
def test_a_tool_raising_abort_run_ends_the_run_in_error():
    @tool
    def render(template: str) -> str:
        """A stub whose template is broken: a scenario bug, not a tool failure."""
        raise AbortRun(f"template {template!r} failed: 'args' has no attribute 'cty'")

    seen = []

    class Observer:
        @hookimpl
        def harness_action_executed(self, run, action, result):
            seen.append(result.id)

    script = [{"tool_calls": [{"render": {"template": "t.j2"}}]}, {"content": "never"}]
    result = Agent(llm=script, tools=[render], plugins=[Observer()]).run("?")

    assert result.termination == Termination.error
    assert "has no attribute 'cty'" in result.final.error["message"]
    assert result.llm_calls == 1
    # The call ran (and aborted): it is recorded and observed like any call that raised.
    assert seen == ["call_1_0"]
    assert [(r.id, r.status) for r in result.tool_calls] == [("call_1_0", "error")]


def test_an_agent_end_hook_that_raises_makes_the_run_error_everywhere():
    class Broken:
        @hookimpl
        def harness_agent_end(self, run, final):
            raise RuntimeError("observer bug")

    result = Agent(llm=[{"content": "hi"}], plugins=[Broken()]).run("?")
    assert result.termination == Termination.error
    line = raise_line(Broken.harness_agent_end)
    raised = f"observer bug (raised at test_loop_events.py:{line} in harness_agent_end)"
    assert result.final.error["message"] == raised
    assert result.events[-1] == {"event": "agent_end", "iteration": 2, "termination": "error"}
    assert result.memory[-1] == {"kind": "error", "content": f"RuntimeError: {raised}"}


def raise_line(fn) -> int:
    """The line of the first `raise` in ``fn``'s source (what an error points to)."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if "raise " in line)
