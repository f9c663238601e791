"""Behaviour coverage: which behaviours a suite exercised, out of those it could reach
(docs/coverage.md).

A **cell** is one behaviour, ``(kind, key)``: a tool called (``tool``, ``get_weather``),
one of its outcomes (``tool_outcome``, ``get_weather:error``), a termination, a stuck
detector or budget that fired, a model-side fault, a plan shape, turns, a sub-agent, a
target's conversation, a wire. Each scenario run contributes ``Behaviours``: the cells
it could reach (``reachable``, from its scenario file and what its requests offered:
harness.scenario._coverage) and the cells it exercised (``exercised``, read from its
result here). A suite's ``CoverageTable`` is the union of its scenarios' contributions:
every cell reachable or exercised by some scenario, covered by the scenarios that
exercised it. A union does not depend on the order or the grouping of its parts, so a
serial run, ``-n N``, a run in parts and merged shards give the same table.

``Coverage`` is the table as results.json keeps it (``coverage``): ``covered``, ``total``
and the ``cells``, each ``{kind, key, covered, scenarios}``, in a fixed order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from harness._actions import FinalResponse, RunFields, Termination, ToolCallRecord
from harness._messages import AssistantMessage, Message
from harness.events import LLMFailedEvent, LLMResponseEvent, StagnationObservedEvent

__all__ = [
    "FAULTS",
    "KINDS",
    "STATUSES",
    "Behaviours",
    "Cell",
    "Coverage",
    "CoverageCell",
    "CoverageTable",
    "carried",
    "exercised",
    "fault_of_status",
    "merged",
    "no_longer_covered",
]

# (kind, key): one behaviour.
Cell = tuple[str, str]

# The kinds, in the order results.json, the terminal and the report list them.
KINDS: tuple[str, ...] = (
    "tool",
    "tool_outcome",
    "termination",
    "detector",
    "budget",
    "model_fault",
    "plan",
    "turns",
    "sub_agent",
    "conversation",
    "wire",
)

# A tool call's statuses (results.json's), in the order the grid shows them.
STATUSES: tuple[str, ...] = ("ok", "error", "invalid", "not_run")

# The model-side faults, named as `harness explore` names its fault kinds (docs/coverage.md).
FAULTS: tuple[str, ...] = (
    "http_429",
    "http_500",
    "http_503",
    "overloaded",
    "timeout",
    "truncated",
    "malformed_arguments",
    "schema_arguments",
    "unknown_tool",
)

_BUDGETS = ("tokens", "cost", "tool_calls", "sim_time")
_ORDERS: dict[str, tuple[str, ...]] = {
    "termination": tuple(t.value for t in Termination),
    "model_fault": FAULTS,
    "budget": _BUDGETS,
    "plan": ("single", "parallel"),
    "turns": ("single", "multi"),
}
# A run's own HTTP status for an overloaded model (Anthropic's).
_OVERLOADED = 529


def fault_of_status(status: int) -> str:
    """The model_fault key of an HTTP error status: ``http_429``, ``overloaded`` (529)."""
    return "overloaded" if status == _OVERLOADED else f"http_{status}"


def _rank(cell: Cell) -> tuple[Any, ...]:
    """Where a cell goes: by kind, then in its kind's own order, then by key."""
    kind, key = cell
    kind_rank = KINDS.index(kind) if kind in KINDS else len(KINDS)
    if kind == "tool_outcome":
        tool, _, status = key.rpartition(":")
        place = STATUSES.index(status) if status in STATUSES else len(STATUSES)
        return (kind_rank, kind, tool, place, status)
    order = _ORDERS.get(kind, ())
    place = order.index(key) if key in order else len(order)
    return (kind_rank, kind, "", place, key)


# -- a scenario's contribution ------------------------------------------------------------


class Behaviours(NamedTuple):
    """One scenario run's contribution: the cells it could reach and those it exercised."""

    reachable: frozenset[Cell]
    exercised: frozenset[Cell]

    def to_json(self) -> list[list[list[str]]]:
        """Plain data (what a test report carries from an xdist worker), in cell order."""
        return [
            [list(cell) for cell in sorted(self.reachable, key=_rank)],
            [list(cell) for cell in sorted(self.exercised, key=_rank)],
        ]

    @classmethod
    def from_json(cls, data: Any) -> Behaviours:
        """``to_json``'s data read back."""
        reachable, done = data
        return cls(
            frozenset((str(k), str(v)) for k, v in reachable),
            frozenset((str(k), str(v)) for k, v in done),
        )


# -- what a run exercised -----------------------------------------------------------------


def exercised(run: RunFields, turns: Iterable[Any] = ()) -> set[Cell]:
    """The cells a run's record shows it exercised: its tool calls and their outcomes,
    how it (and each turn of ``turns``) ended, the detectors and budgets that fired, the
    model faults it met, its plans, and its sub-agents' runs, theirs included."""
    cells: set[Cell] = set()
    _add_run(cells, run)
    turns = list(turns)
    for turn in turns:
        _add_ending(cells, turn.termination, turn.final)
    if len(turns) >= 2:
        cells.add(("turns", "multi"))
    conversations = getattr(run, "conversations", None) or []
    cells.update(("conversation", c.conversation) for c in conversations)
    return cells


def _add_run(cells: set[Cell], run: RunFields) -> None:
    """A run's cells (a sub-run's too, by recursion)."""
    raw = _malformed_ids(getattr(run, "transcript", None) or [])
    if raw:
        cells.add(("model_fault", "malformed_arguments"))
    _add_ending(cells, run.termination, run.final)
    _add_calls(cells, run.tool_calls, raw)
    for memory in run.memory:
        if memory.get("kind") == "nudge" and memory.get("detector"):
            cells.add(("detector", str(memory["detector"])))
    for event in run.events:
        if isinstance(event, LLMResponseEvent) and event.finish_reason == "length":
            cells.add(("model_fault", "truncated"))
        elif isinstance(event, LLMFailedEvent):
            _add_error(cells, event.type, event.status)
        elif isinstance(event, StagnationObservedEvent):
            cells.add(("detector", "repeat"))
    for call in run.tool_calls:
        if call.sub_run is not None:
            cells.add(("sub_agent", call.sub_run.agent))
            _add_run(cells, call.sub_run)


def _add_calls(cells: set[Cell], calls: list[ToolCallRecord], raw: set[str]) -> None:
    groups: dict[int, list[ToolCallRecord]] = {}
    for call in calls:
        groups.setdefault(call.group, []).append(call)
        if call.status == "unknown_tool":
            cells.add(("model_fault", "unknown_tool"))
            continue
        cells.add(("tool", call.name))
        cells.add(("tool_outcome", f"{call.name}:{call.status}"))
        if call.status == "invalid":
            fault = "malformed_arguments" if call.id in raw else "schema_arguments"
            cells.add(("model_fault", fault))
    for plan in groups.values():
        ran = [call for call in plan if call.status != "not_run"]
        if len(plan) >= 2 and ran:
            cells.add(("plan", "parallel"))
        elif len(plan) == 1 and ran:
            cells.add(("plan", "single"))


def _add_ending(cells: set[Cell], termination: Termination, final: FinalResponse) -> None:
    """How a run or a turn ended: its termination (never ``error``: a scenario ending
    there cannot pass, so it is no behaviour to cover), the detector or budget that
    ended it, the model's error."""
    if termination != Termination.error:
        cells.add(("termination", termination.value))
    data = final.data
    if termination == Termination.stagnation:
        cells.add(("detector", data.detector or "repeat"))
    if termination == Termination.budget and data.budget:
        cells.add(("budget", data.budget))
    error = final.error
    if error is not None:
        _add_error(cells, error.type, error.status)
        for invalid in error.errors:
            if any(e.get("type") == "json_invalid" for e in invalid.errors):
                cells.add(("model_fault", "malformed_arguments"))


def _add_error(cells: set[Cell], kind: str, status: int | None) -> None:
    if kind == "timeout":
        cells.add(("model_fault", "timeout"))
    elif kind == "http_error" and status is not None:
        cells.add(("model_fault", fault_of_status(status)))


def _malformed_ids(transcript: list[Message]) -> set[str]:
    """The ids of the calls whose arguments the model sent as text that is no JSON
    object (kept as ``raw_arguments``)."""
    return {
        call.id
        for message in transcript
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls
        if call.raw_arguments is not None
    }


# -- a suite's table ----------------------------------------------------------------------


class CoverageCell(BaseModel):
    """One behaviour of results.json's ``coverage``: covered by the listed scenarios (ids
    without a repeated run's ``[k]``), or not covered (``scenarios`` empty)."""

    model_config = ConfigDict(extra="forbid")
    kind: str
    key: str
    covered: bool
    scenarios: list[str] = Field(default_factory=list)


class Coverage(BaseModel):
    """results.json's ``coverage``: how many behaviours were covered of how many."""

    model_config = ConfigDict(extra="forbid")
    covered: int = 0
    total: int = 0
    cells: list[CoverageCell] = Field(default_factory=list)

    @property
    def percent(self) -> float:
        """The share covered, in percent (100 when there is nothing to cover)."""
        return 100.0 if not self.total else 100.0 * self.covered / self.total

    def line(self) -> str:
        """``coverage: N of M behaviours (P%)``, P rounded down (100% is every one)."""
        shown = math.floor(self.percent + 1e-9)
        return f"coverage: {self.covered} of {self.total} behaviours ({shown}%)"

    def below(self, required: float) -> bool:
        """Whether the share covered is under ``required`` percent."""
        return self.covered * 100 < required * self.total

    def uncovered(self) -> list[CoverageCell]:
        """The cells no scenario covered, in order."""
        return [cell for cell in self.cells if not cell.covered]


class CoverageTable:
    """A suite's coverage as it is gathered: each cell and the scenarios covering it.

    Memory is the table itself: one set of scenario ids per cell, never a scenario's
    record. ``add`` takes one scenario run's contribution, ``update`` another table (a
    later part of a run, a shard); ``coverage()`` is the table as results.json keeps it.
    """

    def __init__(self) -> None:
        self._cells: dict[Cell, set[str]] = {}

    def add(self, scenario: str, behaviours: Behaviours) -> None:
        """Take in a scenario run's behaviours (``scenario``: its id without ``[k]``)."""
        cells = self._cells
        for cell in behaviours.reachable:
            cells.setdefault(cell, set())
        for cell in behaviours.exercised:
            cells.setdefault(cell, set()).add(scenario)

    def update(self, other: CoverageTable | Coverage) -> None:
        """Take in another table, or a results file's coverage."""
        if isinstance(other, CoverageTable):
            for cell, scenarios in other._cells.items():
                self._cells.setdefault(cell, set()).update(scenarios)
            return
        for entry in other.cells:
            self._cells.setdefault((entry.kind, entry.key), set()).update(entry.scenarios)

    def __len__(self) -> int:
        return len(self._cells)

    def coverage(self) -> Coverage:
        """The table as results.json's ``coverage``: cells in order, scenarios sorted."""
        cells = [
            CoverageCell(kind=kind, key=key, covered=bool(ids), scenarios=sorted(ids))
            for (kind, key), ids in sorted(self._cells.items(), key=lambda item: _rank(item[0]))
        ]
        covered = sum(1 for cell in cells if cell.covered)
        return Coverage(covered=covered, total=len(cells), cells=cells)


def merged(parts: Iterable[Coverage]) -> Coverage:
    """One coverage of several (shards'): the union of their cells."""
    table = CoverageTable()
    for part in parts:
        table.update(part)
    return table.coverage()


def carried(new: Coverage | None, old: Coverage | None, kept: Iterable[str]) -> Coverage | None:
    """The coverage of a baseline updated by a narrowed run: the run's (``new``), joined
    with what the baseline's scenarios it kept (``kept``: their ids, the run did not run
    them) covered in the old one (``old``), and the old cells. None when the run had none."""
    if new is None or old is None:
        return new
    keys = {_RUN.sub("", i) for i in kept}
    if not keys:
        return new
    table = CoverageTable()
    table.update(new)
    for cell in old.cells:
        scenarios = [s for s in cell.scenarios if s in keys]
        table.update(Coverage(cells=[cell.model_copy(update={"scenarios": scenarios})]))
    return table.coverage()


# A repeated run's id ends in [k]: its scenario is the id without it.
_RUN = re.compile(r"\[\d+\]$")


def no_longer_covered(
    old: Coverage, new: Coverage, not_run: Iterable[str] = ()
) -> Iterator[CoverageCell]:
    """The baseline's covered cells that ``new`` does not cover (the old cells, with the
    scenarios that covered them), except those whose every old coverer this run left
    out (``not_run``: ids a narrowed run did not run)."""
    left_out = {_RUN.sub("", i) for i in not_run}
    now = {(cell.kind, cell.key) for cell in new.cells if cell.covered}
    for cell in old.cells:
        if not cell.covered or (cell.kind, cell.key) in now:
            continue
        if cell.scenarios and all(s in left_out for s in cell.scenarios):
            continue
        yield cell
