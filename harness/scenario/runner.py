"""Running a scenario: build the agent it describes, run it, check its expectations."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.actions import RunResult
from harness.agent import Agent
from harness.checks import CheckContext
from harness.errors import HarnessError, RecordingRefused
from harness.llm.base import LLM
from harness.llm.config import RECORD_MODES, LLMContext
from harness.plugins import Plugins, get_plugins, project_plugins
from harness.results import ExpectationResult, ScenarioId, ScenarioResult, Status, TurnResult
from harness.scenario.expectations import RequestCapture, evaluate
from harness.scenario.loader import build_tools, load_scenario, starting_conversation, with_prices
from harness.scenario.schema import Scenario
from harness.scenario.turns import run_turns, turn_capture
from harness.sync import run_sync

__all__ = ["arun_scenario", "run_scenario", "scenario_id"]


def scenario_id(scenario: Scenario) -> ScenarioId:
    """The scenario's id: its file relative to the project root, and its name."""
    return ScenarioId(scenario.id_path or "<python>", scenario.display_name)


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
    llm = _llm_source(scenario, project, sid, record_mode, disable_recording)
    # Only a scenario that asks what was sent observes the requests.
    wanted = {r.call for r in (scenario.expect.requests or [])} if scenario.expect else set()
    if scenario.turns is not None:
        capture: RequestCapture | None = turn_capture(scenario)
    else:
        capture = RequestCapture(wanted) if wanted else None
    agent_config = with_prices(scenario.agent.to_config(), scenario)
    with project_plugins(scenario.root):
        agent = Agent(
            llm,
            # Fresh for every run: stubs count their calls (`errors`, `results` by on_call).
            list(build_tools(scenario).values()),
            config=agent_config,
            plugins=[*plugins, *([capture] if capture else [])],
        )
    result, turns, per_turn = await _run(scenario, agent, llm, project, capture, sid)
    check = CheckContext.of(
        result,
        requests=capture.seen if capture else {},
        remaining_replies=getattr(llm, "remaining", None),
        scenario=scenario,
        turns=turns,
    )
    expectations = evaluate(scenario.expect, check, project.registry("expectations"))
    expectations += per_turn
    status = _status(result, expectations)
    if status == "passed" and any(t.status == "error" for t in turns):
        status = "error"
    return ScenarioResult.from_run(
        result,
        id=str(sid),
        name=sid.name,
        file=sid.file,
        expectations=expectations,
        status=status,
        description=scenario.description,
        tags=list(scenario.tags),
        agent=agent_config,
        turns=turns,
    )


async def _run(
    scenario: Scenario,
    agent: Agent,
    llm: LLM,
    project: Plugins,
    capture: Any,
    sid: ScenarioId,
) -> tuple[RunResult, list[TurnResult], list[ExpectationResult]]:
    """The run (every turn of a ``turns:`` scenario), its turns and their expectations."""
    try:
        if scenario.turns is not None:
            return await run_turns(
                scenario, agent, llm, project, capture, starting_conversation(scenario)
            )
        # Agent.arun closes the LLM source (a recording is saved) when the run ends.
        result = await agent.arun(scenario.input, starting_conversation(scenario))
    except RecordingRefused as exc:
        raise RecordingRefused(f"{sid}: {exc}") from None
    refused = getattr(llm, "refused", None)
    if refused:
        # Not a result: a recording that cannot go on, with nothing written.
        raise RecordingRefused(f"{sid}: {refused}")
    return result, [], []


def _llm_source(
    scenario: Scenario,
    plugins: Plugins,
    sid: ScenarioId,
    record_mode: str,
    disable_recording: bool,
) -> LLM:
    """The scenario's LLM source, told which scenario and record mode it serves."""
    context = LLMContext(
        scenario_id=str(sid),
        scenario_file=scenario.path,
        project_root=scenario.root,
        record_mode=record_mode,
        disable_recording=disable_recording,
    )
    return plugins.llm_factory(scenario.llm.provider)(scenario.llm.with_context(context))


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
