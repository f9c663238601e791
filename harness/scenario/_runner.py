"""Running a scenario: build the agent it describes (or start its external target), run
it, check its expectations."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness._actions import RunResult
from harness._agent import Agent
from harness._checks import CheckContext
from harness._errors import HarnessError, RecordingRefused, ScenarioSkipped
from harness._results import ExpectationResult, ScenarioResult, Status, TurnResult
from harness._sync import run_sync
from harness.llm._base import LLM, close_llm
from harness.llm._config import RECORD_MODES
from harness.scenario._agents import SubAgents
from harness.scenario._context import ScenarioRun, scenario_id
from harness.scenario._expectations import RequestCapture, evaluate
from harness.scenario._external import arun_target
from harness.scenario._judging import build_judge
from harness.scenario._loader import build_tools, load_scenario, starting_conversation
from harness.scenario._mcp_tools import ServerDown, mcp_servers, served_tools
from harness.scenario._schema import Scenario
from harness.scenario._serving import llm_source, scenario_agent
from harness.scenario._turns import run_turns, turn_capture
from harness.scenario._unreached import unreached
from harness.scenario._user_model import UserSide, user_source

if TYPE_CHECKING:
    from harness.mcp._client import MCPServers

__all__ = ["arun_scenario", "run_scenario", "scenario_id"]


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
    run: int | None = None,
    seed: int | None = None,
) -> ScenarioResult:
    """Run a scenario file (or a Scenario object) and check its expectations.

    ``plugins`` are extra plugin objects for this run only (observers, say), on top of
    those of the scenario's project. ``run`` (which run of a repeated scenario this is)
    and ``seed`` are what its stochastic steps are drawn with (docs/scenarios.md
    #stochastic-steps); by default, the scenario's own (``Scenario.for_run``).
    """
    scenario = _runnable(scenario, record_mode, run, seed)
    if scenario.skip_reason is not None:
        sid = scenario_id(scenario)
        raise ScenarioSkipped(f"{sid}: skipped: {scenario.skip_reason}", scenario.skip_reason)
    # Only a scenario that asks what was sent observes the requests.
    wanted = {r.call for r in (scenario.expect.requests or [])} if scenario.expect else set()
    if scenario.turns is not None:
        capture: RequestCapture | None = turn_capture(scenario)
    else:
        capture = RequestCapture(wanted) if wanted else None
    this = ScenarioRun.of(
        scenario,
        record_mode=record_mode,
        disable_recording=disable_recording,
        capture=capture,
        extra=plugins,
    )
    if scenario.target is not None:
        return await _run_target(this)
    # The own loop's MCP servers start before its agent, whose tools are theirs (listed
    # now, or replayed). Here, not in a function of its own: a plugin's error in the run
    # shows a traceback as short as it can be.
    servers = mcp_servers(scenario, this.llm)
    try:
        down = await servers.start() if servers is not None else None
        if down:
            this = replace(this, extra=(*this.extra, ServerDown(down)))
        return await _run_agent(this, servers)
    finally:
        if servers is not None:
            await servers.aclose()


async def _run_target(run: ScenarioRun) -> ScenarioResult:
    """The scenario's target run, observed, its expectations checked."""
    scenario, capture = run.scenario, run.capture
    assert scenario.target is not None
    # Reports show who ran the loop: the target's kind, not a planner of harness's.
    (kind,) = scenario.target.kinds()
    run = replace(run, agent=run.agent.model_copy(update={"planner": f"target:{kind}"}))
    tools = build_tools(scenario, plugins=run.plugins) if scenario.tools else None
    result, remaining, refused = await arun_target(
        run, tools=served_tools(scenario, tools) if tools is not None else None
    )
    if refused:
        # Not a result: a recording that cannot go on, with nothing written.
        raise RecordingRefused(f"{run.id}: {refused}")
    check = CheckContext.of(
        result,
        requests=capture.seen if capture else {},
        remaining_replies=remaining,
        scenario=scenario,
    )
    expectations = await evaluate(scenario.expect, check, run.plugins.registry("expectations"))
    bypassed = unreached(result, remaining, scenario)
    return _result(run, result, [*expectations, *filter(None, [bypassed])])


async def _run_agent(run: ScenarioRun, servers: MCPServers | None) -> ScenarioResult:
    """The scenario run by harness's own loop (its MCP servers started), its judges
    asked, its expectations checked."""
    scenario, capture = run.scenario, run.capture
    llm = llm_source(run)
    judge = build_judge(scenario, llm, run.llm.draws + "\x00judge")
    user = user_source(run, llm)
    # The agent's source stays open across the turns and until the judges have asked
    # when they share it (their requests go into the same cassette).
    held = judge is not None or (user is not None and user.source is llm)
    # The sub-agents its tools expose, built once for this run; their LLM sources stay
    # open across their calls and are closed when the run ends.
    sub_agents = SubAgents(scenario, run.plugins)
    # Fresh for every run: stubs count their calls (`errors`, `results` by on_call).
    agent = scenario_agent(run, agents=sub_agents, llm=_HeldOpen(llm) if held else llm, mcp=servers)
    # Agent.arun closes the LLM source (a recording is saved) when the run ends; with
    # judges, that waits until they have asked (below).
    try:
        result, turns, per_turn = await _run(run, agent, llm, user)
        check = CheckContext.of(
            result,
            requests=capture.seen if capture else {},
            remaining_replies=getattr(llm, "remaining", None),
            scenario=scenario,
            judge=judge,
            turns=turns,
        )
        registry = run.plugins.registry("expectations")
        expectations = await evaluate(scenario.expect, check, registry)
        expectations += per_turn
    finally:
        for kept in sub_agents.llms:
            await close_llm(kept.source)
        if held:
            await close_llm(llm)
        if user is not None and user.source is not llm:
            await close_llm(user.source)
    # What the judges and the simulated user cost, beside the agent's own usage.
    side = {**(judge.cost() if judge else {}), **(user.cost() if user else {})}
    if side:
        result = result.model_copy(update={"usage": {**result.usage, **side}})
    return _result(run, result, expectations, turns)


def _result(
    run: ScenarioRun,
    result: RunResult,
    expectations: list[ExpectationResult],
    turns: list[TurnResult] | None = None,
) -> ScenarioResult:
    """The scenario's entry of results.json."""
    scenario, sid = run.scenario, run.id
    turns = turns or []
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
        agent=run.agent,
        matrix=scenario.combination,
        case=scenario.case_id,
        turns=turns,
        # The seed its stochastic steps were drawn with (absent without them).
        seed=scenario.draw[1] if scenario.stochastic else None,
    )


def _runnable(
    scenario: str | Path | Scenario, record_mode: str, run: int | None, seed: int | None
) -> Scenario:
    """The scenario to run (loaded from its file; as run ``run`` with ``seed`` when
    either is given); HarnessError for what cannot run."""
    if record_mode not in RECORD_MODES:
        raise HarnessError(
            f"unknown record mode {record_mode!r}; use one of {', '.join(RECORD_MODES)}"
        )
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    if scenario.cases is not None:
        ids = ", ".join(str(c.case_id) for c in scenario.case_scenarios)
        raise HarnessError(
            f"{scenario_id(scenario)} has cases ({ids}): run each case "
            "(scenario.case_scenarios gives them), or run the file with `harness run`"
        )
    if scenario.matrix:
        raise HarnessError(
            f"{scenario_id(scenario)} has a matrix: run each combination "
            "(harness.scenario.expand_matrix(scenario) gives them), or run the file with "
            "`harness run`"
        )
    if run is not None or seed is not None:
        scenario = scenario.for_run(run, seed or 0)
    return scenario


async def _run(
    run: ScenarioRun, agent: Agent, llm: LLM, user: UserSide | None = None
) -> tuple[RunResult, list[TurnResult], list[ExpectationResult]]:
    """The run (every turn of a ``turns:`` scenario, ``user``: what a simulated user
    asks), its turns and their expectations."""
    scenario, sid = run.scenario, run.id
    try:
        if scenario.turns is not None:
            start = starting_conversation(scenario)
            return await run_turns(run, agent, llm, start, user)
        # Agent.arun closes the LLM source (a recording is saved) when the run ends.
        result = await agent.arun(scenario.input, starting_conversation(scenario))
    except RecordingRefused as exc:
        raise RecordingRefused(f"{sid}: {exc}") from None
    refused = getattr(llm, "refused", None)
    if refused:
        # Not a result: a recording that cannot go on, with nothing written.
        raise RecordingRefused(f"{sid}: {refused}")
    return result, [], []


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
    run: int | None = None,
    seed: int | None = None,
) -> ScenarioResult:
    """Synchronous ``arun_scenario``; inside a running event loop, await that instead."""
    return run_sync(
        arun_scenario(
            scenario,
            record_mode,
            disable_recording=disable_recording,
            plugins=plugins,
            run=run,
            seed=seed,
        ),
        name="run_scenario()",
        instead="harness.scenario.arun_scenario(...)",
    )
