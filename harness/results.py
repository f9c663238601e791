"""The results of scenario runs: one ScenarioResult per scenario, and results.json.

This is the data between the runner and the reports: scenario -> run -> result ->
report. Everything outside ``meta``, ``wall_time`` and ``wall_clock`` is identical across runs of
the same inputs.
"""

from __future__ import annotations

import contextlib
import functools
import json
import platform
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_serializer,
    model_validator,
)

from harness.actions import FinalResponse, RunData, RunResult, Termination
from harness.baseline import BaselineDiff
from harness.config import AgentConfig
from harness.coverage import Coverage
from harness.errors import HarnessError
from harness.files import Unreadable, atomic_write, regular_size
from harness.messages import Message
from harness.modeljson import dump_json
from harness.repeats import Repeats, count_repeats
from harness.runbudget import RunBudget
from harness.secrets import Scrubber, scrub_text

__all__ = [
    "SCHEMA_VERSION",
    "Counted",
    "CountedEntry",
    "ExpectationResult",
    "Repeats",
    "Results",
    "ResultsFileError",
    "ScenarioId",
    "ScenarioResult",
    "Skipped",
    "Status",
    "Summary",
    "TurnResult",
    "assembled",
    "build_results",
    "check_version",
    "combination_label",
    "count_repeats",
    "load_results",
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

    Its identity, the run's data (RunData's fields, defined once in harness.actions), the
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


class Results(BaseModel):
    """The whole results.json file."""

    model_config = ConfigDict(extra="forbid")
    # strict: "1" or true is not a version (load_results says so in one line first).
    schema_version: int = Field(SCHEMA_VERSION, ge=1, le=SCHEMA_VERSION, strict=True)
    meta: dict[str, Any] = Field(default_factory=dict)
    summary: Summary = Field(default_factory=Summary)
    # The behaviours covered (`harness run --coverage`, docs/coverage.md); absent without.
    coverage: Coverage | None = Field(default=None, exclude_if=lambda v: v is None)
    # A live run's budget (--max-requests, --max-cost): spent, and left unrun.
    budget: RunBudget | None = Field(default=None, exclude_if=lambda v: v is None)
    # A list, or a ScenarioList read from disk one entry at a time (a session's or a
    # merge's results: harness.spool); readers go through it once where they can.
    scenarios: Sequence[ScenarioResult] = Field(default_factory=list)
    # The scenarios that were skipped, with why (they did not run: no entry above).
    skipped: list[Skipped] = Field(default_factory=list, exclude_if=lambda v: not v)
    baseline: BaselineDiff | None = None

    def counted(self) -> Iterator[CountedEntry | ScenarioResult]:
        """The scenarios, in order, with at least CountedEntry's fields: read into those
        fields only when they are on disk (a ScenarioList), else as they are."""
        from harness.spool import read_as

        return read_as(self.scenarios, CountedEntry)

    def failing(self) -> list[str]:
        """What did not pass, in id order: each entry that did not pass, except the runs
        of a scenario judged by its pass rate (``min_pass_rate``), which is listed by its
        id without ``[k]`` when too few of its runs passed."""
        failing: list[str] = []
        for s in self.counted():
            repeats = s.repeats
            if repeats is not None and repeats.min_pass_rate is not None:
                if not repeats.passes and s.scenario_key not in failing:
                    failing.append(s.scenario_key)
            elif s.status != "passed":
                failing.append(s.id)
        return failing

    def below_min_pass_rate(self) -> list[str]:
        """The repeated scenarios (ids without ``[k]``) too few of whose runs passed their
        ``min_pass_rate``: the session fails for them, though pytest saw no failed item."""
        keys = {
            s.scenario_key
            for s in self.counted()
            if s.repeats is not None and s.repeats.min_pass_rate is not None
            if not s.repeats.passes
        }
        return sorted(keys)

    def to_json(self) -> str:
        """The file's text (baseline omitted when there is none; secret values masked)."""
        return "".join(self.json_pieces())

    def json_pieces(self, *, baseline: bool = False) -> Iterator[str]:
        """``to_json``'s text in pieces, one scenario entry at a time (a large suite's file
        is never whole in memory). ``baseline``: ``to_baseline_json``'s text."""
        scrub = Scrubber().text
        if baseline:
            meta = {"versions": {"harness": self.meta.get("versions", {}).get("harness")}}
            head_model = self.model_construct(
                **{**dict(self), "meta": meta, "scenarios": [], "baseline": None, "skipped": []}
            )
        else:
            head_model = self.model_construct(**{**dict(self), "scenarios": []})
        head = dump_json(
            head_model, indent=2, exclude={"baseline"} if head_model.baseline is None else None
        )
        head = scrub_text(head) + "\n"
        before, marker, after = head.partition(_NO_SCENARIOS)
        first = True
        for dumped in _entries_json(
            self.scenarios, {"wall_time", "wall_clock"} if baseline else None
        ):
            if first:
                if not marker:
                    break
                yield before + '\n  "scenarios": [\n'
            yield ("    " if first else ",\n    ") + scrub(dumped.replace("\n", "\n    "))
            first = False
        yield head if first else "\n  ]" + after

    def write(self, path: str | Path) -> None:
        """Write results.json atomically, as it is made."""
        atomic_write(path, self.json_pieces())

    def to_baseline_json(self) -> str:
        """The text of a baseline file: these results without wall-clock values.

        A baseline is reviewed in version control: wall times, the start time and the
        versions of the machine that wrote it would change at every update and bury the
        behaviour changes. Only the harness version that wrote it is kept; the diff
        never compares what is left out.
        """
        return "".join(self.json_pieces(baseline=True))

    def write_baseline(self, path: str | Path) -> None:
        """Write these results as a baseline file (no wall-clock values), atomically."""
        atomic_write(path, self.json_pieces(baseline=True))

    @classmethod
    def load(cls, path: str | Path) -> Results:
        """Read a results.json file with pydantic's own errors; ``load_results`` is the
        checked loader whose errors are one line for people."""
        return cls.model_validate_json(Path(path).read_text(encoding="utf-8"))


def _entries_json(scenarios: Sequence[ScenarioResult], exclude: set[str] | None) -> Iterator[str]:
    """Each scenario entry's JSON text, indented by two (a ScenarioList's from its spooled
    text, building no ScenarioResult: the same text, several times faster)."""
    from harness.spool import ScenarioList

    if isinstance(scenarios, ScenarioList):
        yield from scenarios.dumped(indent=2, exclude=exclude)
        return
    for scenario in scenarios:
        yield dump_json(scenario, indent=2, exclude=exclude)


# -- reading results.json -------------------------------------------------------------------


# The scenarios' place in results.json's text (top-level keys are indented by two).
_NO_SCENARIOS = '\n  "scenarios": []'


class ResultsFileError(HarnessError):
    """A results file that cannot be used; the message is one line meant for people."""


def _supported() -> str:
    versions = "1" if SCHEMA_VERSION == 1 else f"1 to {SCHEMA_VERSION}"
    return f"this harness reads schema_version {versions}"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, float):
        return "a decimal number"
    return f"a JSON {type(value).__name__}"


def check_version(data: dict[str, Any], where: str) -> None:
    """ResultsFileError unless ``data`` (a results file's fields; ``where`` names it in
    messages) has a schema_version this harness reads."""
    if "schema_version" not in data:
        raise ResultsFileError(
            f"{where} has no schema_version; {_supported()} "
            "(write results with `harness run --json FILE`)"
        )
    version = data["schema_version"]
    shown = json.dumps(version, ensure_ascii=False)[:40]
    # bool is an int in Python, and pydantic's lax mode would take "1": neither is a version.
    if type(version) is not int:
        raise ResultsFileError(
            f"{where} has schema_version {shown} ({_kind(version)}, not an integer); {_supported()}"
        )
    if version > SCHEMA_VERSION:
        raise ResultsFileError(
            f"{where} has schema_version {version}; {_supported()}: upgrade harness to read it"
        )
    if version < 1:
        raise ResultsFileError(f"{where} has schema_version {version}; {_supported()}")


def load_results(path: str | Path, *, what: str = "results file") -> Results:
    """Read a results.json file, or raise ResultsFileError saying in one line what is wrong.

    ``what`` names the file in messages (e.g. ``"baseline"``). Only files whose
    ``schema_version`` this harness can read (an integer from 1 to SCHEMA_VERSION) load.
    """
    path = Path(path)
    where = f"{what} {str(path)!r}"
    try:
        regular_size(path)  # before reading it: a device is refused
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ResultsFileError(f"{where} does not exist") from None
    except IsADirectoryError:
        raise ResultsFileError(f"{where} is a directory, not a file") from None
    except Unreadable as exc:
        raise ResultsFileError(f"{where} is {exc}: give a results.json file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsFileError(f"cannot read {where}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsFileError(
            f"{where} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from None
    if not isinstance(data, dict) or "scenarios" not in data:
        raise ResultsFileError(
            f"{where} is not a harness results file (no 'scenarios'); "
            "write one with `harness run --json FILE`"
        )
    check_version(data, where)
    try:
        return Results.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = ".".join(str(part) for part in first["loc"]) or "(top level)"
        more = exc.error_count() - 1
        extra = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        message = " ".join(str(first["msg"]).split())
        raise ResultsFileError(
            f"{where} is not a valid harness results file: {field}: {message}{extra}"
        ) from None


def written_by(results: Results) -> str | None:
    """The harness version a results file says wrote it (``meta.versions.harness``)."""
    versions = results.meta.get("versions")
    version = versions.get("harness") if isinstance(versions, dict) else None
    return version if isinstance(version, str) else None


@functools.cache
def harness_version() -> str | None:
    """This harness's version, as results.json's ``meta.versions.harness`` names it."""
    try:
        return metadata.version("loop-harness")
    except metadata.PackageNotFoundError:
        return None


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for dist in ("loop-harness", "openai", "anthropic", "vcrpy", "pytest", "pydantic", "pluggy"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            out["harness" if dist == "loop-harness" else dist] = metadata.version(dist)
    return out


def build_results(
    scenarios: list[ScenarioResult],
    *,
    started: datetime | None = None,
    skipped: Mapping[str, str] | None = None,
) -> Results:
    """Results for these scenarios, sorted by id, with meta, summary and the repeats of
    repeated scenarios filled in; ``skipped``: id -> why, of those that did not run."""
    ordered = sorted(scenarios, key=_order)
    count_repeats(ordered)
    return assembled(ordered, Summary.of(ordered), started, skipped)


def assembled(
    scenarios: Sequence[ScenarioResult],
    summary: Summary,
    started: datetime | None,
    skipped: Mapping[str, str] | None,
) -> Results:
    """Results of these scenarios (in results order already) and their summary, with
    meta (harness's versions, the start) and what was skipped."""
    meta = {
        "versions": _versions(),
        "started": (started or datetime.now(UTC)).isoformat(timespec="seconds"),
    }
    results = Results(
        meta=meta,
        summary=summary,
        skipped=[Skipped(id=key, reason=why) for key, why in sorted((skipped or {}).items())],
    )
    results.scenarios = scenarios  # as it is: validating would read a ScenarioList whole
    return results


def _order(scenario: ScenarioResult) -> tuple[str, int]:
    # By id, the runs of a repeated scenario by number: name[2] before name[10].
    return (scenario.scenario_key, scenario.run or 0)
