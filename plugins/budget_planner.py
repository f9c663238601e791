"""A planner plugin: ReAct with a tool budget.

``agent: {planner: budget, planner_options: {tool_budget: 3}}``. Each iteration asks the
model once; its tool calls run while the budget lasts. Once the calls made reach the
budget, the planner stops offering tools: it asks for a final answer with
``tool_choice="none"`` and completes with it (``final.data.budget_exhausted = true``).
"""

from __future__ import annotations

from typing import Any

from harness.plugin import FinalResponse, ToolAction, hookimpl


class BudgetPlanner:
    """ReAct, but no more than ``tool_budget`` tool calls in a run."""

    def __init__(self, config: Any) -> None:
        options = getattr(config, "planner_options", {}) or {}
        self.budget = int(options.get("tool_budget", 3))
        self.used = 0

    async def step(self, run: Any) -> Any:
        """Ask the model; run its calls within budget, else insist on an answer."""
        if self.used >= self.budget:
            reply = await run.call_llm(tool_choice="none")
            return FinalResponse(
                content=reply.content, data={"budget_exhausted": True, "tool_budget": self.budget}
            )
        reply = await run.call_llm()
        if not reply.tool_calls:
            return FinalResponse(content=reply.content)
        # Calls beyond the budget are not run; the loop answers them with
        # "not executed" before the next request, so the transcript stays valid.
        allowed = reply.tool_calls[: self.budget - self.used]
        self.used += len(allowed)
        return [ToolAction(tool_call=call) for call in allowed]


@hookimpl
def harness_register_planners(register: Any) -> None:
    """Register ``budget``."""
    register("budget", BudgetPlanner)
