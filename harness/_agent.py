"""``Agent``: the Python API over the loop (the same engine scenario files drive)."""

from __future__ import annotations

import difflib
from collections.abc import AsyncIterator, Iterable
from typing import Any

from pydantic import ValidationError

from harness._actions import RunResult
from harness._config import AgentConfig
from harness._errors import HarnessError, describe, describe_errors
from harness._loop import execute
from harness._messages import (
    Conversation,
    MessageItemError,
    SystemMessage,
    UserMessage,
    messages_from_openai,
)
from harness._plugins import Plugins, default_plugins
from harness._run import Run, answer_unanswered
from harness._streaming import EventSink, StreamEvent, stream_events
from harness._sync import run_sync
from harness._tools import Tool, toolset
from harness.llm._base import close_llm
from harness.llm._scripted import ScriptedLLM

__all__ = ["Agent"]


class Agent:
    """A tool-using agent: an LLM source, tools, a planner, and the loop's settings."""

    def __init__(
        self,
        llm: Any,
        tools: Iterable[Any] = (),
        *,
        config: AgentConfig | None = None,
        plugins: Plugins | Iterable[Any] = (),
        **settings: Any,
    ) -> None:
        """``settings`` are AgentConfig's fields (``planner=``, ``max_iterations=``, ...):
        each overrides ``config`` (default: AgentConfig's defaults).

        ``plugins``: plugin objects or modules for this agent, on top of the built-ins and
        the installed plugins (the same in any folder); or a ``Plugins`` set, such as
        ``harness._plugins.discover()`` for the project's ``[tool.harness] plugins``.
        """
        self.config = _config(config, settings)
        if isinstance(tools, str | Tool) or callable(tools) or not _iterable(tools):
            raise HarnessError(
                f"Agent(tools=...) takes a list of tools (@tool functions or registered tool "
                f"names), got {describe(tools)}; write tools=[...]"
            )
        self.plugins = _plugins(plugins)
        self.plugins.check()
        # A list of script steps is a convenient way to say ScriptedLLM(steps).
        if isinstance(llm, list):
            llm = ScriptedLLM(llm)
        elif not callable(getattr(llm, "complete", None)):
            raise HarnessError(
                f"Agent(llm=...) takes an LLM source (an object with async complete(request), "
                f"like harness.llm.ScriptedLLM) or a list of script steps, got {describe(llm)}"
            )
        self.llm = llm
        try:
            self.tools = toolset(tools, resolve=self.plugins.tool)
        except HarnessError as exc:
            # Same exception (PluginError for an unknown name), said where it came from.
            exc.args = (f"Agent(tools=...): {exc}",)
            raise
        # Resolve now so an unknown planner fails where the Agent is built.
        self._planner_factory = self.plugins.planner_factory(self.config.planner)

    def _start(self, input: str | None, conversation: Any) -> Conversation:
        if input is not None and not isinstance(input, str):
            raise HarnessError(
                f"Agent.run(input=...) takes the user's message as a string, got {describe(input)}"
            )
        if conversation is None:
            messages: list[Any] = (
                [SystemMessage(content=self.config.system)] if self.config.system else []
            )
        else:
            # Never mutate the caller's conversation.
            messages = _messages_of(conversation)
        start = Conversation(messages=messages)
        if input is not None:
            # Tool calls left pending by the earlier run (stopped at the limit, say) must
            # be answered before a user turn, or the real API rejects the transcript.
            answer_unanswered(start, "the conversation continued with a new user message")
            start.append(UserMessage(content=input))
        return start

    async def arun(
        self, input: str | None = None, conversation: Conversation | list[Any] | None = None
    ) -> RunResult:
        """Run the loop: continue ``conversation`` (if given) after appending ``input``.

        ``conversation`` is a Conversation or a list of messages: harness messages or
        Chat Completions message dicts (a saved OpenAI history).
        """
        return await self._execute(self._start(input, conversation))

    async def astream(
        self, input: str | None = None, conversation: Conversation | list[Any] | None = None
    ) -> AsyncIterator[StreamEvent]:
        """``arun``, yielding ``StreamEvent``s as the run goes; the last is ``final``.

        Replies come in pieces (``llm_delta`` events, the ``harness_llm_chunk`` hook);
        the run's ``RunResult`` (in ``final``) is the one ``arun`` gives. Leaving the
        loop early cancels the run.
        """
        start = self._start(input, conversation)
        async for event in stream_events(lambda sink: self._execute(start, sink)):
            yield event

    async def _execute(self, start: Conversation, sink: EventSink | None = None) -> RunResult:
        run = Run(
            conversation=start,
            tools=self.tools,
            config=self.config,
            llm=self.llm,
            plugins=self.plugins,
            sink=sink,
        )
        try:
            return await execute(run, self._planner_factory)
        finally:
            await close_llm(self.llm)

    def run(
        self, input: str | None = None, conversation: Conversation | list[Any] | None = None
    ) -> RunResult:
        """Synchronous ``arun``; inside a running event loop, use ``await agent.arun()``."""
        return run_sync(
            self.arun(input, conversation), name="Agent.run()", instead="agent.arun(...)"
        )


def _config(config: AgentConfig | None, settings: dict[str, Any]) -> AgentConfig:
    """``config`` with ``settings`` applied, checked by AgentConfig; a HarnessError for
    people otherwise."""
    if config is not None and not isinstance(config, AgentConfig):
        raise HarnessError(f"Agent(config=...) takes a harness.AgentConfig, got {describe(config)}")
    unknown = sorted(set(settings) - set(AgentConfig.model_fields))
    if unknown:
        hint = difflib.get_close_matches(unknown[0], list(AgentConfig.model_fields), n=1)
        raise HarnessError(
            f"Agent: unknown setting {unknown[0]!r}"
            + (f" (did you mean {hint[0]!r}?)" if hint else "")
            + f"; the settings are {', '.join(AgentConfig.model_fields)}"
        )
    if settings.get("planner_options", {}) is None:
        settings["planner_options"] = {}  # None reads as "no options"
    base = config.model_dump() if config is not None else {}
    try:
        return AgentConfig(**{**base, **settings})
    except ValidationError as exc:
        problems = describe_errors(exc.errors(include_url=False), show_input=True)
        raise HarnessError(f"Agent: {problems}") from None


def _plugins(plugins: Any) -> Plugins:
    """The agent's plugin set: the one given, or the defaults with the given extras."""
    if isinstance(plugins, Plugins):
        return plugins
    if isinstance(plugins, str) or not _iterable(plugins):
        raise HarnessError(
            f"Agent(plugins=...) takes a list of plugin objects or modules (or a Plugins set: "
            f"harness._plugins.discover()), got {describe(plugins)}; write plugins=[...]"
        )
    return default_plugins().with_extra(plugins)


def _iterable(value: Any) -> bool:
    try:
        iter(value)
    except TypeError:
        return False
    return True


def _messages_of(conversation: Any) -> list[Any]:
    """The messages of a Conversation or of a list of messages / OpenAI message dicts."""
    if isinstance(conversation, Conversation):
        return list(conversation.messages)
    if not isinstance(conversation, list | tuple):
        raise HarnessError(
            "Agent.run(conversation=...) takes a Conversation or a list of messages (harness "
            f"messages or OpenAI message dicts like {{'role': 'user', 'content': 'hi'}}), got "
            f"{describe(conversation)}"
        )
    try:
        return messages_from_openai(conversation)
    except MessageItemError as exc:
        raise HarnessError(f"Agent.run(conversation=...): {exc}") from None
