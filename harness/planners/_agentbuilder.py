"""``agentbuilder``: a stateless planner that reads the last message and makes no LLM calls.

One tool round trip therefore takes four iterations: request, tools, request, complete.
"""

from __future__ import annotations

from typing import Any

from harness._actions import CompleteAction, EmptyAction, ExecuteToolsAction, MakeLLMRequestAction
from harness._messages import AssistantMessage, SystemMessage
from harness._run import Run
from harness.hookspecs import hookimpl

__all__ = ["AgentBuilderPlanner"]

_REQUEST = MakeLLMRequestAction()


class AgentBuilderPlanner:
    """Empty -> EmptyAction; assistant tool calls -> run them; user or tool -> ask the
    model; assistant text -> complete."""

    # What a tool round (request, tools) and the final answer (request, complete) cost in
    # iterations: a run ended at max_iterations says them (docs/loop.md#max_iterations).
    iterations_per_round = 2
    iterations_to_answer = 2

    def __init__(self, config: Any = None) -> None:
        self.config = config

    def step(self, run: Run) -> Any:
        """The next action, from the last non-system message alone."""
        for message in reversed(run.conversation.messages):
            if isinstance(message, SystemMessage):
                continue
            if isinstance(message, AssistantMessage):
                if message.tool_calls:
                    return ExecuteToolsAction(tool_calls=message.tool_calls)
                return CompleteAction(content=message.content)
            return _REQUEST
        return EmptyAction()


@hookimpl
def harness_register_planners(register: Any) -> None:
    """Register ``agentbuilder``."""
    register("agentbuilder", AgentBuilderPlanner)
