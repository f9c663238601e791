"""Sequential repeats: a scenario's runs stop once its verdict is clear at the error rates
asked for (``repeat: {max_runs: N, min_pass_rate: R, decide: sequential}``;
docs/gate.md#sequential-repeats).

The test is Wald's sequential probability ratio test (A. Wald, "Sequential Tests of
Statistical Hypotheses", Annals of Mathematical Statistics 16(2), 1945), truncated at
``max_runs``. It weighs two pass rates a ``margin`` either side of ``min_pass_rate``:

- ``p_pass = R + margin``: an agent this good should pass; a test that fails it does so
  with probability at most ``false_fail``;
- ``p_fail = R - margin``: an agent this bad should fail; a test that passes it does so
  with probability at most ``false_pass``.

After each run the log-likelihood ratio of the outcomes so far (p_pass over p_fail) moves
up by ``log(p_pass / p_fail)`` for a pass and down by ``log((1 - p_pass) / (1 - p_fail))``
for a failure; the scenario passes once it reaches ``log((1 - false_fail) / false_pass)``
and fails once it falls to ``log(false_fail / (1 - false_pass))``. Between the two rates
(the indifference zone) either verdict is acceptable. A scenario still undecided after
``max_runs`` runs is judged as a fixed count would be: by its pass rate against R.

Wald's bounds hold the error rates at about ``false_pass`` and ``false_fail`` (a little
under, since the ratio overshoots a bound); the expected number of runs is far smaller
than a fixed count's at the same error rates when the true pass rate is away from R
(``python -m benchmarks gate_calibration`` measures both; docs/performance.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["Decision", "Progress", "SequentialPlan", "decide", "needed"]


def needed(min_pass_rate: float, runs: int) -> int:
    """How many of ``runs`` must pass to reach ``min_pass_rate`` (rounded up; compared
    as counts: 0.7 * 10 is 7.000000000000001 in floating point)."""
    return math.ceil(round(min_pass_rate * runs, 9))


class SequentialPlan(BaseModel):
    """How a scenario's repeats are decided sequentially: the cap, the pass rate, the
    error rates and the margin around the rate that the error rates are stated at."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_runs: int = Field(ge=1)
    min_pass_rate: float = Field(default=1.0, ge=0, le=1)
    false_pass: float = Field(default=0.05, gt=0, lt=0.5)
    false_fail: float = Field(default=0.05, gt=0, lt=0.5)
    margin: float = Field(default=0.1, gt=0, lt=1)

    @model_validator(mode="after")
    def _apart(self) -> SequentialPlan:
        if self.p_pass <= self.p_fail:
            raise ValueError("margin too small to tell two pass rates apart")
        return self

    @property
    def p_pass(self) -> float:
        """The pass rate that must pass (but with probability ``false_fail``)."""
        return min(1.0, self.min_pass_rate + self.margin)

    @property
    def p_fail(self) -> float:
        """The pass rate that must fail (but with probability ``false_pass``)."""
        return max(0.0, self.min_pass_rate - self.margin)

    @property
    def upper(self) -> float:
        """The log-likelihood ratio at which the scenario passes."""
        return math.log((1 - self.false_fail) / self.false_pass)

    @property
    def lower(self) -> float:
        """The log-likelihood ratio at which the scenario fails."""
        return math.log(self.false_fail / (1 - self.false_pass))

    def step(self, passed: bool) -> float:
        """How one run's outcome moves the log-likelihood ratio (infinite when the
        outcome is impossible under one rate: a failure when p_pass is 1)."""
        if passed:
            return _log_ratio(self.p_pass, self.p_fail)
        return _log_ratio(1 - self.p_pass, 1 - self.p_fail)


def _log_ratio(a: float, b: float) -> float:
    if a == 0:
        return -math.inf
    if b == 0:
        return math.inf
    return math.log(a / b)


class Decision(BaseModel):
    """A sequential verdict: ``pass`` or ``fail``, after how many runs, and why:
    ``evidence`` (the ratio reached a bound) or ``max_runs`` (the cap came first: judged
    by the pass rate); ``llr``, the log-likelihood ratio then (None when infinite)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    verdict: Literal["pass", "fail"]
    after: int
    by: Literal["evidence", "max_runs"]
    llr: float | None = None


class Progress:
    """A sequential test fed one outcome at a time (what a session does as runs end)."""

    def __init__(self, plan: SequentialPlan) -> None:
        self.plan = plan
        self.llr = 0.0
        self.runs = self.passed = 0
        self.decision: Decision | None = None

    def add(self, passed: bool) -> Decision | None:
        """Take the next run's outcome (True: passed); the decision once there is one."""
        if self.decision is not None:
            return self.decision
        plan = self.plan
        self.runs += 1
        self.passed += passed
        self.llr += plan.step(passed)
        shown = round(self.llr, 6) if math.isfinite(self.llr) else None
        if self.llr >= plan.upper:
            self.decision = Decision(verdict="pass", after=self.runs, by="evidence", llr=shown)
        elif self.llr <= plan.lower:
            self.decision = Decision(verdict="fail", after=self.runs, by="evidence", llr=shown)
        elif self.runs >= plan.max_runs:
            enough = self.passed >= needed(plan.min_pass_rate, self.runs)
            verdict: Literal["pass", "fail"] = "pass" if enough else "fail"
            self.decision = Decision(verdict=verdict, after=self.runs, by="max_runs", llr=shown)
        return self.decision


def decide(plan: SequentialPlan, outcomes: Iterable[bool]) -> Decision | None:
    """The verdict of the runs' outcomes in run order (True: passed), at the first run
    that decides it; None while undecided (fewer than ``max_runs`` runs, no bound)."""
    progress = Progress(plan)
    for outcome in outcomes:
        decision = progress.add(outcome)
        if decision is not None:
            return decision
    return None
