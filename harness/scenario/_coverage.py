"""A scenario's behaviours for coverage (docs/coverage.md): what its file lets it reach,
and what its run exercised.

``reachable(scenario)`` is the scenario's part of the suite's universe, read from the file
alone: the tools it offers and the outcomes each can have where it runs, the terminations,
detectors, budgets and model faults it can meet. ``behaviours`` adds what the run showed:
its record's cells (harness._coverage.exercised), and for a target, or a scenario with MCP
tools, the tools its requests offered and the wires they came on (``OfferedTools``, a
per-run observer only such runs carry: an own loop's scripted run pays nothing for it).
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any

from harness._config import AgentConfig
from harness._coverage import FAULTS, STATUSES, Behaviours, Cell, exercised
from harness._results import ScenarioResult
from harness.hookspecs import hookimpl
from harness.scenario._schema import Scenario
from harness.scenario._tool_schema import ToolSpec

__all__ = ["OfferedTools", "behaviours", "needs_observer", "reachable", "tool_homes"]

# Where a tool runs decides which of its outcomes a scenario can produce: harness runs the
# own loop's tools (a stub raises when its `errors` say), checks their arguments, stops
# their plans; an own loop's MCP server checks its own tools' arguments and decides their
# failures (and replays only the calls it recorded); harness serves a target the
# scenario's tools over MCP (checking arguments), and sees a target's own tools through
# its requests only. An outcome outside these that a run met is a cell too (covered).
_OUTCOMES = {
    "own": STATUSES,
    "mcp": ("ok",),
    "served": ("ok", "error", "invalid"),
    "target": ("ok",),
}
# The model faults a scripted model can serve a target (harness refuses a step that calls
# a tool the request does not offer, so an unknown tool never reaches a target).
_TARGET_FAULTS = tuple(f for f in FAULTS if f not in ("schema_arguments", "unknown_tool"))
_TOOL_FAULTS = ("malformed_arguments", "schema_arguments", "unknown_tool")
_BUDGETS = ("tokens", "cost", "tool_calls", "sim_time")
# harness.llm._config's recorded providers, by the wire each speaks.
_PROVIDER_WIRES = {"openai": "openai-{api}", "anthropic": "anthropic", "gemini": "gemini"}


class OfferedTools:
    """A per-run observer: the tool names the run's requests offered (and their JSON
    Schemas), and the wires (``openai-chat``, ...) a target's requests came on."""

    def __init__(self) -> None:
        self.tools: set[str] = set()
        self.wires: set[str] = set()
        self.schemas: dict[str, Any] = {}

    @hookimpl
    def harness_llm_request(self, run: Any, request: Any) -> None:
        """Note the request's tools and wire."""
        for tool in request.tools:
            if tool.name and tool.name not in self.tools:
                self.tools.add(tool.name)
                self.schemas[tool.name] = getattr(tool, "parameters", None)
        if request.wire is not None:
            self.wires.add(request.wire)


def needs_observer(scenario: Scenario) -> bool:
    """Whether what a scenario offers is known only from its requests: a target's tools
    and wire, the tools of an MCP server."""
    if scenario.target is not None:
        return True
    return any(spec.mcp is not None and not spec.mcp.only for _, spec in _all_tools(scenario))


def behaviours(
    scenario: Scenario, result: ScenarioResult, observed: OfferedTools | None = None
) -> Behaviours:
    """One run's behaviours: what the scenario reaches, and what its run exercised."""
    reach = reachable(scenario, observed.tools if observed is not None else ())
    done = exercised(result, result.turns)
    if scenario.target is None and not result.turns and result.llm_calls:
        done.add(("turns", "single"))
    if observed is not None:
        done.update(("wire", wire) for wire in observed.wires)
    if scenario.target is not None:
        reach |= _target_run_cells(scenario, result, done)
    elif _provider_wire(scenario) is not None and result.llm_calls:
        done.add(("wire", str(_provider_wire(scenario))))
    return Behaviours(frozenset(reach), frozenset(done))


def _target_run_cells(scenario: Scenario, result: ScenarioResult, done: set[Cell]) -> set[Cell]:
    """A target's reachable cells known once it ran: its conversations (the main one
    held when it made a request and no other), its matrix wire."""
    reach: set[Cell] = set()
    if scenario.llm.conversations and result.llm_calls and not result.conversations:
        done.add(("conversation", "main"))
    wire = (scenario.combination or {}).get("wire")
    if isinstance(wire, str):
        reach.add(("wire", wire))
    return reach


# -- what a scenario file reaches ---------------------------------------------------------


def reachable(scenario: Scenario, offered: Collection[str] = ()) -> set[Cell]:
    """The cells a scenario can reach (docs/coverage.md#the-universe): from its file, and
    the tool names its requests ``offered`` that the file does not name (a target's own,
    an MCP server's)."""
    homes = tool_homes(scenario)
    named = {name for name, _ in homes}
    extra = "target" if scenario.target is not None else "mcp"
    homes += [(name, extra) for name in sorted(set(offered) - named)]
    cells: set[Cell] = set()
    for name, home in homes:
        cells |= _tool_cells(name, home)
    scripted = scenario.llm.provider == "scripted"
    tools = bool(homes) or (scenario.target is None and bool(scenario.tools))
    if scenario.target is not None:
        cells |= _target_cells(scenario, scripted, tools)
        return cells
    cells.add(("termination", "completed"))
    cells.add(("turns", "single"))
    cells.add(("turns", "multi"))
    # Arguments harness checks itself: those of the tools it runs (an MCP server checks
    # its own tools', and a replayed one answers only the calls it recorded).
    checked = any(home == "own" for _, home in homes)
    if scripted:
        cells.add(("termination", "llm_error"))
        cells.update(("model_fault", f) for f in FAULTS if f not in _TOOL_FAULTS)
        cells.add(("model_fault", "unknown_tool"))
        if checked:
            cells.update(("model_fault", f) for f in _TOOL_FAULTS)
    if checked:
        cells.add(("termination", "validation_error"))
    if tools:
        cells.add(("termination", "max_iterations"))
        cells.update(("plan", p) for p in ("single", "parallel"))
    if any(spec.mcp is not None for _, spec in _all_tools(scenario)):
        cells.add(("termination", "tool_error"))
    for config in _agent_configs(scenario):
        cells |= _guard_cells(config, tools)
    cells.update(("sub_agent", name) for name, spec in _all_tools(scenario) if spec.agent)
    return cells


def _target_cells(scenario: Scenario, scripted: bool, tools: bool) -> set[Cell]:
    cells: set[Cell] = {("termination", "completed")}
    target = scenario.target
    assert target is not None
    if scripted:
        cells.add(("termination", "llm_error"))
        faults = [f for f in _TARGET_FAULTS if tools or f not in _TOOL_FAULTS]
        cells.update(("model_fault", f) for f in faults)
        if scenario.tools:
            cells.add(("model_fault", "schema_arguments"))
    if tools:
        cells.update(("plan", p) for p in ("single", "parallel"))
        if scenario.agent.stagnation.window > 0:
            cells.add(("detector", "repeat"))
            if target.on_stagnation == "stop":
                cells.add(("termination", "stagnation"))
    if scenario.llm.conversations:
        cells.add(("conversation", "main"))
        for i, rule in enumerate(scenario.llm.conversations):
            cells.add(("conversation", rule.name or f"conversation {i + 1}"))
    return cells


def _guard_cells(config: AgentConfig, tools: bool) -> set[Cell]:
    """The detectors watching a run of this config, and its budgets."""
    cells: set[Cell] = set()
    if config.detectors is not None:
        detectors = list(config.detectors)
    else:
        # The default: repeat alone, which compares tool plans.
        detectors = ["repeat"] if tools and config.stagnation_window > 0 else []
    cells.update(("detector", name) for name in detectors)
    if detectors:
        cells.add(("termination", "stagnation"))
    budget = config.budget
    if budget is not None:
        limits = [k for k in _BUDGETS if getattr(budget, k) is not None]
        cells.update(("budget", name) for name in limits)
        if limits:
            cells.add(("termination", "budget"))
    return cells


def _tool_cells(name: str, home: str) -> set[Cell]:
    cells: set[Cell] = {("tool", name)}
    cells.update(("tool_outcome", f"{name}:{status}") for status in _OUTCOMES[home])
    return cells


def tool_homes(scenario: Scenario) -> list[tuple[str, str]]:
    """(tool name, where it runs) for each tool the scenario's file names: ``own`` (the
    own loop's, a sub-agent's included), ``mcp`` (an own loop's MCP server's, by
    ``only:``), ``served`` (a target's, served over MCP), ``target`` (one a target's
    script calls that the file does not define)."""
    if scenario.target is None:
        found: list[tuple[str, str]] = []
        for name, spec in _all_tools(scenario):
            if spec.mcp is None:
                found.append((name, "own"))
            else:
                found.extend((tool, "mcp") for tool in spec.mcp.only or ())
        return found
    served = [(name, "served") for name in scenario.tools]
    called = {
        call.name
        for script in (scenario.llm.script, *(r.script for r in scenario.llm.conversations))
        for step in script
        for variant in step.variants()  # a stochastic step's every option
        for call in variant.tool_calls
        if call.name not in scenario.tools
    }
    return served + [(name, "target") for name in sorted(called)]


def _all_tools(scenario: Scenario) -> Iterator[tuple[str, ToolSpec]]:
    """The tools of the scenario and of every sub-agent its tools reach."""
    seen: set[str] = set()
    pending = [scenario.tools]
    while pending:
        tools = pending.pop()
        for name, spec in tools.items():
            yield name, spec
            agent = spec.agent
            if agent is not None and agent not in seen and agent in scenario.agents:
                seen.add(agent)
                pending.append(scenario.agents[agent].tools)


def _agent_configs(scenario: Scenario) -> Iterator[AgentConfig]:
    """The loop settings of the scenario's agent and of the sub-agents its tools reach."""
    yield scenario.agent.to_config()
    for _, spec in _all_tools(scenario):
        if spec.agent is not None and spec.agent in scenario.agents:
            yield scenario.agents[spec.agent].agent.to_config()


def _provider_wire(scenario: Scenario) -> str | None:
    """The wire an own loop's recorded model speaks (None for a script)."""
    wire = _PROVIDER_WIRES.get(scenario.llm.provider)
    return None if wire is None else wire.format(api=scenario.llm.api)
