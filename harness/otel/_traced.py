"""What a trace is made from: one run of a scenario, as its results keep it, and the few
facts of the scenario that results do not keep (which model and provider answered, which
tools are remote agents).

The trace is built from the typed run record (``RunFields``: events, tool-call records
with their simulated times, sub-runs) and never from a live run: the same record makes
the same spans, in one process or after ``-n N`` workers sent their results over.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness._actions import RunFields
from harness._errors import HarnessError
from harness._messages import Message

__all__ = ["FIXED_EPOCH_NS", "Clock", "Evaluation", "OtelError", "RunFacts", "TracedRun"]

# 2025-01-01T00:00:00Z in unix nanoseconds: where the simulated clock of a run written to a
# file starts, so that two runs of the same suite write the same bytes.
FIXED_EPOCH_NS = 1_735_689_600_000_000_000


class OtelError(HarnessError):
    """Traces that could not be written or sent (the message says why and what to do)."""


@dataclass(frozen=True)
class Evaluation:
    """One checked expectation (a ``gen_ai.evaluation.result`` event)."""

    name: str  # its dotted path under ``expect``
    ok: bool
    expected: Any = None
    actual: Any = None


@dataclass(frozen=True)
class RunFacts:
    """What the scenario says about a run that its result does not keep.

    ``provider``: who answered the model calls (``harness`` for a script, whatever the
    wire; else the scenario's ``llm.provider``); ``model``: the model the scenario names,
    if any; ``remote``: the tools that are remote agents, with the agent's address (a URL,
    or the scenario file harness serves). ``tools``: the tools' Chat Completions
    definitions, in the order offered (with message contents only).
    """

    provider: str = "harness"
    model: str | None = None
    remote: dict[str, str] = field(default_factory=dict)
    tools: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class TracedRun:
    """One scenario run to trace: its identity and outcome, its record, its conversation,
    its checked expectations and the scenario's facts."""

    id: str
    name: str
    file: str
    status: str  # passed | failed | error
    run: RunFields
    transcript: list[Message]
    evaluations: list[Evaluation] = field(default_factory=list)
    facts: RunFacts = field(default_factory=RunFacts)
    repeat: int | None = None  # which run of a repeated scenario (1-based)
    matrix: str | None = None  # the matrix combination's label


@dataclass(frozen=True)
class Clock:
    """Where a trace's times start and what its ids are made from.

    Span times are ``epoch_ns`` plus the run's simulated clock; ids are hashes of
    ``seed`` and the scenario id. A file uses the fixed epoch and no seed (reruns are
    byte-identical); a collector gets the session's start as both, so that each session's
    runs are traces of their own among recent traces.
    """

    epoch_ns: int = FIXED_EPOCH_NS
    seed: str = ""
