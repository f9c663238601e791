"""The results of scenario runs, and results.json: written, read and built here only.

This is the data between the runner and the reports: scenario -> run -> result ->
report. Everything outside ``meta``, ``wall_time`` and ``wall_clock`` is identical across runs of
the same inputs. A scenario entry's models live in ``harness._result_models`` and are
imported from here.

results.json is read one entry at a time (ijson), never whole in memory unless asked for
(docs/running.md#large-suites): ``read_streamed`` hands each entry, checked, to a
callback; ``load_results`` keeps them on disk (a ScenarioList) or, ``in_memory``, in a
list. A file that cannot be used is refused in one line, worded from the whole file when
it is at most ``WHOLE_ON_ERROR`` bytes (an error path), else in the streamed reader's own
words, which quote none of it. ``build_results`` assembles a run's results on a spool.
"""

from __future__ import annotations

import contextlib
import functools
import json
import platform
import shutil
import tempfile
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from importlib import metadata
from itertools import takewhile
from operator import ne
from pathlib import Path
from typing import IO, Any, NamedTuple, cast

import ijson
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import to_json

from harness._actions import Termination
from harness._baseline import BaselineDiff
from harness._coverage import Coverage
from harness._errors import HarnessError
from harness._files import Unreadable, atomic_write, regular_size
from harness._modeljson import dump_json
from harness._repeats import Repeats, count_repeats
from harness._result_models import (
    SCHEMA_VERSION,
    Counted,
    CountedEntry,
    ExpectationResult,
    ScenarioId,
    ScenarioResult,
    Skipped,
    Status,
    Summary,
    TurnResult,
    combination_label,
)
from harness._runbudget import RunBudget
from harness._secrets import Scrubber, scrub_text
from harness._spool import ResultSpool, ScenarioList, read_as

__all__ = [
    "SCHEMA_VERSION",
    "Counted",
    "CountedEntry",
    "Entry",
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
    "build_results",
    "check_version",
    "combination_label",
    "count_repeats",
    "entry_text",
    "load_results",
    "read_streamed",
]


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
    # merge's results: harness._spool); readers go through it once where they can.
    scenarios: Sequence[ScenarioResult] = Field(default_factory=list)
    # The scenarios that were skipped, with why (they did not run: no entry above).
    skipped: list[Skipped] = Field(default_factory=list, exclude_if=lambda v: not v)
    baseline: BaselineDiff | None = None

    def counted(self) -> Iterator[CountedEntry | ScenarioResult]:
        """The scenarios, in order, with at least CountedEntry's fields: read into those
        fields only when they are on disk (a ScenarioList), else as they are."""
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
        """``load_results(path)``: a results.json file read back, or ResultsFileError."""
        return load_results(path)


def _entries_json(scenarios: Sequence[ScenarioResult], exclude: set[str] | None) -> Iterator[str]:
    """Each scenario entry's JSON text, indented by two (a ScenarioList's from its spooled
    text, building no ScenarioResult: the same text, several times faster)."""
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


# A file the streamed reader does not take is worded from the whole file up to this size
# (the whole-file messages count every problem and quote line and column).
WHOLE_ON_ERROR = 16 * 2**20
# The event that closes the top-level ``scenarios`` array (nested arrays have longer
# prefixes): the head's pass skips the entries up to it at C speed.
_END_OF_SCENARIOS = ("scenarios", "end_array", None)


class _NotTaken(Exception):
    """A file the streamed reader does not take (the whole-file check says why)."""


# ValueError: pydantic's ValidationError, and a file that is not UTF-8.
_UNTAKEN = (OSError, ValueError, ijson.JSONError, _NotTaken)


class Entry(NamedTuple):
    """A scenario entry of a results file: checked (``scenario``), and its JSON value as
    the file holds it (``written``). ``same_writer``: the file says this harness version
    wrote it (its schema and ``meta.versions.harness``)."""

    scenario: ScenarioResult
    written: dict[str, Any]
    same_writer: bool


def load_results(
    path: str | Path, *, what: str = "results file", in_memory: bool = False
) -> Results:
    """Read a results.json file, or raise ResultsFileError saying in one line what is wrong.

    The entries are read one at a time and kept on disk (``scenarios`` a ScenarioList,
    read back one scenario at a time), or in a list with ``in_memory``; either way in
    results order (by id, a repeated scenario's runs by number), whatever the file's.
    ``what`` names the file in messages (e.g. ``"baseline"``). Only files whose
    ``schema_version`` this harness can read (an integer from 1 to SCHEMA_VERSION) load.
    """
    order: list[tuple[str, int, int]] = []  # (id without [run], run, position)
    spool = None if in_memory else ResultSpool()
    kept: list[ScenarioResult] = []

    def keep(entry: Entry) -> None:
        scenario, at = entry.scenario, len(order)
        order.append((scenario.scenario_key, scenario.run or 0, at))
        if spool is None:
            kept.append(scenario)
        else:  # by position: an id repeated in a hand-edited file stays
            spool[str(at)] = dump_json(scenario)

    results = read_streamed(path, keep, what=what)
    order.sort()  # the position last: the file's order among equals
    if spool is None:
        results.scenarios = [kept[at] for _, _, at in order]
    else:
        ids = [str(at) for _, _, at in order]
        results.scenarios = ScenarioList(spool, ids, ScenarioResult.model_validate_json)
    return results


def read_streamed(
    path: str | Path, each: Callable[[Entry], None], *, what: str = "results file"
) -> Results:
    """Every scenario entry of a results file, validated, to ``each`` in the file's
    order; the file's other fields returned (``scenarios`` empty).

    ResultsFileError with a one-line message when the file cannot be used (``what``
    names it). The file is read twice: its head first (every field but the entries, and
    whether the whole text is JSON), so that a file that is not JSON or whose head is
    wrong gives ``each`` nothing; then the entries one at a time, up to the first one
    that is wrong. A pipe is copied to a temporary file to be read twice.
    """
    path = Path(path)
    where = f"{what} {str(path)!r}"
    size = _file_size(path, where)
    with contextlib.ExitStack() as stack:
        try:
            file = stack.enter_context(_opened(path, size))
            head = _head(file, where)
        except _UNTAKEN as exc:
            raise _refused(path, what, exc) from None
        this = harness_version()
        same = head.schema_version == SCHEMA_VERSION and this is not None
        same = same and written_by(head) == this
        file.seek(0)
        for scenario, written in _entries(file, path, what):
            each(Entry(scenario, written, same))  # outside _entries' try: its own errors
    return head


def entry_text(entry: Entry, *, indent: int | None) -> str:
    """The entry's JSON text as results.json writes it: copied from the data read when
    this harness version wrote the file and the entry has the keys, in the order, that
    its model writes (several times faster than writing the model; a value edited by hand
    into another form, ``2`` for ``2.0``, stays as it was written); else the model's."""
    if entry.same_writer and tuple(entry.written) == _dumped_keys(entry.scenario):
        return to_json(entry.written, indent=indent).decode("utf-8")
    return dump_json(entry.scenario, indent=indent)


def _dumped_keys(scenario: ScenarioResult) -> tuple[str, ...]:
    """The keys of ``scenario.model_dump_json()``, in order: its fields but those its
    ``exclude_if`` leaves out."""
    return tuple(
        name
        for name, info in _FIELDS
        if info.exclude_if is None or not info.exclude_if(getattr(scenario, name))
    )


_FIELDS = tuple(ScenarioResult.model_fields.items())


@contextlib.contextmanager
def _opened(path: Path, size: int | None) -> Iterator[IO[bytes]]:
    """The file, open to be read twice (its head, its entries): a pipe (``size`` None)
    copied to a temporary file first, as it comes."""
    with path.open("rb") as file:
        if size is not None:
            yield file
            return
        with tempfile.TemporaryFile() as copy:
            shutil.copyfileobj(file, copy)
            copy.seek(0)
            yield copy


def _entries(file: IO[bytes], path: Path, what: str) -> Iterator[tuple[ScenarioResult, Any]]:
    try:
        for entry in ijson.items(file, "scenarios.item", use_float=True):
            yield ScenarioResult.model_validate(entry), entry
    except _UNTAKEN as exc:
        raise _refused(path, what, exc) from None


def _head(file: IO[bytes], where: str) -> Results:
    """The file's fields but its entries, checked as the whole-file check checks them."""
    fields: dict[str, Any] = {}
    events = ijson.parse(file, use_float=True)
    if next(events, None) != ("", "start_map", None):
        raise _NotTaken("not a JSON object")
    for prefix, event, key in events:
        if (prefix, event) == ("", "end_map"):
            continue  # the end of the file: ijson refuses anything after it
        if key in fields:
            raise _NotTaken(f"{key!r} twice")
        if key != "scenarios":
            fields[key] = _value(events)
        elif next(events) != ("scenarios", "start_array", None):
            raise _NotTaken("'scenarios' is not a list")
        else:
            deque(takewhile(partial(ne, _END_OF_SCENARIOS), events), maxlen=0)
            fields[key] = []
    if "scenarios" not in fields:
        raise _NotTaken("no 'scenarios'")
    check_version(fields, where)
    return Results.model_validate(fields)


def _value(events: Iterator[tuple[str, str, Any]]) -> Any:
    """The JSON value whose events come next (a head field: small)."""
    builder = ijson.ObjectBuilder()
    depth = 0
    for _, event, value in events:
        builder.event(event, value)
        depth += event in ("start_map", "start_array")
        depth -= event in ("end_map", "end_array")
        if depth == 0:
            break
    return builder.value


# -- what is wrong with a file it cannot take -----------------------------------------------


def _refused(path: Path, what: str, problem: Exception) -> ResultsFileError:
    """The one-line error for a file the streamed reader cannot take: worded from the
    whole file (its checks, line and column, every problem counted); for a file too large
    to read whole, or a pipe, in the streamed reader's own words, which quote none of it."""
    where = f"{what} {str(path)!r}"
    size = _file_size(path, where)
    if size is None or size > WHOLE_ON_ERROR:  # a pipe cannot be read again
        return ResultsFileError(f"{where} is not a harness results file: {_why(problem)}")
    found = _whole_problem(path, where)
    if found is not None:
        return found
    # Taken whole but not streamed (NaN, say, which json reads and yajl does not).
    shown = " ".join(str(problem).split()) or type(problem).__name__
    return ResultsFileError(
        f"{where} cannot be read one entry at a time: {shown}; write it again "
        "with `harness run --json FILE`"
    )


def _file_size(path: Path, where: str) -> int | None:
    """The size of ``path`` (None for a pipe), checked before anything reads it; a
    one-line ResultsFileError when it is no file to read (a device: /dev/zero)."""
    try:
        return regular_size(path)
    except FileNotFoundError:
        raise ResultsFileError(f"{where} does not exist") from None
    except IsADirectoryError:
        raise ResultsFileError(f"{where} is a directory, not a file") from None
    except Unreadable as exc:
        raise ResultsFileError(f"{where} is {exc}: give a results.json file") from None
    except OSError as exc:
        raise ResultsFileError(f"cannot read {where}: {exc}") from None


def _whole_problem(path: Path, where: str) -> ResultsFileError | None:
    """What is wrong with the file read whole (json, then its models over all of it); None
    when nothing is."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        at = f"line {exc.lineno}, column {exc.colno}"
        return ResultsFileError(f"{where} is not valid JSON: {exc.msg} ({at})")
    except (OSError, UnicodeDecodeError) as exc:
        return ResultsFileError(f"cannot read {where}: {exc}")
    if not isinstance(data, dict) or "scenarios" not in data:
        return ResultsFileError(
            f"{where} is not a harness results file (no 'scenarios'); "
            "write one with `harness run --json FILE`"
        )
    try:
        check_version(data, where)
        Results.model_validate(data)
    except ResultsFileError as exc:
        return exc
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = ".".join(str(part) for part in first["loc"]) or "(top level)"
        more = exc.error_count() - 1
        extra = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        message = " ".join(str(first["msg"]).split())
        return ResultsFileError(
            f"{where} is not a valid harness results file: {field}: {message}{extra}"
        )
    return None


def _why(problem: Exception) -> str:
    """What the streamed reader found wrong, in one line that quotes nothing of the file."""
    if isinstance(problem, ValidationError):
        first = problem.errors(include_url=False, include_input=False)[0]
        field = ".".join(str(part) for part in first["loc"]) or "(top level)"
        return f"an entry's {field}: {' '.join(str(first['msg']).split())}"
    if isinstance(problem, (ResultsFileError, _NotTaken)):
        return str(problem)
    if isinstance(problem, OSError):
        return f"cannot read it: {problem.strerror or type(problem).__name__}"
    return "it is not valid JSON (write it with `harness run --json FILE`)"


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


# -- building results.json ------------------------------------------------------------------


def build_results(
    scenarios: ResultSpool | Iterable[ScenarioResult],
    *,
    started: datetime | None = None,
    skipped: Mapping[str, str] | None = None,
    in_memory: bool = False,
) -> Results:
    """A run's results: its scenarios in results order (by id, a repeated scenario's runs
    by number) with the repeats of repeated scenarios counted, meta, the summary, and
    ``skipped`` (id -> why) of those that did not run.

    ``scenarios``: a spool (id -> JSON: a session's, a merge's), or results in memory,
    spooled first; ``scenarios`` is then a ScenarioList read from the spool, so that
    memory holds one scenario at a time (the runs of one repeated scenario while they
    are counted); ``in_memory``: read back into a list (to be edited, say)."""
    if isinstance(scenarios, ResultSpool):
        spool = scenarios
    else:
        spool = ResultSpool()
        for scenario in scenarios:
            spool.add(scenario)
    ids = sorted(spool, key=spool.order)
    groups: dict[str, list[str]] = {}
    for key in ids:
        if key in spool.runs:
            groups.setdefault(spool.order(key)[0], []).append(key)
    for keys in groups.values():
        runs = [ScenarioResult.model_validate_json(spool[key]) for key in keys]
        count_repeats(runs)
        for run in runs:
            spool.add(run)
    summary = Summary.of(_counted(spool, key) for key in ids)
    meta = {
        "versions": _versions(),
        "started": (started or datetime.now(UTC)).isoformat(timespec="seconds"),
    }
    results = Results(
        meta=meta,
        summary=summary,
        skipped=[Skipped(id=key, reason=why) for key, why in sorted((skipped or {}).items())],
    )
    # As it is: validating would read the ScenarioList whole.
    results.scenarios = ScenarioList(spool, ids, ScenarioResult.model_validate_json)
    if in_memory:
        results.scenarios = list(results.scenarios)
    return results


class _RanOnce(NamedTuple):
    """What the summary counts of a result that ran once, as the spool noted it (a
    tuple: a suite's worth of them are made in one pass)."""

    scenario_key: str
    status: Status
    termination: Termination
    sim_time: float
    repeats: Repeats | None = None


def _counted(spool: ResultSpool, key: str) -> Counted:
    """What the summary counts of a spooled result: as the spool noted it (a result that
    ran once), else read from its text."""
    known = spool.counted.get(key)
    if known is None or key in spool.runs:
        return CountedEntry.model_validate_json(spool[key])
    status, termination, sim_time = known
    return _RanOnce(key, cast(Status, status), Termination(termination), sim_time)
