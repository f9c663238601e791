"""The ``agents:`` section: named sub-agents, exposed to an agent by ``{agent: NAME}`` tools.

Each run builds the sub-agents its tools expose, once each (their stubs count calls,
their scripts go on across calls, like the top-level agent's). A sub-agent may expose
other sub-agents, but none may reach itself: that would build forever.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from harness._agent import Agent
from harness._plugins import Plugins
from harness._tools import Tool
from harness.llm._base import LLM
from harness.llm._config import LLMConfig
from harness.scenario._params import SpecError
from harness.scenario._schema import Scenario, SubAgentSpec

__all__ = ["KeptOpen", "SubAgents", "agent_cycles", "unknown_agent"]

# Builds the tools of one sub-agent: (its name, its spec, the SubAgents to expose others).
ToolBuilder = Callable[[str, SubAgentSpec, "SubAgents"], dict[str, Tool]]


def unknown_agent(name: str, known: list[str]) -> str:
    """The message for a ``{agent: NAME}`` tool whose NAME the agents: section lacks."""
    hint = difflib.get_close_matches(name, known, n=1)
    return (
        f"unknown agent {name!r}"
        + (f" (did you mean {hint[0]!r}?)" if hint else "")
        + f"; agents: {', '.join(known) or 'none (define them under a top-level agents:)'}"
    )


class KeptOpen:
    """A sub-agent's LLM source that its runs leave open (``Agent.arun`` closes a source
    after every run): a recorded sub-agent called twice records both calls in one
    cassette session. The scenario runner closes ``source`` when the whole run ends."""

    # close_llm() finds no aclose to call.
    aclose = None

    def __init__(self, source: Any) -> None:
        self.source = source

    async def complete(self, request: Any) -> Any:
        """The wrapped source's reply."""
        return await self.source.complete(request)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.source, name)


class SubAgents:
    """The sub-agents of one run: ``(agent, description)`` by name, each built once.

    With ``llm_source`` None (a load-time check) a name is only looked up: the tool is
    built around an empty stand-in agent, the sub-agent itself is checked on its own.
    """

    def __init__(
        self,
        scenario: Scenario,
        plugins: Plugins,
        build_tools: ToolBuilder | None = None,
        llm_source: Callable[[str, LLMConfig], LLM] | None = None,
    ) -> None:
        self.scenario = scenario
        # Sub-agents get the plugins of the scenario's project, as its agent does.
        self.plugins = plugins
        self.build_tools = build_tools
        self.llm_source = llm_source
        self.built: dict[str, tuple[Agent, str]] = {}
        self._building: list[str] = []

    def __call__(self, name: str) -> tuple[Agent, str]:
        """The sub-agent called ``name`` and its description; SpecError if there is none."""
        agents = self.scenario.agents
        spec = agents.get(name)
        if spec is None:
            raise SpecError(("agent",), unknown_agent(name, sorted(agents)))
        if name in self.built:
            return self.built[name]
        plugins = self.plugins
        if self.llm_source is None or self.build_tools is None:
            return Agent([], [], plugins=plugins), spec.description or ""
        if name in self._building:  # the loader says where; a Scenario built in Python
            raise SpecError(("agent",), f"agent {name!r} reaches itself: {self._cycle(name)}")
        self._building.append(name)
        try:
            tools = self.build_tools(name, spec, self)
        finally:
            self._building.pop()
        agent = Agent(
            self.llm_source(name, spec.llm),
            list(tools.values()),
            config=spec.agent.to_config(),
            plugins=plugins,
        )
        self.built[name] = (agent, spec.description or "")
        return self.built[name]

    def _cycle(self, name: str) -> str:
        return " -> ".join([*self._building[self._building.index(name) :], name])

    @property
    def llms(self) -> list[Any]:
        """The LLM sources of the sub-agents built so far."""
        return [agent.llm for agent, _ in self.built.values()]


def agent_cycles(scenario: Scenario) -> list[tuple[tuple[str | int, ...], str]]:
    """(path of the tool entry that closes a loop, message) for sub-agents that reach
    themselves through their tools."""
    agents = scenario.agents
    found: list[tuple[tuple[str | int, ...], str]] = []
    done: set[str] = set()

    def visit(name: str, trail: list[str]) -> None:
        for tool, spec in agents[name].tools.items():
            target = spec.agent
            if target is None or target not in agents:
                continue
            if target in trail:
                loop = " -> ".join([*trail[trail.index(target) :], target])
                found.append(
                    (
                        ("agents", name, "tools", tool, "agent"),
                        f"agent {target!r} reaches itself ({loop}); a sub-agent cannot call "
                        "itself, directly or through others",
                    )
                )
            elif target not in done:
                visit(target, [*trail, target])
        done.add(name)

    for name in agents:
        if name not in done:
            visit(name, [name])
    return found
