"""The baseline diff's data: what changed between a saved run (the baseline) and this one.

The results layer holds it (``Results.baseline``); ``harness.report._diff`` computes it and
the reports show it. Categories:

- ``regressions``: passed in the baseline, failed or errored now (a ``StatusChange``),
  or repeated by rate (live, or with stochastic steps) with a pass rate that fell
  significantly (a ``PassRateChange``, also listed in ``pass_rates``);
- ``fixed``: failed or errored in the baseline, passed now;
- ``changed``: in both runs with different behaviour (status, termination, the stuck
  detector or budget that ended the run or their settings, iterations, LLM calls,
  tool-call trajectory or final response), old and new side by side; a
  regression or fix whose behaviour changed is listed here too, with the details;
- ``added`` / ``removed``: ids only in this run / only in the baseline;
- ``not_run``: baseline ids the caller says this run did not run although they still
  exist (a run narrowed by -k, -m or paths, a skipped scenario): neither compared nor
  removed;
- ``no_longer_covered``: behaviours the baseline covered that this run does not, when
  both recorded coverage (docs/coverage.md): never those only scenarios this run left out
  had covered;
- ``pass_rates``: repeated scenarios whose runs vary by chance (``--live --repeat N``,
  or stochastic steps) compared by their pass rates rather than run by run: a drop is a
  regression only when a one-sided Fisher exact test, its p-value adjusted for the
  number of scenarios compared (``rate_test.correction``: Holm by default), finds it
  significant at SIGNIFICANCE, else it is within noise.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer

__all__ = [
    "CORRECTIONS",
    "DIFF_VERSION",
    "SIGNIFICANCE",
    "BaselineDiff",
    "Correction",
    "FieldChange",
    "LostBehaviour",
    "PassRate",
    "PassRateChange",
    "RateTest",
    "ScenarioChange",
    "ScenarioRef",
    "StatusChange",
    "TrajectoryChange",
    "TrajectoryOp",
]

DIFF_VERSION = 1

# A drop of a live pass rate is a regression when a one-sided Fisher exact test gives a
# p-value (adjusted for the scenarios compared) at most this: over a suite of unchanged
# scenarios, a false regression comes 1 time in 20 at most (Holm's correction).
SIGNIFICANCE = 0.05

# How p-values are adjusted for the number of scenarios compared at once
# (--regression-correction): Holm's step-down (the chance of any false regression in
# the suite at most SIGNIFICANCE), Benjamini-Hochberg's (the expected share of false ones
# among the regressions at most SIGNIFICANCE) or none (each scenario on its own).
Correction = Literal["holm", "bh", "none"]
CORRECTIONS: tuple[Correction, ...] = ("holm", "bh", "none")


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


class PassRate(BaseModel):
    """How many runs of a repeated scenario passed."""

    model_config = ConfigDict(extra="forbid")
    runs: int
    passed: int
    pass_rate: float


class PassRateChange(BaseModel):
    """A live repeated scenario whose pass rate moved, and whether the move is a
    regression: ``verdict`` is ``regression`` (a significant drop), ``within_noise`` (a
    drop chance explains) or ``rose``."""

    model_config = ConfigDict(extra="forbid")
    id: str  # the scenario's id without [k]
    name: str
    old: PassRate
    new: PassRate
    # The one-sided Fisher exact test of a drop (None when the rate rose): how often a
    # drop at least this large comes by chance when nothing changed.
    p_value: float | None = None
    # The p-value adjusted for the scenarios compared at once (RateTest.correction): what
    # the verdict reads. Absent when nothing is adjusted (none, or one scenario).
    adjusted_p_value: float | None = Field(default=None, exclude_if=lambda v: v is None)
    verdict: Literal["regression", "within_noise", "rose"]


class RateTest(BaseModel):
    """How pass rates were compared: the test, the correction for the number of
    scenarios compared at once, how many were, and the significance level."""

    model_config = ConfigDict(extra="forbid")
    test: Literal["fisher_exact_one_sided"] = "fisher_exact_one_sided"
    correction: Correction = "holm"
    compared: int = 0
    significance: float = SIGNIFICANCE


class LostBehaviour(BaseModel):
    """A behaviour the baseline covered and this run does not (docs/coverage.md), with
    the baseline's scenarios that covered it."""

    model_config = ConfigDict(extra="forbid")
    kind: str
    key: str
    scenarios: list[str] = Field(default_factory=list)


class BaselineDiff(BaseModel):
    """The diff between a baseline results file and the current one (results.json ``baseline``)."""

    model_config = ConfigDict(extra="forbid")
    version: int = DIFF_VERSION
    # Where the baseline came from (a path as the user gave it) and when it was run.
    source: str | None = None
    baseline_started: str | None = None
    compared: int = 0
    unchanged: int = 0
    # Run by run (StatusChange), or a pass rate that fell significantly (PassRateChange).
    regressions: list[StatusChange | PassRateChange] = Field(default_factory=list)
    fixed: list[StatusChange] = Field(default_factory=list)
    changed: list[ScenarioChange] = Field(default_factory=list)
    added: list[ScenarioRef] = Field(default_factory=list)
    removed: list[ScenarioRef] = Field(default_factory=list)
    # Not a difference: only what the run left out (see diff_results' ``not_run``).
    not_run: list[ScenarioRef] = Field(default_factory=list)
    # Scenarios compared by pass rate whose rate moved (absent from the JSON when none),
    # and how they were compared (absent when none was compared by rate).
    pass_rates: list[PassRateChange] = Field(default_factory=list)
    rate_test: RateTest | None = Field(default=None, exclude_if=lambda v: v is None)
    # Behaviours covered in the baseline and no longer (absent from the JSON when none).
    no_longer_covered: list[LostBehaviour] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _omit_no_pass_rates(self, handler: Any) -> Any:
        """No ``pass_rates`` key when no live pass rate moved, no ``no_longer_covered``
        when no behaviour was lost (diffs read as before)."""
        data = handler(self)
        if isinstance(data, dict):
            if not self.pass_rates:
                data.pop("pass_rates", None)
            if not self.no_longer_covered:
                data.pop("no_longer_covered", None)
        return data

    @property
    def status_regressions(self) -> list[StatusChange]:
        """The run-by-run regressions: passed in the baseline, not now."""
        return [r for r in self.regressions if isinstance(r, StatusChange)]

    @property
    def rate_regressions(self) -> list[PassRateChange]:
        """Pass rates that fell significantly (regressions, listed in both places)."""
        return [r for r in self.regressions if isinstance(r, PassRateChange)]

    @property
    def within_noise(self) -> list[PassRateChange]:
        """Live pass rates that fell by no more than chance explains: not regressions."""
        return [p for p in self.pass_rates if p.verdict == "within_noise"]

    @property
    def has_regressions_or_changes(self) -> bool:
        """True when ``--fail-on-change`` should fail the run."""
        return bool(self.regressions or self.changed)

    @property
    def is_empty(self) -> bool:
        """True when nothing at all differs (not even added or removed scenarios)."""
        return not (
            self.regressions
            or self.fixed
            or self.changed
            or self.added
            or self.removed
            or self.pass_rates
            or self.no_longer_covered
        )

    def counts(self) -> dict[str, int]:
        """Number of entries per category (a significant drop of a live pass rate is a
        regression)."""
        return {
            "regressions": len(self.regressions),
            "fixed": len(self.fixed),
            "changed": len(self.changed),
            "added": len(self.added),
            "removed": len(self.removed),
        }
