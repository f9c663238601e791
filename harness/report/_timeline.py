"""One scenario's run laid out for reading: iterations, LLM calls and tool plans on the
simulated clock, the stagnation window, and how the run ended.

Tool calls carry their own simulated start and end. LLM calls are placed from the
events: when an ``llm_request`` / ``llm_response`` event carries ``sim`` (the run's
simulated clock at that moment, as the loop records it) it is used as is; otherwise
(an edited or hand-made results file) the time between two known points (tool plans,
the end of the run) is shared by the LLM calls made in between, which is exact in the
usual case of one LLM call between two tool plans.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness._actions import ToolCallRecord, WallClockSpan
from harness._messages import AssistantMessage
from harness._results import ScenarioResult
from harness.events import ActionExecutedEvent, LLMFailedEvent, LLMRequestEvent, LLMResponseEvent
from harness.report._plans import plans

__all__ = ["Item", "Iteration", "Timeline", "build_timeline", "failure_text", "is_target"]


@dataclass
class Item:
    """Something that happened in an iteration: an LLM call or a tool plan."""

    kind: str  # "llm" | "tools"
    iteration: int
    # LLM call: its number, the reply (None when the call failed), whether it failed.
    call: int = 0
    reply: AssistantMessage | None = None
    failed: bool = False
    # Why it failed, when the run says (``HTTP 429: Rate limited``: a target's answer).
    error: str | None = None
    tool_choice: str | None = None  # as the request set it ("none": a forced answer)
    # Tool plan: its group number and calls in the model's order.
    group: int = 0
    calls: list[ToolCallRecord] = field(default_factory=list)
    declined: bool = False  # the plan stagnation stopped
    stopped: bool = False  # a plan validation stopped (none of it ran)
    start: float = 0.0
    end: float = 0.0
    # Whether start/end are known (not shared out between neighbours).
    exact: bool = True

    @property
    def parallel(self) -> bool:
        """True for a plan of two or more calls that ran at the same time."""
        return len(self.calls) > 1 and len({(c.sim_start) for c in self.calls}) == 1


@dataclass
class Iteration:
    """One trip through the loop and what it did."""

    number: int
    items: list[Item] = field(default_factory=list)
    in_window: bool = False
    # For an iteration with no LLM call and no tool plan: what the planner did.
    note: str = ""


def is_target(result: ScenarioResult) -> bool:
    """Whether an external target ran the scenario (its planner is ``target:<kind>``)."""
    return result.agent is not None and str(result.agent.planner).startswith("target:")


@dataclass
class Timeline:
    """A scenario's iterations, on a clock from 0 to ``total`` seconds: simulated, or for
    an external target's run (``wall``) the wall clock."""

    iterations: list[Iteration]
    total: float
    # Iteration numbers of the stagnation window (the W identical plans that ran), and W.
    window: list[int] = field(default_factory=list)
    window_size: int = 0
    approximate: bool = False
    # The detector that stopped the run ("" for the seed's repeat under its default config).
    detector: str = ""
    # An external target's run: its stagnating plans all ran, and the request after them
    # was refused (the observer sees a plan only once it has run).
    target: bool = False
    # Iteration -> the nudge added in it: {detector, content, window}.
    nudges: dict[int, dict[str, Any]] = field(default_factory=dict)
    # First iteration -> the turn starting there (a `turns:` scenario): {turn, user, last}.
    turns: dict[int, dict[str, Any]] = field(default_factory=dict)
    # Placed on the wall clock (an external target's run), not the simulated one.
    wall: bool = False


@dataclass
class _LLMCalls:
    """The run's LLM calls as its events tell them."""

    # (call, iteration, simulated time of the request), in order.
    requests: list[tuple[int, int, float | None]] = field(default_factory=list)
    # call -> simulated time of its response (answered calls only).
    responses: dict[int, float | None] = field(default_factory=dict)
    # call -> the iteration of its request.
    iteration_of: dict[int, int] = field(default_factory=dict)
    # call -> the request's tool_choice, when it set one.
    choices: dict[int, str] = field(default_factory=dict)
    # call -> why it failed (an ``llm_failed`` event: a target's error answer).
    errors: dict[int, str] = field(default_factory=dict)


def _llm_replies(scenario: ScenarioResult, answered: int) -> list[AssistantMessage]:
    """The assistant messages that LLM calls of this run produced, in order.

    A saved history given as the starting conversation may hold assistant messages
    too: this run's replies are the last ``answered`` ones.
    """
    replies = [m for m in scenario.transcript if isinstance(m, AssistantMessage)]
    return replies[len(replies) - answered :] if answered else []


def build_timeline(scenario: ScenarioResult) -> Timeline:
    """Lay out one scenario's run (iterations in order, each with its items in order)."""
    groups = plans(scenario)
    calls, order = _read_events(scenario, groups)
    answered = [c for c, _, _ in calls.requests if c in calls.responses]
    replies = _llm_replies(scenario, len(answered))
    _place_unexecuted_plans(order, groups, calls, _asked_by(answered, replies))
    unused = iter(replies)
    items = [
        _llm_item(key, calls, unused) if kind == "llm" else _plan_item(key, groups[key], scenario)
        for kind, key in order
    ]
    wall = bool(scenario.wall_clock)
    if wall:
        approximate = False
        _place_on_wall_clock(items, {span.call: span for span in scenario.wall_clock})
    else:
        approximate = _place_on_clock(items, scenario, calls.requests, calls.responses)
    iterations = _iterations(scenario, items)
    window, size = _stagnation_window(scenario, items)
    nudges = _nudges(scenario)
    for iteration in iterations:
        iteration.in_window = iteration.number in window
        if not iteration.items:
            iteration.note = _note(scenario, iteration.number == iterations[-1].number)
    total = max([scenario.wall_time if wall else scenario.sim_time, *(i.end for i in items)])
    return Timeline(
        iterations,
        total,
        window,
        size,
        approximate,
        detector=scenario.final.data.detector or "",
        target=is_target(scenario),
        nudges=nudges,
        turns={
            t.first_iteration: {"turn": t.turn, "user": t.user, "last": t.last_iteration}
            for t in scenario.turns
        },
        wall=wall,
    )


def _nudges(scenario: ScenarioResult) -> dict[int, dict[str, Any]]:
    """The nudges of ``on_stuck: nudge``, by the iteration they were added in."""
    return {
        entry["iteration"]: entry
        for entry in scenario.memory
        if entry.get("kind") == "nudge" and isinstance(entry.get("iteration"), int)
    }


def _read_events(
    scenario: ScenarioResult, groups: dict[int, list[ToolCallRecord]]
) -> tuple[_LLMCalls, list[tuple[str, int]]]:
    """The LLM calls, and what happened in event order: ("llm", call) and ("tools", group)
    for the plans that were executed."""
    calls = _LLMCalls()
    order: list[tuple[str, int]] = []
    placed: set[int] = set()
    # A kind edited beyond reading in a results file is an OtherEvent: not read here.
    for event in scenario.events:
        if isinstance(event, LLMRequestEvent):
            calls.requests.append((event.call, event.iteration, event.sim))
            calls.iteration_of[event.call] = event.iteration
            order.append(("llm", event.call))
            if isinstance(event.tool_choice, str):
                calls.choices[event.call] = event.tool_choice
        elif isinstance(event, LLMResponseEvent):
            calls.responses[event.call] = event.sim
        elif isinstance(event, LLMFailedEvent):
            calls.errors[event.call] = failure_text(event)
        elif isinstance(event, ActionExecutedEvent):
            group = event.group
            if group in groups and group not in placed:
                placed.add(group)
                order.append(("tools", group))
    return calls, order


def _asked_by(answered: list[int], replies: list[AssistantMessage]) -> dict[str, int]:
    """Which LLM call asked for each tool call id (the latest reply holding it)."""
    return {
        call.id: number
        for number, reply in zip(answered, replies, strict=False)
        for call in reply.tool_calls
    }


def _place_unexecuted_plans(
    order: list[tuple[str, int]],
    groups: dict[int, list[ToolCallRecord]],
    calls: _LLMCalls,
    asked_by: dict[str, int],
) -> None:
    """Put the plans that never reached action_executed (stopped by validation or
    stagnation, left at the limit) into ``order`` right after the reply that asked for
    them, else after what their iteration did before them: in the order things happened."""
    placed = {key for kind, key in order if kind == "tools"}
    for group in groups:
        if group not in placed:
            order.insert(_slot(order, groups, group, calls.requests, asked_by), ("tools", group))


def _llm_item(call: int, calls: _LLMCalls, replies: Iterator[AssistantMessage]) -> Item:
    """An LLM call's item; answered calls take the next of this run's replies."""
    answered = call in calls.responses
    return Item(
        kind="llm",
        iteration=calls.iteration_of[call],
        call=call,
        reply=next(replies, None) if answered else None,
        failed=not answered,
        error=calls.errors.get(call),
        tool_choice=calls.choices.get(call),
    )


def failure_text(event: LLMFailedEvent) -> str:
    """An ``llm_failed`` event as one text: ``HTTP 429: Rate limited``."""
    text = event.message or event.type or "error"
    return f"HTTP {event.status}: {text}" if event.status else text


def _plan_item(group: int, calls: list[ToolCallRecord], scenario: ScenarioResult) -> Item:
    """A tool plan's item, marked declined (stagnation) or stopped (validation)."""
    statuses = {c.status for c in calls}
    return Item(
        kind="tools",
        iteration=calls[0].iteration,
        group=group,
        calls=calls,
        declined=statuses == {"not_run"} and scenario.termination.value == "stagnation",
        stopped=bool(statuses & {"invalid", "unknown_tool"})
        and statuses <= {"invalid", "unknown_tool", "not_run"}
        and scenario.termination.value == "validation_error",
    )


def _iterations(scenario: ScenarioResult, items: list[Item]) -> list[Iteration]:
    """Iterations 1..N (and any other an item names), each holding its items in order."""
    iterations = [Iteration(number=n) for n in range(1, max(scenario.iterations, 0) + 1)]
    by_number = {it.number: it for it in iterations}
    for item in items:
        iteration = by_number.get(item.iteration)
        if iteration is None:  # an event outside 1..iterations: show it anyway
            iteration = by_number[item.iteration] = Iteration(number=item.iteration)
            iterations.append(iteration)
    iterations.sort(key=lambda it: it.number)
    for item in items:
        by_number[item.iteration].items.append(item)
    return iterations


def _slot(
    order: list[tuple[str, int]],
    groups: dict[int, list[ToolCallRecord]],
    group: int,
    requests: list[tuple[int, int, Any]],
    asked_by: dict[str, int],
) -> int:
    """Where an unplaced plan goes in ``order``."""
    asked = asked_by.get(groups[group][0].id)
    if asked is not None and ("llm", asked) in order:
        return order.index(("llm", asked)) + 1
    iteration = groups[group][0].iteration
    for index, (kind, key) in enumerate(order):
        if _iteration_of(kind, key, requests, groups) > iteration:
            return index
    return len(order)


def _note(scenario: ScenarioResult, last: bool) -> str:
    kind = scenario.termination.value
    if last and kind == "completed":
        return "The planner completed the run with the final response."
    if last and kind == "empty":
        return "The planner returned an empty action: nothing to do."
    if last and kind == "error":
        return "The run ended in an error (see Errors)."
    return "No LLM call and no tool plan in this iteration."


def _iteration_of(
    kind: str, key: int, requests: list[tuple[int, int, Any]], groups: dict[int, list[Any]]
) -> int:
    if kind == "tools":
        return groups[key][0].iteration
    for call, iteration, _ in requests:
        if call == key:
            return iteration
    return 0


def _place_on_clock(
    items: list[Item],
    scenario: ScenarioResult,
    requests: list[tuple[int, int, float | None]],
    responses: dict[int, float | None],
) -> bool:
    """Give every item a start and end on the simulated clock; True if any was shared out."""
    started = {call: t for call, _, t in requests}
    approximate = False
    clock = 0.0
    pending: list[Item] = []

    def settle(until: float) -> None:
        nonlocal clock, approximate
        llms = [p for p in pending if p.kind == "llm"]
        share = max(until - clock, 0.0) / len(llms) if llms else 0.0
        if len(llms) > 1 and share > 0:
            approximate = True
        for p in pending:
            p.start = clock
            if p.kind == "llm":
                clock += share
                p.exact = len(llms) <= 1
            p.end = clock
        pending.clear()
        clock = max(clock, until)

    for item in items:
        if item.kind == "llm":
            t0, t1 = started.get(item.call), responses.get(item.call)
            if isinstance(t0, int | float) and isinstance(t1, int | float):
                settle(float(t0))
                item.start, item.end = float(t0), float(t1)
                clock = max(clock, item.end)
            else:
                pending.append(item)
            continue
        start = min(c.sim_start for c in item.calls)
        end = max(c.sim_end for c in item.calls)
        # A plan validation stopped was never put on the clock (its records say 0.0):
        # it happened wherever the run was, so it is not a known point in time.
        if end <= 0.0 and (pending or clock > 0.0):
            pending.append(item)
            continue
        settle(start)
        item.start, item.end = start, end
        clock = max(clock, end)
    settle(max(scenario.sim_time, clock))
    return approximate


def _place_on_wall_clock(items: list[Item], spans: dict[int, WallClockSpan]) -> None:
    """An external target's items on the wall clock: each LLM call on its own span, each
    tool plan in the gap after the calls before it, up to the next call's start (the
    target ran its tools between the reply and its next request)."""
    clock = 0.0
    for index, item in enumerate(items):
        span = spans.get(item.call) if item.kind == "llm" else None
        if span is not None:
            item.start, item.end = span.start, max(span.end, span.start)
        else:
            later = (spans.get(i.call) for i in items[index + 1 :] if i.kind == "llm")
            following = next((s.start for s in later if s is not None), clock)
            item.start, item.end = clock, max(clock, following)
        clock = max(clock, item.end)


def _stagnation_window(scenario: ScenarioResult, items: list[Item]) -> tuple[list[int], int]:
    """The iterations of the W identical plans before the declined one, and W."""
    if scenario.termination.value != "stagnation":
        return [], 0
    entries = scenario.final.data.window
    if isinstance(entries, list):
        # A detector's own window (docs/loop.md#stuck-detectors): the iterations its repeats
        # happened in.
        marked = {e.get("iteration") for e in entries if isinstance(e, dict)}
        return sorted(i for i in marked if isinstance(i, int)), len(entries)
    size = scenario.agent.stagnation_window if scenario.agent else 0
    plans = [i for i in items if i.kind == "tools"]
    if plans and plans[-1].declined:
        plans = plans[:-1]
    window = plans[-size:] if size > 0 else []
    return sorted({p.iteration for p in window}), size
