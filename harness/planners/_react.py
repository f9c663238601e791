"""``react``: one iteration is one LLM round; the model's tool calls are one parallel set."""

from __future__ import annotations

from typing import Any

from harness._actions import EmptyAction, FinalResponse, ToolAction
from harness._messages import SystemMessage
from harness._run import Run
from harness.hookspecs import hookimpl

__all__ = ["ReactPlanner"]


class ReactPlanner:
    """Calls the model inside ``step`` and returns its tool calls, or the final answer."""

    # What a tool round and the final answer cost in iterations (one model round each):
    # a run ended at max_iterations says them (docs/loop.md#max_iterations).
    iterations_per_round = 1
    iterations_to_answer = 1

    def __init__(self, config: Any = None) -> None:
        self.config = config

    async def step(self, run: Run) -> Any:
        """Ask the model; tool calls -> a list of ToolAction, text -> FinalResponse."""
        # Stops at the first non-system message from the end: constant work per round.
        if all(isinstance(m, SystemMessage) for m in reversed(run.conversation.messages)):
            return EmptyAction()
        reply = await run.call_llm()
        if reply.tool_calls:
            return [ToolAction(tool_call=call) for call in reply.tool_calls]
        return FinalResponse(content=reply.content)


@hookimpl
def harness_register_planners(register: Any) -> None:
    """Register ``react``."""
    register("react", ReactPlanner)
