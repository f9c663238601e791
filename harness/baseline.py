"""The baseline diff's data: what changed between a saved run (the baseline) and this one.

The results layer holds it (``Results.baseline``); ``harness.report.diff`` computes it and
the reports show it. Categories:

- ``regressions``: passed in the baseline, failed or errored now;
- ``fixed``: failed or errored in the baseline, passed now;
- ``changed``: in both runs with different behaviour (status, termination, the stuck
  detector or budget that ended the run or their settings, iterations, LLM calls,
  tool-call trajectory or final response), old and new side by side; a
  regression or fix whose behaviour changed is listed here too, with the details;
- ``added`` / ``removed``: ids only in this run / only in the baseline;
- ``not_run``: baseline ids the caller says this run did not run although they still
  exist (a run narrowed by -k, -m or paths, a skipped scenario): neither compared nor
  removed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "DIFF_VERSION",
    "BaselineDiff",
    "FieldChange",
    "ScenarioChange",
    "ScenarioRef",
    "StatusChange",
    "TrajectoryChange",
    "TrajectoryOp",
]

DIFF_VERSION = 1


class ScenarioRef(BaseModel):
    """A scenario present in only one of the two runs."""

    model_config = ConfigDict(extra="forbid")
    id: str
    name: str
    status: str
    termination: str


class StatusChange(BaseModel):
    """A scenario whose status crossed the passed line (a regression or a fix)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    name: str
    old_status: str
    new_status: str
    old_termination: str
    new_termination: str
    # The expectations that are unmet now, as ``path`` strings: the first thing to read.
    failed_expectations: list[str] = Field(default_factory=list)


class FieldChange(BaseModel):
    """One compared value, before and after."""

    model_config = ConfigDict(extra="forbid")
    old: Any = None
    new: Any = None
    # new - old, for counts.
    delta: int | float | None = None


class TrajectoryOp(BaseModel):
    """One step of the trajectory diff (difflib opcodes over plans)."""

    model_config = ConfigDict(extra="forbid")
    op: Literal["equal", "replace", "delete", "insert"]
    old: list[str] = Field(default_factory=list)
    new: list[str] = Field(default_factory=list)


class TrajectoryChange(BaseModel):
    """The tool-call trajectory before and after: one string per plan, and their diff."""

    model_config = ConfigDict(extra="forbid")
    old: list[str]
    new: list[str]
    ops: list[TrajectoryOp]


class ScenarioChange(BaseModel):
    """A scenario in both runs whose behaviour differs; unchanged fields are None."""

    model_config = ConfigDict(extra="forbid")
    id: str
    name: str
    status: FieldChange | None = None
    termination: FieldChange | None = None
    iterations: FieldChange | None = None
    llm_calls: FieldChange | None = None
    tool_calls: TrajectoryChange | None = None
    final: FieldChange | None = None
    # The stuck detector that stopped the run, or the detector settings, changed:
    # old and new are {fired: NAME | None, detectors, on_stuck}.
    detector: FieldChange | None = None
    # The budget that ended the run, or the budget settings, changed: old and new are
    # {ended: NAME | None, used, budget}.
    budget: FieldChange | None = None

    @property
    def fields(self) -> list[str]:
        """Names of the fields that changed, in a fixed order."""
        names = (
            "status",
            "termination",
            "detector",
            "budget",
            "iterations",
            "llm_calls",
            "tool_calls",
            "final",
        )
        return [n for n in names if getattr(self, n) is not None]


class BaselineDiff(BaseModel):
    """The diff between a baseline results file and the current one (results.json ``baseline``)."""

    model_config = ConfigDict(extra="forbid")
    version: int = DIFF_VERSION
    # Where the baseline came from (a path as the user gave it) and when it was run.
    source: str | None = None
    baseline_started: str | None = None
    compared: int = 0
    unchanged: int = 0
    regressions: list[StatusChange] = Field(default_factory=list)
    fixed: list[StatusChange] = Field(default_factory=list)
    changed: list[ScenarioChange] = Field(default_factory=list)
    added: list[ScenarioRef] = Field(default_factory=list)
    removed: list[ScenarioRef] = Field(default_factory=list)
    # Not a difference: only what the run left out (see diff_results' ``not_run``).
    not_run: list[ScenarioRef] = Field(default_factory=list)

    @property
    def has_regressions_or_changes(self) -> bool:
        """True when ``--fail-on-change`` should fail the run."""
        return bool(self.regressions or self.changed)

    @property
    def is_empty(self) -> bool:
        """True when nothing at all differs (not even added or removed scenarios)."""
        return not (self.regressions or self.fixed or self.changed or self.added or self.removed)

    def counts(self) -> dict[str, int]:
        """Number of entries per category."""
        return {
            "regressions": len(self.regressions),
            "fixed": len(self.fixed),
            "changed": len(self.changed),
            "added": len(self.added),
            "removed": len(self.removed),
        }
