"""What an exploration found, as results.json's ``explore`` section keeps it
(docs/explore.md#the-results): per scenario its sites, the schedules tried, held and
broken, the grid of depth-1 cells, and the findings with their files."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Cell",
    "Exploration",
    "ExploredScenario",
    "Finding",
    "KindCount",
    "Schedule",
    "ScheduleCount",
]

Outcome = Literal["held", "broken", "crashed"]


class Schedule(BaseModel):
    """One schedule tried: its faults (``[site label, kind]`` pairs, in order) and what
    came of it: ``held``, ``broken`` (invariants it broke), or ``crashed`` (it could not be
    judged: it did not load, or the script cannot answer the run the fault made)."""

    model_config = ConfigDict(extra="forbid")
    faults: list[tuple[str, str]]
    # Its place among the schedules of its depth (a shard's are merged back in this order).
    order: int = 0
    outcome: Outcome
    broken: list[str] = Field(default_factory=list)  # the invariants it broke
    termination: str | None = None
    cause: str | None = None  # the error's type and status, or where a target raised
    divergence: str | None = None  # where its run first parted from the run as written
    message: str | None = None  # why it crashed
    file: str | None = None  # the scenario written for it (a broken schedule)
    reproduced: bool = False  # the file failed the same way on every rerun
    reruns: int = 0
    shrunk: bool = False


class Cell(BaseModel):
    """One cell of the site x fault kind grid (depth 1): its outcome and finding."""

    model_config = ConfigDict(extra="forbid")
    site: str
    kind: str
    outcome: Outcome
    broken: list[str] = Field(default_factory=list)
    finding: int | None = None  # the finding's number (1-based) of a broken cell
    file: str | None = None


class Finding(BaseModel):
    """Failures with the same broken invariants, termination and first divergence."""

    model_config = ConfigDict(extra="forbid")
    number: int
    broken: list[str]
    termination: str
    divergence: str  # where the run first parted from the run as written
    cause: str | None = None  # the error's type and status, or where a target raised
    schedules: int
    files: list[str]
    # The written files that failed the same way on every rerun, and the reruns each.
    reproduced: int = 0
    reruns: int = 0
    shrunk: bool = False


class ScheduleCount(BaseModel):
    """How many schedules were tried, and how they came out."""

    model_config = ConfigDict(extra="forbid")
    tried: int = 0
    held: int = 0
    broken: int = 0
    crashed: int = 0

    def add(self, outcome: str) -> None:
        """Count one schedule's outcome."""
        self.tried += 1
        setattr(self, outcome, getattr(self, outcome) + 1)


class KindCount(ScheduleCount):
    """A fault kind's schedules across the suite."""

    kind: str


class ExploredScenario(BaseModel):
    """One scenario's exploration."""

    model_config = ConfigDict(extra="forbid")
    id: str
    file: str
    sites: list[str] = Field(default_factory=list)
    invariants: dict[str, object] = Field(default_factory=dict)
    schedules: ScheduleCount = Field(default_factory=ScheduleCount)
    cells: list[Cell] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    tried: list[Schedule] = Field(default_factory=list)
    skipped: str | None = None  # why it was not explored (a matrix, a missing target)


class Exploration(BaseModel):
    """results.json's ``explore`` section."""

    model_config = ConfigDict(extra="forbid")
    version: int = 1
    depth: int
    faults: list[str]
    sites: list[str]
    seed: int | str
    max_variants: int | None = None
    shard: str | None = None
    scenarios: list[ExploredScenario] = Field(default_factory=list)
    kinds: list[KindCount] = Field(default_factory=list)
    schedules: ScheduleCount = Field(default_factory=ScheduleCount)

    @property
    def robustness(self) -> float:
        """Schedules held / tried (1.0 when none were tried)."""
        tried = self.schedules.tried
        return self.schedules.held / tried if tried else 1.0

    @property
    def findings(self) -> int:
        """The findings of every scenario."""
        return sum(len(s.findings) for s in self.scenarios)
