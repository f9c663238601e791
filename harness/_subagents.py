"""``AgentTool``: a sub-agent as a tool (docs/agents.md).

A call runs the sub-agent on a fresh conversation whose user message is the call's
``task``; the result is the sub-run's final content. A sub-run that does not complete,
or one nested deeper than ``max_depth``, is an error result, never an exception in the
parent run. The sub-run's data stays on the call's record (``ToolCallRecord.sub_run``).
"""

from __future__ import annotations

import asyncio

from pydantic import Field

from harness import simclock
from harness._actions import RunFields, RunResult, SubRun, Termination
from harness._agent import Agent
from harness._errors import HarnessError, describe
from harness._messages import clean_text
from harness._run import current_run
from harness._tools import Tool, ToolResult, arguments_model

__all__ = ["DEFAULT_MAX_DEPTH", "AgentTool", "sub_run_of"]

DEFAULT_MAX_DEPTH = 5


def sub_run_of(result: RunResult, agent: str, depth: int) -> SubRun:
    """What a parent keeps of a sub-agent's run (no wall-clock time)."""
    fields = {name: getattr(result, name) for name in RunFields.model_fields}
    return SubRun(agent=agent, depth=depth, **fields, transcript=result.conversation.messages)


def _failure_text(name: str, result: RunResult) -> str:
    """``sub-agent 'x' ended max_iterations: Max iterations reached`` and the like."""
    termination = result.termination.value
    error = result.final.error
    message = error.message if error is not None and "message" in error else None
    if message is None and result.termination == Termination.stagnation:
        window = result.final.data.window
        repeats = f"{window + 1} times in a row" if isinstance(window, int) else "again"
        message = f"stagnation detected: the same tool plan was requested {repeats}"
    if message is None and result.termination == Termination.empty:
        message = "the planner had nothing to do"
    text = f"sub-agent {name!r} ended {termination}"
    return f"{text}: {message}" if message else text


class AgentTool(Tool):
    """A tool ``{task: str}`` that runs ``agent`` on the task and returns its final answer.

    Each call is a run of its own (the sub-agent's own limits, planner and plugins;
    hooks see it with ``run.parent`` set to the calling run). The call spends the
    sub-run's simulated time on the parent's clock.
    """

    def __init__(
        self,
        agent: Agent,
        name: str,
        description: str = "",
        *,
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> None:
        if not isinstance(agent, Agent):
            raise HarnessError(f"AgentTool(agent=...) takes a harness.Agent, got {describe(agent)}")
        if not isinstance(name, str) or not name:
            raise HarnessError(f"AgentTool(name=...) takes the tool's name, got {describe(name)}")
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
            raise HarnessError(
                f"AgentTool(max_depth=...) takes a whole number >= 1, got {describe(max_depth)}"
            )
        self.agent = agent
        self.max_depth = max_depth
        model = arguments_model(
            name, {"task": (str, Field(..., description="what the sub-agent is to do"))}
        )
        super().__init__(
            self._call,
            name=name,
            description=description or f"Hand a task to the {name} agent; returns its answer.",
            model=model,
        )

    async def _call(self, task: str) -> ToolResult:
        parent = current_run()
        depth = 1 if parent is None else parent.depth + 1
        if depth > self.max_depth:
            return ToolResult(
                f"sub-agent {self.name!r} not run: it would be nested {depth} deep, deeper "
                f"than max_depth {self.max_depth}",
                is_error=True,
            )
        # A task of its own: the sub-run's context changes (its tool calls' clocks, the
        # calling run) stay out of the parent's call, whose clock it then advances.
        try:
            result = await asyncio.create_task(self.agent.arun(task))
        except Exception as exc:  # the sub-agent's LLM source failed to close, say
            return ToolResult(
                clean_text(f"sub-agent {self.name!r} failed: {type(exc).__name__}: {exc}"),
                is_error=True,
            )
        simclock.sleep(result.sim_time)
        sub_run = sub_run_of(result, self.name, depth)
        if result.termination != Termination.completed:
            return ToolResult(_failure_text(self.name, result), is_error=True, sub_run=sub_run)
        return ToolResult(result.final.content or "", sub_run=sub_run)
