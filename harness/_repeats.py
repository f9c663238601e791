"""How the runs of a repeated scenario came out: the pass rate with its 95% Wilson
interval, the verdict against a ``min_pass_rate``, and the first step where the runs'
trajectories part (docs/running.md#repeats).

Every run's entry of results.json carries the same ``Repeats``; ``count_repeats`` makes
it from the runs, keeping what only the runs know (``min_pass_rate``, ``live``) from the
entries they came with.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from harness._canonical import canonical_json
from harness._sequential import Decision, SequentialPlan, decide, needed
from harness.events import LLMFailedEvent, LLMRequestEvent, LLMResponseEvent

if TYPE_CHECKING:
    from harness._results import ScenarioResult

__all__ = [
    "CONFIDENCE",
    "Divergence",
    "Repeats",
    "SequentialRepeats",
    "Variant",
    "count_repeats",
    "first_divergence",
    "run_steps",
    "wilson_interval",
]

# The confidence of the interval around a pass rate.
CONFIDENCE = 0.95

# A variant's text is cut here: it names a step, it does not hold the answer.
_VARIANT_LIMIT = 160


def wilson_interval(passed: int, runs: int, confidence: float = CONFIDENCE) -> list[float]:
    """The Wilson score interval ``[low, high]`` of a pass rate (``passed`` of ``runs``).

    The interval keeps inside 0..1 and stays honest for few runs and rates near 0 or 1,
    where the normal approximation says 10/10 runs is certainly 100%. It is the closed
    formula, the same numbers as ``scipy.stats.binomtest(passed, runs)
    .proportion_ci(method="wilson")`` (a test checks), without importing scipy.stats
    (about a second) into every run of a repeated scenario.
    """
    if runs <= 0:
        return [0.0, 1.0]
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    rate = passed / runs
    scale = 1 + z * z / runs
    center = (rate + z * z / (2 * runs)) / scale
    half = z / scale * math.sqrt(rate * (1 - rate) / runs + z * z / (4 * runs * runs))
    return [round(max(0.0, center - half), 6), round(min(1.0, center + half), 6)]


class Variant(BaseModel):
    """One way the runs took a step: what they did there, and which runs did it."""

    model_config = ConfigDict(extra="forbid")
    step: str
    count: int
    runs: list[int]


class Divergence(BaseModel):
    """Where the runs' trajectories first part: the step (1-based), what it is (``model
    call 2``, ``tool call 1``, ``the ending``, ``the answer``) and the variants there,
    the most taken first."""

    model_config = ConfigDict(extra="forbid")
    step: int
    at: str
    variants: list[Variant]


class SequentialRepeats(SequentialPlan):
    """How a scenario's runs were decided sequentially (``decide: sequential``): the
    plan, and its ``decision`` (None while undecided: fewer runs ran than it needed, as
    when -k left some out)."""

    decision: Decision | None = None


class Repeats(BaseModel):
    """How the runs of a repeated scenario came out (every run's entry carries it)."""

    model_config = ConfigDict(extra="forbid")
    runs: int = Field(ge=1)
    passed: int = Field(ge=0)
    pass_rate: float = Field(ge=0, le=1)
    # Every run passed: the pass^k of agent benchmarks.
    pass_all: bool
    # The pass rate's 95% Wilson interval, [low, high].
    interval: list[float] = Field(default_factory=list)
    # The share of runs that must pass (`repeat: {min_pass_rate: R}`, --min-pass-rate);
    # None: every run must.
    min_pass_rate: float | None = Field(default=None, ge=0, le=1)
    # The scenario's verdict over its runs: at least min_pass_rate of them passed, or
    # (without one) every run did.
    passes: bool = False
    # The runs talked to a live model (--live): the baseline compares their pass rate.
    live: bool = False
    # The scenario has stochastic steps (one_of): its runs differ as a live model's do,
    # and the baseline compares their pass rate too.
    stochastic: bool = False
    # Where the runs' trajectories first part (None: they all took the same steps).
    divergence: Divergence | None = None
    # Sequential repeats (decide: sequential): the plan and when and why they stopped.
    sequential: SequentialRepeats | None = None

    @model_validator(mode="before")
    @classmethod
    def _complete(cls, data: Any) -> Any:
        """Entries written before intervals and verdicts existed read with them."""
        if not isinstance(data, dict) or not {"runs", "passed"} <= data.keys():
            return data
        data = dict(data)
        runs, passed = data["runs"], data["passed"]
        if isinstance(runs, int) and isinstance(passed, int):
            data.setdefault("interval", wilson_interval(passed, runs))
            if "passes" not in data:
                minimum = data.get("min_pass_rate")
                data["passes"] = passed == runs if minimum is None else passed >= minimum * runs
        return data

    @model_serializer(mode="wrap")
    def _omit_absent(self, handler: Any) -> Any:
        """No ``min_pass_rate``, ``live``, ``stochastic`` or ``divergence`` key when there
        is none."""
        data = handler(self)
        if isinstance(data, dict):
            for key in ("min_pass_rate", "divergence", "sequential"):
                if getattr(self, key) is None:
                    data.pop(key, None)
            for flag in ("live", "stochastic"):
                if not getattr(self, flag):
                    data.pop(flag, None)
        return data

    @property
    def by_rate(self) -> bool:
        """The runs vary by chance (live, or stochastic steps), or stopped when their
        verdict was clear (sequential): a baseline compares their pass rate, never run
        by run."""
        return self.live or self.stochastic or self.sequential is not None

    @property
    def flaky(self) -> bool:
        """The runs disagree: some passed and some did not."""
        return 0 < self.passed < self.runs

    @classmethod
    def of(
        cls,
        passed: int,
        runs: int,
        *,
        min_pass_rate: float | None = None,
        live: bool = False,
        stochastic: bool = False,
        sequential: SequentialPlan | None = None,
    ) -> Repeats:
        """The repeats of ``passed`` runs out of ``runs``, judged by ``min_pass_rate``
        (``sequential``: the plan they are decided by; count_repeats decides)."""
        return cls(
            runs=runs,
            passed=passed,
            pass_rate=round(passed / runs, 6),
            pass_all=passed == runs,
            interval=wilson_interval(passed, runs),
            min_pass_rate=min_pass_rate,
            # Compared as counts: 0.7 * 10 is 7.000000000000001 in floating point.
            passes=passed == runs
            if min_pass_rate is None
            else passed >= _needed(min_pass_rate, runs),
            live=live,
            stochastic=stochastic,
            sequential=None if sequential is None else SequentialRepeats(**sequential.model_dump()),
        )


_needed = needed


def count_repeats(scenarios: list[ScenarioResult]) -> None:
    """Set ``repeats`` on every run of a repeated scenario, counted over the runs given.

    ``min_pass_rate`` and ``live`` come from the runs' own entries (the pytest item set
    them, or a shard's results file kept them).
    """
    groups: dict[str, list[ScenarioResult]] = {}
    for s in scenarios:
        if s.run is not None:
            groups.setdefault(s.scenario_key, []).append(s)
    for runs in groups.values():
        given = [s.repeats for s in runs if s.repeats is not None]
        minimum = next((r.min_pass_rate for r in given if r.min_pass_rate is not None), None)
        repeats = Repeats.of(
            sum(1 for s in runs if s.status == "passed"),
            len(runs),
            min_pass_rate=minimum,
            live=any(r.live for r in given),
            stochastic=any(r.stochastic for r in given),
        )
        plan = next((r.sequential for r in given if r.sequential is not None), None)
        if plan is not None:
            _decide(repeats, plan, runs)
        repeats.divergence = first_divergence(runs)
        for s in runs:
            s.repeats = repeats


def _decide(repeats: Repeats, plan: SequentialPlan, runs: list[ScenarioResult]) -> None:
    """A sequential scenario's verdict: decided over its runs in order, from run 1 up to
    the first one missing (a run -k left out, say), as the session decided it."""
    outcomes: list[bool] = []
    for number, run in enumerate(sorted(runs, key=lambda s: s.run or 0), 1):
        if run.run != number:
            break
        outcomes.append(run.status == "passed")
    settings = plan.model_dump(exclude={"decision"})
    decision = decide(SequentialPlan(**settings), outcomes)
    repeats.sequential = SequentialRepeats(**settings, decision=decision)
    if decision is not None:
        repeats.passes = decision.verdict == "pass"


# -- the first divergence --------------------------------------------------------------------


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _VARIANT_LIMIT else text[: _VARIANT_LIMIT - 1] + "…"


def _model_calls(run: ScenarioResult) -> dict[int, tuple[int, str]]:
    """Each model call: (its iteration, what came back)."""
    calls: dict[int, tuple[int, str]] = {}
    for event in run.events:
        if isinstance(event, LLMRequestEvent):
            calls.setdefault(event.call, (event.iteration, "failed"))
        elif isinstance(event, LLMResponseEvent):
            asked = ", ".join(event.tool_calls)
            reply = f"asked for {asked}" if asked else "answered"
            if event.finish_reason == "length":
                reply += " (cut at the length limit)"
            calls[event.call] = (event.iteration, reply)
        elif isinstance(event, LLMFailedEvent):
            why = event.message or event.type or "error"
            status = f"HTTP {event.status}: " if event.status else ""
            calls[event.call] = (event.iteration, f"failed ({status}{why})")
    error = run.final.error
    if calls and error is not None and run.termination.value == "llm_error":
        last = max(calls)
        iteration, reply = calls[last]
        if reply == "failed":
            status = f"HTTP {error.status}: " if error.status else ""
            calls[last] = (iteration, f"failed ({status}{error.message or error.type})")
    return calls


def run_steps(run: ScenarioResult) -> list[tuple[str, str]]:
    """A run's trajectory as steps ``(where, what)``: each model call and what came back,
    each tool call with its arguments (and its status when it did not run ``ok``), in the
    order they happened, then how the run ended."""
    steps: list[tuple[int, int, int, str, str]] = []
    for call, (iteration, reply) in _model_calls(run).items():
        steps.append((iteration, 0, call, f"model call {call}", reply))
    for number, record in enumerate(run.tool_calls, 1):
        what = f"{record.name} {canonical_json(record.arguments)}"
        if record.status != "ok":
            what += f" [{record.status}]"
        # A plan comes after the model call of its iteration (the react planner asks and
        # runs the tools in one iteration); calls keep the model's order.
        steps.append((record.iteration, 1, number, f"tool call {number}", what))
    steps.sort(key=lambda step: step[:3])
    return [(where, what) for *_, where, what in steps] + [("the ending", run.termination.value)]


def _outcome_steps(run: ScenarioResult) -> list[tuple[str, str]]:
    """What tells runs with the same trajectory apart: the answer, then the verdict."""
    unmet = [e.path for e in run.failed_expectations]
    return [
        ("the answer", repr(run.final.content) if run.final.content is not None else "none"),
        ("the expectations", f"unmet: {', '.join(unmet)}" if unmet else "all met"),
    ]


def first_divergence(runs: list[ScenarioResult]) -> Divergence | None:
    """Where the runs' trajectories first part; None when they took the same steps
    (and, when their statuses differ too, gave the same answer and verdicts)."""
    if len(runs) < 2:
        return None
    trails = {run.run or i: run_steps(run) for i, run in enumerate(runs, 1)}
    if len({tuple(t) for t in trails.values()}) == 1:
        if len({run.status for run in runs}) == 1:
            return None
        trails = {
            run.run or i: trails[run.run or i] + _outcome_steps(run)
            for i, run in enumerate(runs, 1)
        }
    for index in range(max(len(t) for t in trails.values())):
        taken: dict[str, list[int]] = {}
        for number, trail in trails.items():
            where, what = trail[index] if index < len(trail) else ("", "")
            text = f"{where}: {what}" if where else "nothing: the run had ended"
            taken.setdefault(_cut(text), []).append(number)
        if len(taken) > 1:
            variants = [
                Variant(step=text, count=len(r), runs=sorted(r)) for text, r in taken.items()
            ]
            variants.sort(key=lambda v: (-v.count, v.runs[0]))
            places = {trail[index][0] for trail in trails.values() if index < len(trail)}
            at = places.pop() if len(places) == 1 else " / ".join(sorted(places))
            return Divergence(step=index + 1, at=at, variants=variants)
    return None
