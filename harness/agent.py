"""``Agent``: the Python API over the loop (the same engine scenario files drive)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from harness.actions import RunResult
from harness.errors import HarnessError
from harness.llm.scripted import ScriptedLLM
from harness.loop import AgentConfig, Run, answer_unanswered, execute
from harness.messages import Conversation, SystemMessage, UserMessage
from harness.plugins import get_plugins
from harness.sync import run_sync
from harness.tools import format_errors, toolset

__all__ = ["Agent"]


class Agent:
    """A tool-using agent: an LLM source, tools, a planner, and the loop's settings."""

    def __init__(
        self,
        llm: Any,
        tools: Iterable[Any] = (),
        *,
        planner: str = "agentbuilder",
        max_iterations: int = 80,
        stagnation_window: int = 3,
        parallel_tools: bool = True,
        on_validation_error: str = "stop",
        on_max_iterations: str = "stop",
        system: str | None = None,
        plugins: Iterable[Any] = (),
        planner_options: dict[str, Any] | None = None,
    ) -> None:
        try:
            self.config = AgentConfig(
                planner=planner,
                max_iterations=max_iterations,
                stagnation_window=stagnation_window,
                parallel_tools=parallel_tools,
                on_validation_error=on_validation_error,
                on_max_iterations=on_max_iterations,
                system=system,
                planner_options=planner_options or {},
            )
        except ValidationError as exc:
            raise HarnessError(f"Agent: {format_errors(exc.errors(include_url=False))}") from None
        self.plugins = get_plugins().with_extra(plugins)
        # A list of script steps is a convenient way to say ScriptedLLM(steps).
        self.llm = ScriptedLLM(llm) if isinstance(llm, list) else llm
        self.tools = toolset(tools, resolve=self.plugins.tool)
        # Resolve now so an unknown planner fails where the Agent is built.
        self._planner_factory = self.plugins.planner_factory(planner)

    def _start(self, input: str | None, conversation: Conversation | None) -> Conversation:
        if conversation is None:
            messages: list[Any] = (
                [SystemMessage(content=self.config.system)] if self.config.system else []
            )
        else:
            # Never mutate the caller's conversation.
            messages = list(conversation.messages)
        start = Conversation(messages=messages)
        if input is not None:
            # Tool calls left pending by the earlier run (stopped at the limit, say) must
            # be answered before a user turn, or the real API rejects the transcript.
            answer_unanswered(start, "the conversation continued with a new user message")
            start.append(UserMessage(content=input))
        return start

    async def arun(
        self, input: str | None = None, conversation: Conversation | None = None
    ) -> RunResult:
        """Run the loop: continue ``conversation`` (if given) after appending ``input``."""
        run = Run(
            conversation=self._start(input, conversation),
            tools=self.tools,
            config=self.config,
            llm=self.llm,
            plugins=self.plugins,
        )
        return await execute(run, self._planner_factory)

    def run(self, input: str | None = None, conversation: Conversation | None = None) -> RunResult:
        """Synchronous ``arun``; inside a running event loop, use ``await agent.arun()``."""
        return run_sync(
            self.arun(input, conversation), name="Agent.run()", instead="agent.arun(...)"
        )
