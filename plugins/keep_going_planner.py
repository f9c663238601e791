"""A planner plugin: an agent that only stops when the model says it is done.

``agent: {planner: keep_going}``. Some agent loops require an explicit end (a marker in
the text, a ``finish`` tool) and ask the model again after any other text reply. A
model that keeps talking without acting then never ends the run on its own: the
``monologue`` detector is the guard for such loops (scenarios/stuck/monologue*.yaml).
"""

from __future__ import annotations

from typing import Any

from harness.plugin import (
    AssistantMessage,
    CompleteAction,
    ExecuteToolsAction,
    MakeLLMRequestAction,
    hookimpl,
)


class KeepGoingPlanner:
    """Tool calls run; a text reply ends the run only when it holds the marker."""

    def __init__(self, config: Any) -> None:
        options = getattr(config, "planner_options", {}) or {}
        self.marker = str(options.get("done_marker", "DONE"))

    def step(self, run: Any) -> Any:
        """Run the calls of the last reply, finish on the marker, else ask again."""
        last = run.conversation.messages[-1]
        if isinstance(last, AssistantMessage):
            if last.tool_calls:
                return ExecuteToolsAction(tool_calls=last.tool_calls)
            if self.marker in (last.content or ""):
                return CompleteAction(content=last.content)
        return MakeLLMRequestAction()


@hookimpl
def harness_register_planners(register: Any) -> None:
    """Register ``keep_going``."""
    register("keep_going", KeepGoingPlanner)
