"""Running a ``turns:`` scenario: a conversation of several user turns.

Before each turn the scenario's user simulator (``harness_register_users``; the built-in
``scripted`` replays the turns' ``user:`` texts) gives the next message; the loop then
runs on the whole conversation so far, so every turn sees the turns before it. Each
turn is one run (its own iterations and termination) checked against its own
``expect``; the scenario's top-level ``expect`` judges the whole: one RunResult in which
iterations, LLM calls, plans and the simulated clock count on across the turns, ending
with the last turn's termination and final response.

A turn that ends in ``error`` or ``llm_error`` ends the conversation: there is no
model (or no harness) left to talk to. Other endings (stagnation, a budget, the
iteration limit) let the user go on, as a person would.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import TYPE_CHECKING, Any

from harness._actions import FinalData, RunResult, Termination
from harness._agent import Agent
from harness._checks import CheckContext
from harness._errors import HarnessError, RecordingRefused
from harness._messages import Conversation
from harness._results import ExpectationResult, TurnResult
from harness._users import UserContext
from harness.events import (
    ActionExecutedEvent,
    Event,
    LLMFailedEvent,
    LLMRequestEvent,
    LLMResponseEvent,
    OtherEvent,
)
from harness.hookspecs import hookimpl
from harness.scenario._expectations import RequestCapture, evaluate
from harness.scenario._schema import Scenario

if TYPE_CHECKING:
    from harness.scenario._context import ScenarioRun

__all__ = ["TurnCapture", "run_turns"]

_LAST = (Termination.error, Termination.llm_error, Termination.tool_error)


class TurnCapture(RequestCapture):
    """Keeps the requests the top-level ``expect.requests`` asks about (by call number
    across the turns) and those each turn's own ``expect.requests`` asks about (by call
    number within the turn)."""

    def __init__(self, calls: set[int], per_turn: dict[int, set[int]]) -> None:
        super().__init__(calls)
        self.per_turn = per_turn
        self.turn = 1
        self.offset = 0
        self.turn_seen: dict[int, dict[int, dict[str, Any]]] = {}

    @hookimpl
    def harness_llm_request(self, run: Any, request: Any) -> None:
        """Copy the request if the whole or its turn asks about it."""
        number = self.offset + request.call
        wanted = request.call in self.per_turn.get(self.turn, set())
        if number in self.calls or wanted:
            sent = {
                "messages": request.messages,
                "tools": [t.name for t in request.tools],
                "options": dict(request.options),
            }
            if number in self.calls:
                self.seen[number] = sent
            if wanted:
                self.turn_seen.setdefault(self.turn, {})[request.call] = sent


def turn_capture(scenario: Scenario) -> TurnCapture | None:
    """The capture a turns scenario needs, or None when nothing asks what was sent."""
    calls = {r.call for r in (scenario.expect.requests or [])} if scenario.expect else set()
    per_turn = {
        k: {r.call for r in turn.expect.requests or []}
        for k, turn in enumerate(scenario.turns or [], 1)
        if turn.expect is not None and turn.expect.requests
    }
    return TurnCapture(calls, per_turn) if calls or per_turn else None


async def run_turns(
    run: ScenarioRun,
    agent: Agent,
    llm: Any,
    start: Conversation | None,
    user_llm: Any = None,
) -> tuple[RunResult, list[TurnResult], list[ExpectationResult]]:
    """Run every turn; the whole run, the turns, and the turns' checked expectations
    (paths ``turns.K.key``). ``user_llm``: what an LLM-driven user asks."""
    scenario, project = run.scenario, run.plugins
    # A turns scenario's capture is a TurnCapture (turn_capture), or there is none.
    capture = run.capture if isinstance(run.capture, TurnCapture) else None
    turns = scenario.turns or []
    context = UserContext(
        turns=[t.user for t in turns],
        options=scenario.user.simulator_options(),
        scenario=scenario,
        llm=user_llm,
    )
    user = project.user_factory(scenario.user.kind)(context)
    registry = project.registry("expectations")
    conversation = start
    runs: list[RunResult] = []
    results: list[TurnResult] = []
    checked: list[ExpectationResult] = []
    for k, spec in enumerate(turns, 1):
        text = user.next_message(conversation or Conversation(), k)
        if inspect.isawaitable(text):
            text = await text
        if text is None:
            break
        if capture is not None:
            capture.turn = k
            capture.offset = sum(r.llm_calls for r in runs)
        result = await agent.arun(text, conversation)
        refused = getattr(llm, "refused", None)
        if refused:
            raise RecordingRefused(refused)
        first = sum(r.iterations for r in runs) + 1
        runs.append(result)
        conversation = result.conversation
        expectations: list[ExpectationResult] = []
        if spec.expect is not None:
            check = CheckContext.of(
                result,
                requests=capture.turn_seen.get(k, {}) if capture else {},
                remaining_replies=getattr(llm, "remaining", None),
                scenario=scenario,
            )
            expectations = await evaluate(spec.expect, check, registry)
        checked += [e.model_copy(update={"path": f"turns.{k}.{e.path}"}) for e in expectations]
        results.append(_turn_result(k, text, result, expectations, first))
        if result.termination in _LAST:
            break
    if not runs:
        raise HarnessError(
            f"user {scenario.user.name!r} gave no message for the first turn: a conversation "
            "needs at least one"
        )
    return merge_runs(runs), results, checked


def _turn_result(
    k: int, text: str, result: RunResult, expectations: list[ExpectationResult], first: int
) -> TurnResult:
    if result.termination == Termination.error:
        status = "error"
    else:
        status = "passed" if all(e.ok for e in expectations) else "failed"
    return TurnResult(
        turn=k,
        user=text,
        status=status,
        termination=result.termination,
        iterations=result.iterations,
        llm_calls=result.llm_calls,
        tool_calls=sum(1 for r in result.tool_calls if r.status != "not_run"),
        first_iteration=first,
        last_iteration=first + result.iterations - 1,
        final=result.final,
        expectations=expectations,
    )


def _shift_window(data: FinalData, iterations: int) -> FinalData:
    """A stuck detector's window with its iterations counted across the turns."""
    window = data.window
    if not iterations or not isinstance(window, list):
        return data
    shifted = [
        {**e, "iteration": e["iteration"] + iterations}
        if isinstance(e.get("iteration"), int)
        else e
        for e in window
    ]
    return data.merged(window=shifted)


def _shifted(event: Event, iterations: int, calls: int, groups: int, sim: float) -> Event:
    """An event of a later turn, its iteration, call, group and clock counted across the
    turns."""
    if isinstance(event, OtherEvent):  # a plugin's own: the keys it has
        data = dict(event)
        data["iteration"] = data.get("iteration", 0) + iterations
        for key, offset in (("call", calls), ("group", groups)):
            if isinstance(data.get(key), int):
                data[key] += offset
        if isinstance(data.get("sim"), int | float):
            data["sim"] = round(data["sim"] + sim, 9)
        return OtherEvent(**data)
    update: dict[str, Any] = {"iteration": event.iteration + iterations}
    if isinstance(event, LLMRequestEvent | LLMResponseEvent | LLMFailedEvent):
        update["call"] = event.call + calls
        if event.sim is not None:
            update["sim"] = round(event.sim + sim, 9)
    elif isinstance(event, ActionExecutedEvent):
        update["group"] = event.group + groups
    return dataclasses.replace(event, **update)


def merge_runs(runs: list[RunResult]) -> RunResult:
    """One RunResult for the whole conversation: counts, plans and the clock count on."""
    iterations = calls = groups = 0
    sim = 0.0
    records, parallel, events, memory = [], [], [], []
    usage: dict[str, int] = {}
    for run in runs:
        for record in run.tool_calls:
            records.append(
                record.model_copy(
                    update={
                        "iteration": record.iteration + iterations,
                        "group": record.group + groups,
                        "sim_start": round(record.sim_start + sim, 9),
                        "sim_end": round(record.sim_end + sim, 9),
                    }
                )
            )
        parallel += run.parallel_groups
        events += [_shifted(event, iterations, calls, groups, sim) for event in run.events]
        for entry in run.memory:
            if isinstance(entry.get("iteration"), int):
                entry = {**entry, "iteration": entry["iteration"] + iterations}
                entry["window"] = [i + iterations for i in entry.get("window", [])]
            memory.append(entry)
        for key, value in run.usage.items():
            usage[key] = usage.get(key, 0) + value
        last_iterations = iterations
        iterations += run.iterations
        calls += run.llm_calls
        groups = max([groups, *(r.group for r in records)])
        sim += run.sim_time
    last = runs[-1]
    final = last.final.model_copy(update={"data": _shift_window(last.final.data, last_iterations)})
    return RunResult(
        termination=last.termination,
        final=final,
        iterations=iterations,
        llm_calls=calls,
        tool_calls=records,
        parallel_groups=parallel,
        conversation=last.conversation,
        events=events,
        memory=memory,
        usage=usage,
        sim_time=round(sim, 9),
        wall_time=sum(r.wall_time for r in runs),
    )
