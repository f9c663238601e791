"""AgentTool: sub-agents as tools, their limits, depth, records and hooks."""

from __future__ import annotations

import pytest

from harness import Agent, AgentTool, HarnessError, Termination, hookimpl, tool
from harness._errors import AbortRun
from harness.llm import ScriptedLLM


@tool
def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def _coordinator(*tools: AgentTool, calls: list[dict], answer: str = "all done") -> Agent:
    """A parent that calls ``calls`` as one plan, then answers with ``answer``."""
    return Agent([{"tool_calls": calls}, {"content": answer}], list(tools))


def test_completed_sub_run_is_the_result_and_keeps_its_data():
    worker = Agent(
        [{"tool_calls": [{"lookup": {"q": "x"}}], "latency": 1.5}, {"content": "worker: x found"}],
        [lookup],
    )
    parent = _coordinator(
        AgentTool(worker, "worker", "Does work."), calls=[{"worker": {"task": "find x"}}]
    )
    result = parent.run("go")
    assert result.termination == Termination.completed
    assert result.final.content == "all done"
    record = result.tool_calls[0]
    assert (record.status, record.is_error, record.result) == ("ok", False, "worker: x found")
    # The model sees the sub-agent's answer as the tool's result.
    assert result.conversation.messages[2].content == "worker: x found"
    sub = record.sub_run
    assert sub is not None
    assert (sub.agent, sub.depth, sub.termination) == ("worker", 1, Termination.completed)
    assert (sub.iterations, sub.llm_calls) == (4, 2)
    assert [c.name for c in sub.tool_calls] == ["lookup"]
    assert sub.final.content == "worker: x found"
    # The sub-run's conversation starts fresh, with the task as the user's message.
    assert [m.role for m in sub.transcript] == ["user", "assistant", "tool", "assistant"]
    assert sub.transcript[0].content == "find x"
    # The call took the sub-run's simulated time on the parent's clock.
    assert (record.sim_start, record.sim_end) == (0.0, 1.5)
    assert result.sim_time == 1.5


def test_iteration_limit_of_a_sub_agent_is_an_error_result_and_the_parent_goes_on():
    looper = Agent(
        [{"tool_calls": [{"lookup": {"q": "again"}}], "repeat": 20}],
        [lookup],
        max_iterations=3,
        stagnation_window=0,
    )
    worker = Agent([{"content": "worker answer"}], [])
    parent = _coordinator(
        AgentTool(looper, "looper"),
        AgentTool(worker, "worker"),
        calls=[{"looper": {"task": "loop"}}, {"worker": {"task": "answer"}}],
    )
    result = parent.run("go")
    assert result.termination == Termination.completed
    assert result.final.content == "all done"
    failed, ok = result.tool_calls
    assert (failed.status, failed.is_error) == ("error", True)
    assert failed.result.startswith(
        "sub-agent 'looper' ended max_iterations: Max iterations reached (3): under planner "
        "agentbuilder a tool round takes 2 iterations"
    )
    assert failed.sub_run.termination == Termination.max_iterations
    assert failed.sub_run.iterations == 3
    # The error went to the model as an error tool message; the parent asked again.
    tool_message = result.conversation.messages[2]
    assert tool_message.is_error and "max_iterations" in tool_message.content
    assert (ok.status, ok.result) == ("ok", "worker answer")
    assert result.llm_calls == 2


def test_stagnation_of_a_sub_agent_is_an_error_result_and_the_parent_goes_on():
    stuck = Agent(
        [{"tool_calls": [{"lookup": {"q": "same"}}], "repeat": 20}], [lookup], stagnation_window=2
    )
    parent = _coordinator(AgentTool(stuck, "stuck"), calls=[{"stuck": {"task": "try"}}])
    result = parent.run("go")
    assert result.termination == Termination.completed
    record = result.tool_calls[0]
    assert record.is_error and record.status == "error"
    assert record.result == (
        "sub-agent 'stuck' ended stagnation: stagnation detected: the same tool plan was "
        "requested 3 times in a row"
    )
    assert record.sub_run.termination == Termination.stagnation
    # The sub-run's own limits applied: two plans ran, the third was declined.
    assert [c.status for c in record.sub_run.tool_calls] == ["ok", "ok", "not_run"]


def test_a_sub_agent_that_fails_in_any_way_is_an_error_result_never_an_exception():
    @tool
    def broken() -> str:
        """Aborts the run."""
        raise AbortRun("the fixture is missing")

    aborting = Agent([{"tool_calls": [{"broken": {}}]}], [broken])
    exhausted = Agent(ScriptedLLM([]), [])
    parent = _coordinator(
        AgentTool(aborting, "aborting"),
        AgentTool(exhausted, "exhausted"),
        calls=[{"aborting": {"task": "a"}}, {"exhausted": {"task": "b"}}],
    )
    result = parent.run("go")
    assert result.termination == Termination.completed
    first, second = result.tool_calls
    assert first.result == "sub-agent 'aborting' ended error: the fixture is missing"
    assert second.result == (
        "sub-agent 'exhausted' ended llm_error: script exhausted after 0 responses"
    )
    assert all(r.is_error and r.status == "error" for r in result.tool_calls)


def _chain(length: int, max_depth: int | None) -> Agent:
    """Agents a0 -> a1 -> ... each calling the next through an AgentTool, the last
    answering; every agent answers "a<i> done" after its call."""
    below: Agent | None = None
    for i in reversed(range(length)):
        if below is None:
            below = Agent([{"content": f"a{i} done"}], [])
            continue
        options = {} if max_depth is None else {"max_depth": max_depth}
        step = AgentTool(below, f"a{i + 1}", **options)
        below = Agent(
            [{"tool_calls": [{f"a{i + 1}": {"task": "go on"}}]}, {"content": f"a{i} done"}],
            [step],
        )
    assert below is not None
    return below


def _depths(record) -> list[tuple[str, str]]:
    """(tool, status) down the chain of sub-runs."""
    out = []
    while record is not None:
        out.append((record.name, record.status))
        sub = record.sub_run
        record = sub.tool_calls[0] if sub is not None and sub.tool_calls else None
    return out


def test_nesting_deeper_than_max_depth_is_an_error_result():
    result = _chain(5, max_depth=2).run("start")
    assert result.termination == Termination.completed
    chain = _depths(result.tool_calls[0])
    # a1 runs at depth 1, a2 at depth 2; a3 would be depth 3: refused, a2 goes on.
    assert chain == [("a1", "ok"), ("a2", "ok"), ("a3", "error")]
    refused = result.tool_calls[0].sub_run.tool_calls[0].sub_run.tool_calls[0]
    assert refused.sub_run is None
    assert (
        refused.result
        == "sub-agent 'a3' not run: it would be nested 3 deep, deeper than max_depth 2"
    )
    assert result.tool_calls[0].sub_run.tool_calls[0].sub_run.final.content == "a2 done"


def test_default_max_depth_is_five():
    chain = _depths(_chain(8, max_depth=None).run("start").tool_calls[0])
    assert [status for _, status in chain] == ["ok"] * 5 + ["error"]


def test_sub_runs_have_their_own_limits_and_conversations_in_parallel():
    # Two iterations: enough for a (ask, answer), not for b (ask, tool, ask, answer).
    a = Agent([{"content": "from a"}], [], max_iterations=2)
    b = Agent(
        [{"tool_calls": [{"lookup": {"q": "b"}}]}, {"content": "from b"}],
        [lookup],
        max_iterations=2,
    )
    parent = _coordinator(
        AgentTool(a, "a"),
        AgentTool(b, "b"),
        calls=[{"a": {"task": "task for a"}}, {"b": {"task": "task for b"}}],
    )
    result = parent.run("go")
    assert result.parallel_groups == [["a", "b"]]
    ra, rb = (r.sub_run for r in result.tool_calls)
    assert [m.content for m in ra.transcript] == ["task for a", "from a"]
    assert rb.transcript[0].content == "task for b"
    assert (ra.termination, rb.termination) == (Termination.completed, Termination.max_iterations)
    assert result.termination == Termination.completed


@pytest.mark.hooks("harness_agent_start", "harness_agent_end")
def test_hooks_see_sub_runs_with_their_parent():
    seen: list[tuple[str, object, int]] = []
    runs: dict[str, object] = {}

    class Observer:
        @hookimpl
        def harness_agent_start(self, run):
            name = run.conversation.messages[0].content
            runs[name] = run
            seen.append(("start", name, run.depth))

        @hookimpl
        def harness_agent_end(self, run, final):
            seen.append(("end", run.conversation.messages[0].content, run.depth))

    observer = Observer()
    worker = Agent([{"content": "done"}], [], plugins=[observer])
    parent = Agent(
        [{"tool_calls": [{"worker": {"task": "sub task"}}]}, {"content": "ok"}],
        [AgentTool(worker, "worker")],
        plugins=[observer],
    )
    parent.run("top task")
    assert seen == [
        ("start", "top task", 0),
        ("start", "sub task", 1),
        ("end", "sub task", 1),
        ("end", "top task", 0),
    ]
    assert runs["top task"].parent is None
    assert runs["sub task"].parent is runs["top task"]
    # A run started later, outside any tool call, has no parent.
    worker.run("alone")
    assert runs["alone"].parent is None and runs["alone"].depth == 0


def test_agent_tool_arguments_are_checked():
    with pytest.raises(HarnessError, match=r"AgentTool\(agent=...\) takes a harness.Agent"):
        AgentTool("not an agent", "x")  # type: ignore[arg-type]
    with pytest.raises(HarnessError, match="max_depth"):
        AgentTool(Agent([], []), "x", max_depth=0)
    schema = AgentTool(Agent([], []), "helper", "Helps.").openai_schema()
    assert schema["function"]["name"] == "helper"
    assert schema["function"]["parameters"]["required"] == ["task"]
