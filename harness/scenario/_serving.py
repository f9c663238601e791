"""The agent a scenario describes, built for a run or for every session of a server.

``scenario_agent`` builds it once (the runner's run); ``agent_factory`` makes a fresh
one per call (``harness agent-serve``: a session's own LLM source and tools, so a
script starts from its first step in every session); ``served_url`` serves a scenario
file as an A2A agent on 127.0.0.1 in a background thread, once per process, for the
``remote: {scenario: FILE}`` tools of other scenarios.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from harness._agent import Agent
from harness._errors import HarnessError
from harness.llm._base import LLM
from harness.llm._config import LLMConfig
from harness.scenario._agents import KeptOpen, SubAgents
from harness.scenario._cases import one_scenario
from harness.scenario._context import ScenarioRun, scenario_id
from harness.scenario._loader import build_tools, load_scenario
from harness.scenario._mcp_tools import entry_path, mcp_entries
from harness.scenario._schema import Scenario

if TYPE_CHECKING:
    from harness.mcp._client import MCPServers

__all__ = [
    "agent_factory",
    "llm_source",
    "scenario_agent",
    "scenario_id",
    "served_url",
    "stop_served",
]


def llm_source(run: ScenarioRun, config: LLMConfig | None = None, part: str = "") -> LLM:
    """The run's LLM source (or a sub-agent's, ``config``, named ``part``: its
    stochastic steps are drawn apart from the agent's), told which scenario it serves
    and how it records (``run.llm``)."""
    config = config or run.scenario.llm
    context = replace(run.llm, draws=f"{run.llm.draws}\x00{part}") if part else run.llm
    source = run.plugins.llm_factory(config.provider)(config.with_context(context))
    if config.faults and config.provider != "scripted":
        from harness.llm._faults import FaultyLLM

        # A script places its faults among its steps; a recorded model's are failed in
        # front of it (docs/scenarios.md#model-faults).
        return FaultyLLM(source, config.faults)
    return source


def scenario_agent(
    run: ScenarioRun | Scenario,
    *,
    agents: SubAgents | None = None,
    llm: LLM | None = None,
    mcp: MCPServers | None = None,
) -> Agent:
    """A fresh Agent for the run (a Scenario: a run of its own, recording nothing): its
    own LLM source and tools (stubs count calls), the run's plugins.

    ``agents`` keeps the sub-agents built for its ``{agent: NAME}`` tools (each with an
    LLM source left open across its calls: the caller closes ``agents.llms``). ``llm``
    is the agent's LLM source when the caller made it (default: a new one). ``mcp``:
    the run's MCP servers, started (``harness.scenario._mcp_tools.mcp_servers``), for
    ``mcp:`` tools.
    """
    scenario = run.scenario if isinstance(run, ScenarioRun) else run
    entries = mcp_entries(scenario) if mcp is None else []
    if entries:
        raise HarnessError(
            f"{scenario_id(scenario)}: its tools from an MCP server (mcp:) are brought in for "
            "a run of harness run (or harness.run_scenario), not for a served agent "
            f"({entry_path(entries[0][0])})"
        )
    this = run if isinstance(run, ScenarioRun) else ScenarioRun.of(scenario)
    if llm is None:
        llm = llm_source(this)

    def sub_llm(name: str, config: LLMConfig) -> KeptOpen:
        return KeptOpen(llm_source(this, config, f"agent {name}"))

    agents = agents if agents is not None else SubAgents(scenario, this.plugins)
    tools = build_tools(
        scenario, plugins=this.plugins, serve=served_url, llm_source=sub_llm, agents=agents, mcp=mcp
    )
    return Agent(llm, list(tools.values()), config=this.agent, plugins=this.own_plugins())


def agent_factory(scenario: str | Path | Scenario) -> Callable[[], Agent]:
    """A function that makes a fresh Agent for the scenario each time it is called."""
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    run = ScenarioRun.of(one_scenario(scenario, "an A2A agent"))

    def make() -> Agent:
        return scenario_agent(run)

    return make


# -- scenario files served as A2A agents ---------------------------------------------------

_served: dict[Path, str] = {}
_stack = contextlib.ExitStack()
_lock = threading.Lock()


def served_url(path: Path) -> str:
    """The base URL of ``path`` served as an A2A agent (started on first use)."""
    from harness.a2a._app import create_app
    from harness.a2a._running import running_app

    path = Path(path).resolve()
    with _lock:
        url = _served.get(path)
        if url is None:
            scenario = load_scenario(path)
            app = create_app(
                agent_factory(scenario),
                name=scenario.display_name,
                description=scenario.description or f"the agent of {scenario.display_name}",
            )
            if not _served:
                atexit.register(stop_served)
            url = _served[path] = _stack.enter_context(running_app(app))
    return url


def stop_served() -> None:
    """Stop every scenario served by ``served_url`` (at exit, or in a test)."""
    with _lock:
        _served.clear()
        _stack.close()
