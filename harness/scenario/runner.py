"""Running a scenario: build the agent it describes, run it, check its expectations."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.actions import RunResult
from harness.checks import CheckContext
from harness.errors import HarnessError, RecordingRefused
from harness.llm.base import close_llm
from harness.llm.config import RECORD_MODES
from harness.plugins import get_plugins
from harness.results import ExpectationResult, ScenarioResult, Status
from harness.scenario.agents import SubAgents
from harness.scenario.expectations import RequestCapture, evaluate
from harness.scenario.loader import load_scenario, starting_conversation
from harness.scenario.schema import Scenario
from harness.scenario.serving import scenario_agent, scenario_id
from harness.sync import run_sync

__all__ = ["arun_scenario", "run_scenario", "scenario_id"]


async def arun_scenario(
    scenario: str | Path | Scenario,
    record_mode: str = "none",
    *,
    disable_recording: bool = False,
    plugins: Sequence[Any] = (),
) -> ScenarioResult:
    """Run a scenario file (or a Scenario object) and check its expectations.

    ``plugins`` are extra plugin objects for this run only (observers, say), on top of
    those of the scenario's project.
    """
    if record_mode not in RECORD_MODES:
        raise HarnessError(
            f"unknown record mode {record_mode!r}; use one of {', '.join(RECORD_MODES)}"
        )
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    sid = scenario_id(scenario)
    # The plugins of the scenario's own project, wherever the run started.
    project = get_plugins(scenario.root)
    # Only a scenario that asks what was sent observes the requests.
    wanted = {r.call for r in (scenario.expect.requests or [])} if scenario.expect else set()
    capture = RequestCapture(wanted) if wanted else None
    agent_config = scenario.agent.to_config()
    # The sub-agents its tools expose, built once for this run; their LLM sources stay
    # open across their calls and are closed when the run ends.
    sub_agents = SubAgents(scenario)
    # Fresh for every run: stubs count their calls (`errors`, `results` by on_call).
    agent = scenario_agent(
        scenario,
        plugins=[*plugins, *([capture] if capture else [])],
        record_mode=record_mode,
        disable_recording=disable_recording,
        agents=sub_agents,
    )
    llm = agent.llm
    # Agent.arun closes the LLM source (a recording is saved) when the run ends.
    try:
        result = await agent.arun(scenario.input, starting_conversation(scenario))
    finally:
        for kept in sub_agents.llms:
            await close_llm(kept.source)
    refused = getattr(llm, "refused", None)
    if refused:
        # Not a result: a recording that cannot go on, with nothing written.
        raise RecordingRefused(f"{sid}: {refused}")

    check = CheckContext.of(
        result,
        requests=capture.seen if capture else {},
        remaining_replies=getattr(llm, "remaining", None),
        scenario=scenario,
    )
    expectations = evaluate(scenario.expect, check, project.registry("expectations"))
    return ScenarioResult.from_run(
        result,
        id=str(sid),
        name=sid.name,
        file=sid.file,
        expectations=expectations,
        status=_status(result, expectations),
        description=scenario.description,
        tags=list(scenario.tags),
        agent=agent_config,
    )


def _status(result: RunResult, expectations: list[ExpectationResult]) -> Status:
    """``error`` when the run ended in error, else whether every expectation held."""
    if result.termination == "error":
        return "error"
    return "passed" if all(e.ok for e in expectations) else "failed"


def run_scenario(
    scenario: str | Path | Scenario,
    record_mode: str = "none",
    *,
    disable_recording: bool = False,
    plugins: Sequence[Any] = (),
) -> ScenarioResult:
    """Synchronous ``arun_scenario``; inside a running event loop, await that instead."""
    return run_sync(
        arun_scenario(scenario, record_mode, disable_recording=disable_recording, plugins=plugins),
        name="run_scenario()",
        instead="harness.scenario.arun_scenario(...)",
    )
