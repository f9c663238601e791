"""The models of a results.json scenario entry and of the file's summary (ScenarioResult,
Summary, ...). Users import them from ``harness._results``, which reads and writes the
file (docs/reports.md).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Literal, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from harness._actions import FinalResponse, RunData, RunResult, Termination
from harness._config import AgentConfig
from harness._messages import Message
from harness._repeats import Repeats

__all__ = [
    "SCHEMA_VERSION",
    "Counted",
    "CountedEntry",
    "ExpectationResult",
    "ScenarioId",
    "ScenarioResult",
    "Skipped",
    "Status",
    "Summary",
    "TurnResult",
    "combination_label",
]

# The results.json format this harness writes. It reads every version from 1 up to this
# one; bump it when a change would make an older harness misread a file.
SCHEMA_VERSION = 2
# Version 1 kept these agent settings flat in each scenario entry; 2 keeps the whole
# AgentConfig under ``agent``. Version 1 files are read as version 2.
_V1_SETTINGS = frozenset({"stagnation_window", "planner", "parallel_tools"})

Status = Literal["passed", "failed", "error"]


class ScenarioId(NamedTuple):
    """A scenario's id, ``path::name``: the file's POSIX path relative to the project
    root (``<python>`` for a scenario built in Python) and the scenario's name.

    Its text is what results.json, the baseline diff and pytest's node ids hold.
    """

    file: str
    name: str

    def __str__(self) -> str:
        return f"{self.file}::{self.name}"

    @classmethod
    def parse(cls, text: str) -> ScenarioId:
        """Split an id's text (a name may itself hold ``::``; a path cannot)."""
        file, _, name = text.partition("::")
        return cls(file, name)

    @staticmethod
    def file_of(text: str) -> str:
        """The path part of an id's text, or the whole text when it holds no ``::``
        (a command-line argument like ``scenarios/a.scenario.yaml::name``)."""
        return text.partition("::")[0]


def combination_label(combination: dict[str, Any]) -> str:
    """A matrix combination as ids show it: ``model=gpt-4o-mini,planner=react`` (keys in
    the matrix's order; values other than text as compact JSON)."""
    return ",".join(
        f"{key}={value if isinstance(value, str) else _compact(value)}"
        for key, value in combination.items()
    )


def _compact(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class ExpectationResult(BaseModel):
    """One checked expectation: its dotted path under ``expect``, what was wanted and got."""

    model_config = ConfigDict(extra="forbid")
    path: str
    expected: Any = None
    actual: Any = None
    ok: bool


class TurnResult(BaseModel):
    """One turn of a ``turns:`` scenario: the user's message and how that run of the loop went.

    ``first_iteration`` / ``last_iteration`` place the turn in the scenario's whole run,
    whose iterations, LLM calls, plans and simulated clock count on across turns.
    """

    model_config = ConfigDict(extra="forbid")
    turn: int
    user: str | None = None
    status: Status
    termination: Termination
    iterations: int = 0
    llm_calls: int = 0
    tool_calls: int = 0
    first_iteration: int = 1
    last_iteration: int = 0
    final: FinalResponse = Field(default_factory=FinalResponse)
    expectations: list[ExpectationResult] = Field(default_factory=list)


class _Identity(BaseModel):
    """Which scenario a result is of, and how it came out (first in its JSON entry)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    name: str
    file: str
    description: str | None = None
    tags: list[str] = Field(default_factory=list)
    status: Status


class ScenarioResult(RunData, _Identity):
    """One scenario's outcome: the scenario entry of results.json (flat).

    Its identity, the run's data (RunData's fields, defined once in harness._actions), the
    checked expectations, the transcript, and the agent settings the run used.
    """

    model_config = ConfigDict(extra="forbid")
    expectations: list[ExpectationResult] = Field(default_factory=list)
    transcript: list[Message] = Field(default_factory=list)
    # None when the scenario never got as far as a run (it crashed before).
    agent: AgentConfig | None = None
    # Absent from the JSON when unset (exclude_if), so an entry that ran once, outside a
    # matrix and cases, in one turn reads as before they existed. A `turns:` run's turns.
    turns: list[TurnResult] = Field(default_factory=list, exclude_if=lambda value: not value)
    # The matrix combination ({model: ..., planner: ...}) and the case id this entry ran.
    matrix: dict[str, Any] | None = Field(default=None, exclude_if=lambda value: value is None)
    case: str | None = Field(default=None, exclude_if=lambda value: value is None)
    # Which run of a repeated scenario this is (1-based; its id ends in ``[run]``) and how
    # all its runs came out.
    run: int | None = Field(default=None, ge=1, exclude_if=lambda value: value is None)
    repeats: Repeats | None = Field(default=None, exclude_if=lambda value: value is None)
    # The seed (--seed) its stochastic steps were drawn with; absent without them.
    seed: int | None = Field(default=None, exclude_if=lambda value: value is None)

    @model_validator(mode="before")
    @classmethod
    def _from_version_1(cls, data: Any) -> Any:
        """results.json version 1 kept three settings flat; read them into ``agent``."""
        if not isinstance(data, dict) or not _V1_SETTINGS & data.keys():
            return data
        data = dict(data)
        flat = {key: data.pop(key) for key in _V1_SETTINGS if key in data}
        if flat.get("planner") is None:
            return data  # a scenario that crashed before its run: no settings were kept
        settings = {k: v for k, v in flat.items() if v is not None}
        error = (data.get("final") or {}).get("error") or {}
        if isinstance(error.get("max_iterations"), int):
            settings["max_iterations"] = error["max_iterations"]
        data.setdefault("agent", settings)
        return data

    @classmethod
    def from_run(
        cls,
        run: RunResult,
        *,
        id: str,
        name: str,
        file: str,
        expectations: list[ExpectationResult],
        status: Status,
        **extra: Any,
    ) -> ScenarioResult:
        """The run's data (not a copy: RunData's fields are shared) with the scenario's
        identity and checked expectations; ``extra`` sets the other fields."""
        data = {field: getattr(run, field) for field in RunData.model_fields}
        return cls(
            **data,
            id=id,
            name=name,
            file=file,
            status=status,
            expectations=expectations,
            transcript=run.conversation.messages,
            **extra,
        )

    @property
    def scenario_key(self) -> str:
        """The id of the scenario this result is a run of (the id without ``[run]``)."""
        return self.id if self.run is None else self.id.removesuffix(f"[{self.run}]")

    @property
    def failed_expectations(self) -> list[ExpectationResult]:
        """The expectations that were not met."""
        return [e for e in self.expectations if not e.ok]


class Counted(Protocol):
    """What Summary counts of a scenario: a ScenarioResult, or only these fields of one."""

    @property
    def status(self) -> Status: ...
    @property
    def termination(self) -> Termination: ...
    @property
    def sim_time(self) -> float: ...
    @property
    def repeats(self) -> Repeats | None: ...
    @property
    def scenario_key(self) -> str: ...


class CountedEntry(BaseModel):
    """A scenario entry read into the fields the summaries count only (much faster than
    a whole ScenarioResult, for results on disk: ``Results.counted``)."""

    model_config = ConfigDict(extra="ignore")
    id: str
    status: Status
    termination: Termination
    sim_time: float = 0.0
    wall_time: float = 0.0
    run: int | None = None
    repeats: Repeats | None = None

    @property
    def scenario_key(self) -> str:
        """As ScenarioResult's."""
        return self.id if self.run is None else self.id.removesuffix(f"[{self.run}]")


class Skipped(BaseModel):
    """A scenario that did not run because it was skipped, and why."""

    model_config = ConfigDict(extra="forbid")
    id: str
    reason: str


class Summary(BaseModel):
    """Counts over all scenarios of a results file."""

    model_config = ConfigDict(extra="forbid")
    total: int = 0
    by_status: dict[str, int] = Field(default_factory=dict)
    by_termination: dict[str, int] = Field(default_factory=dict)
    sim_time: float = 0.0
    # Repeated scenarios whose runs disagree (ids without ``[run]``); absent when none.
    flaky: list[str] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _omit_no_flaky(self, handler: Any) -> Any:
        """No ``flaky`` key when no scenario is flaky (files read as before repeats)."""
        data = handler(self)
        if isinstance(data, dict) and not self.flaky:
            data.pop("flaky", None)
        return data

    @classmethod
    def of(cls, scenarios: Iterable[Counted]) -> Summary:
        """Summarize scenarios (keys sorted so the JSON is stable), in one pass."""
        flaky: set[str] = set()
        by_status: dict[str, int] = {}
        by_termination: dict[str, int] = {}
        total, sim_time = 0, 0.0
        for s in scenarios:
            total += 1
            sim_time += s.sim_time
            by_status[s.status] = by_status.get(s.status, 0) + 1
            by_termination[s.termination.value] = by_termination.get(s.termination.value, 0) + 1
            if s.repeats is not None and s.repeats.flaky:
                flaky.add(s.scenario_key)
        return cls(
            total=total,
            by_status=dict(sorted(by_status.items())),
            by_termination=dict(sorted(by_termination.items())),
            sim_time=round(sim_time, 9),
            flaky=sorted(flaky),
        )
