"""One run of one scenario: what its parts are built from, derived once where it starts.

``arun_scenario`` (and ``agent_factory``, for every session of a served agent) makes one
``ScenarioRun``: the project's plugins discovered once, the ``LLMContext`` that holds the
recording settings, the agent's settings, the run's own plugins. The runner, the LLM
sources, the tools, the sub-agents, the simulated user, the MCP servers and the target
all read it, so none of them finds its project or its recording settings again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness._config import AgentConfig
from harness._plugins import Plugins, discover
from harness._results import ScenarioId, combination_label
from harness.llm._config import LLMContext
from harness.llm._script import draw_material
from harness.scenario._expectations import RequestCapture
from harness.scenario._guards import with_prices
from harness.scenario._schema import Scenario

__all__ = ["ScenarioRun", "scenario_id"]


def scenario_id(scenario: Scenario) -> ScenarioId:
    """The scenario's id: its file relative to the project root, and its name (with its
    case and matrix combination: ``name[paris][model=a,planner=b]``)."""
    name = scenario.display_name
    if scenario.case_id is not None:
        name = f"{name}[{scenario.case_id}]"
    if scenario.combination is not None:
        name = f"{name}[{combination_label(scenario.combination)}]"
    return ScenarioId(scenario.id_path or "<python>", name)


@dataclass(frozen=True)
class ScenarioRun:
    """What one run of a scenario is built from (frozen: a part that adds a plugin to the
    run makes a new one with ``dataclasses.replace``)."""

    scenario: Scenario
    id: ScenarioId
    # The plugins of the scenario's own project, wherever the run started.
    plugins: Plugins
    # Where the run is and how it records (record mode, --disable-recording); its draws
    # are the agent's own (a sub-agent's, the judge's and the user's add their part).
    llm: LLMContext
    # The agent's settings (with the project's prices).
    agent: AgentConfig
    # What the run's expectations ask about the requests sent, if anything.
    capture: RequestCapture | None = None
    # The run's own plugins on top of the project's (observers, the capture).
    extra: tuple[Any, ...] = ()

    @classmethod
    def of(
        cls,
        scenario: Scenario,
        *,
        record_mode: str = "none",
        disable_recording: bool = False,
        capture: RequestCapture | None = None,
        extra: Sequence[Any] = (),
    ) -> ScenarioRun:
        """The run of ``scenario`` with these recording settings; its project's plugins
        are discovered here, once."""
        plugins = discover(scenario.root)
        sid = scenario_id(scenario)
        llm = LLMContext(
            scenario_id=str(sid),
            scenario_file=scenario.path,
            project_root=scenario.root,
            record_mode=record_mode,
            disable_recording=disable_recording,
            variant=scenario.variant,
            draws=draw_material(str(sid), *scenario.draw),
        )
        agent = with_prices(scenario.agent.to_config(), scenario)
        return cls(
            scenario,
            sid,
            plugins,
            llm,
            agent,
            capture,
            (*extra, *([capture] if capture else [])),
        )

    def own_plugins(self) -> Plugins:
        """The project's plugins with the run's own (a new set only when it has some)."""
        return self.plugins.with_extra(self.extra)
