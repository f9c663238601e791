"""Running a scenario: build the agent it describes, run it, check its expectations."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.actions import RunResult
from harness.agent import Agent
from harness.checks import CheckContext
from harness.errors import HarnessError, RecordingRefused
from harness.llm.base import LLM, close_llm
from harness.llm.config import RECORD_MODES, LLMContext
from harness.plugins import Plugins, get_plugins, project_plugins
from harness.results import ExpectationResult, ScenarioId, ScenarioResult, Status
from harness.scenario.expectations import RequestCapture, evaluate
from harness.scenario.judging import build_judge
from harness.scenario.loader import build_tools, load_scenario, starting_conversation
from harness.scenario.matrix import combination_label
from harness.scenario.schema import Scenario
from harness.sync import run_sync

__all__ = ["arun_scenario", "run_scenario", "scenario_id"]


def scenario_id(scenario: Scenario) -> ScenarioId:
    """The scenario's id: its file relative to the project root, and its name (with its
    matrix combination: ``name[model=a,planner=b]``)."""
    name = scenario.display_name
    if scenario.combination is not None:
        name = f"{name}[{combination_label(scenario.combination)}]"
    return ScenarioId(scenario.id_path or "<python>", name)


class _HeldOpen:
    """The scenario's LLM source as the agent sees it: the run does not close it, the
    runner does once the judges have asked (their requests go into the same cassette)."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    async def complete(self, request: Any) -> Any:
        """The source's reply."""
        return await self.llm.complete(request)

    async def aclose(self) -> None:
        """Nothing yet: see ``arun_scenario``."""


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
    scenario = _runnable(scenario, record_mode)
    sid = scenario_id(scenario)
    # The plugins of the scenario's own project, wherever the run started.
    project = get_plugins(scenario.root)
    llm = _llm_source(scenario, project, sid, record_mode, disable_recording)
    # Only a scenario that asks what was sent observes the requests.
    wanted = {r.call for r in (scenario.expect.requests or [])} if scenario.expect else set()
    capture = RequestCapture(wanted) if wanted else None
    agent_config = scenario.agent.to_config()
    judge = build_judge(scenario, llm)
    with project_plugins(scenario.root):
        agent = Agent(
            _HeldOpen(llm) if judge is not None else llm,
            # Fresh for every run: stubs count their calls (`errors`, `results` by on_call).
            list(build_tools(scenario).values()),
            config=agent_config,
            plugins=[*plugins, *([capture] if capture else [])],
        )
    # Agent.arun closes the LLM source (a recording is saved) when the run ends; with
    # judges, that waits until they have asked (below).
    try:
        result = await agent.arun(scenario.input, starting_conversation(scenario))
        refused = getattr(llm, "refused", None)
        if refused:
            # Not a result: a recording that cannot go on, with nothing written.
            raise RecordingRefused(f"{sid}: {refused}")
        check = CheckContext.of(
            result,
            requests=capture.seen if capture else {},
            remaining_replies=getattr(llm, "remaining", None),
            scenario=scenario,
            judge=judge,
        )
        expectations = await evaluate(scenario.expect, check, project.registry("expectations"))
    finally:
        if judge is not None:
            await close_llm(llm)
    if judge is not None and judge.requests:
        # What the judges cost, beside the agent's own usage (never added into it).
        result = result.model_copy(update={"usage": {**result.usage, **judge.cost()}})
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
        matrix=scenario.combination,
    )


def _runnable(scenario: str | Path | Scenario, record_mode: str) -> Scenario:
    """The scenario to run (loaded from its file); HarnessError for what cannot run."""
    if record_mode not in RECORD_MODES:
        raise HarnessError(
            f"unknown record mode {record_mode!r}; use one of {', '.join(RECORD_MODES)}"
        )
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    if scenario.matrix:
        raise HarnessError(
            f"{scenario_id(scenario)} has a matrix: run each combination "
            "(harness.scenario.expand_matrix(scenario) gives them), or run the file with "
            "`harness run`"
        )
    return scenario


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
        variant=combination_label(scenario.combination) if scenario.combination else None,
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
