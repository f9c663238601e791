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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.agent import Agent
from harness.config import AgentConfig
from harness.errors import HarnessError
from harness.llm.base import LLM
from harness.llm.config import LLMConfig, LLMContext
from harness.llm.script import draw_material
from harness.plugins import Plugins, discover
from harness.results import ScenarioId, combination_label
from harness.scenario.agents import KeptOpen, SubAgents
from harness.scenario.cases import one_scenario
from harness.scenario.guards import with_prices
from harness.scenario.loader import build_tools, load_scenario
from harness.scenario.mcp_tools import entry_path, mcp_entries
from harness.scenario.schema import Scenario

if TYPE_CHECKING:
    from harness.mcp.client import MCPServers

__all__ = [
    "agent_factory",
    "llm_source",
    "scenario_agent",
    "scenario_id",
    "served_url",
    "stop_served",
]


def scenario_id(scenario: Scenario) -> ScenarioId:
    """The scenario's id: its file relative to the project root, and its name (with its
    case and matrix combination: ``name[paris][model=a,planner=b]``)."""
    name = scenario.display_name
    if scenario.case_id is not None:
        name = f"{name}[{scenario.case_id}]"
    if scenario.combination is not None:
        name = f"{name}[{combination_label(scenario.combination)}]"
    return ScenarioId(scenario.id_path or "<python>", name)


def llm_source(
    scenario: Scenario,
    plugins: Plugins,
    record_mode: str = "none",
    disable_recording: bool = False,
    config: LLMConfig | None = None,
    part: str = "",
) -> LLM:
    """The scenario's LLM source (or a sub-agent's, ``config``, named ``part``: its
    stochastic steps are drawn apart from the agent's), told which scenario and record
    mode it serves."""
    config = config or scenario.llm
    sid = str(scenario_id(scenario))
    context = LLMContext(
        scenario_id=sid,
        scenario_file=scenario.path,
        project_root=scenario.root,
        record_mode=record_mode,
        disable_recording=disable_recording,
        variant=scenario.variant,
        draws=draw_material(sid, *scenario.draw) + (f"\x00{part}" if part else ""),
    )
    source = plugins.llm_factory(config.provider)(config.with_context(context))
    if config.faults and config.provider != "scripted":
        from harness.llm.faults import FaultyLLM

        # A script places its faults among its steps; a recorded model's are failed in
        # front of it (docs/scenarios.md#model-faults).
        return FaultyLLM(source, config.faults)
    return source


def scenario_agent(
    scenario: Scenario,
    *,
    plugins: Sequence[Any] = (),
    record_mode: str = "none",
    disable_recording: bool = False,
    agents: SubAgents | None = None,
    llm: LLM | None = None,
    config: AgentConfig | None = None,
    mcp: MCPServers | None = None,
) -> Agent:
    """A fresh Agent for the scenario: its own LLM source and tools (stubs count calls).

    ``agents`` keeps the sub-agents built for its ``{agent: NAME}`` tools (each with an
    LLM source left open across its calls: the caller closes ``agents.llms``). ``llm``
    is the agent's LLM source when the caller made it (default: a new one); ``config``
    its settings (default: the scenario's, with its prices). ``mcp``: the run's MCP
    servers, started (``harness.scenario.mcp_tools.mcp_servers``), for ``mcp:`` tools.
    """
    entries = mcp_entries(scenario) if mcp is None else []
    if entries:
        raise HarnessError(
            f"{scenario_id(scenario)}: its tools from an MCP server (mcp:) are brought in for "
            "a run of harness run (or harness.run_scenario), not for a served agent "
            f"({entry_path(entries[0][0])})"
        )
    project = discover(scenario.root)
    if llm is None:
        llm = llm_source(scenario, project, record_mode, disable_recording)

    def sub_llm(name: str, config: LLMConfig) -> KeptOpen:
        return KeptOpen(
            llm_source(scenario, project, record_mode, disable_recording, config, f"agent {name}")
        )

    agents = agents if agents is not None else SubAgents(scenario)
    tools = build_tools(scenario, serve=served_url, llm_source=sub_llm, agents=agents, mcp=mcp)
    return Agent(
        llm,
        list(tools.values()),
        config=config or with_prices(scenario.agent.to_config(), scenario),
        plugins=project.with_extra(plugins),
    )


def agent_factory(scenario: str | Path | Scenario) -> Callable[[], Agent]:
    """A function that makes a fresh Agent for the scenario each time it is called."""
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    loaded = one_scenario(scenario, "an A2A agent")

    def make() -> Agent:
        return scenario_agent(loaded)

    return make


# -- scenario files served as A2A agents ---------------------------------------------------

_served: dict[Path, str] = {}
_stack = contextlib.ExitStack()
_lock = threading.Lock()


def served_url(path: Path) -> str:
    """The base URL of ``path`` served as an A2A agent (started on first use)."""
    from harness.a2a.app import create_app
    from harness.a2a.running import running_app

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
