"""results.json read one scenario entry at a time, and results kept on disk: a merge's
shards, a large suite's baseline and a session's results are never whole in memory
(docs/running.md#large-suites).

``read_streamed`` hands each scenario entry, checked, to a callback and returns the rest
of the file (``scenarios`` empty); ``load_streamed`` is ``load_results`` with
``scenarios`` a ScenarioList on disk. Both parse with ijson (its C backend, yajl2_c). A
file they cannot take is refused with ``load_results``' own one-line error, the same
for either reader: that file is read again by ``load_results`` to say it (an error path:
the file is then whole in memory, as every file was before), when it is a file of at
most ``WHOLE_ON_ERROR`` bytes; a larger one, or a pipe, is refused with the streamed
reader's own words, and a device (``/dev/zero``) before anything is read.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from functools import partial
from itertools import takewhile
from operator import ne
from pathlib import Path
from typing import Any, NamedTuple, cast

import ijson
from pydantic import ValidationError
from pydantic_core import to_json

from harness.actions import Termination
from harness.files import regular_size
from harness.modeljson import dump_json
from harness.repeats import Repeats, count_repeats
from harness.results import (
    SCHEMA_VERSION,
    Counted,
    CountedEntry,
    Results,
    ResultsFileError,
    ScenarioResult,
    Status,
    Summary,
    assembled,
    check_version,
    harness_version,
    load_results,
    written_by,
)
from harness.spool import ResultSpool, ScenarioList

__all__ = ["Entry", "build_spooled_results", "entry_text", "load_streamed", "read_streamed"]

# The event that closes the top-level ``scenarios`` array (nested arrays have longer
# prefixes): the head's pass skips the entries up to it at C speed.
_END_OF_SCENARIOS = ("scenarios", "end_array", None)


class _NotTaken(Exception):
    """A file the streamed reader does not take (load_results says why)."""


# ValueError: pydantic's ValidationError, and a file that is not UTF-8.
_UNTAKEN = (OSError, ValueError, ijson.JSONError, _NotTaken)
# The largest file read whole to say what is wrong with it (load_results' words).
WHOLE_ON_ERROR = 16 * 2**20


class Entry(NamedTuple):
    """A scenario entry of a results file: checked (``scenario``), and its JSON value as
    the file holds it (``written``). ``same_writer``: the file says this harness version
    wrote it (its schema and ``meta.versions.harness``)."""

    scenario: ScenarioResult
    written: dict[str, Any]
    same_writer: bool


def read_streamed(
    path: str | Path, each: Callable[[Entry], None], *, what: str = "results file"
) -> Results:
    """Every scenario entry of a results file, validated, to ``each`` in the file's
    order; the file's other fields returned (``scenarios`` empty).

    ResultsFileError with ``load_results``' one-line message when the file cannot be
    used (``what`` names it). The file is read twice: its head first (every field but
    the entries, and whether the whole text is JSON), so that a file that is not JSON or
    whose head is wrong gives ``each`` nothing; then the entries one at a time, up to the
    first one that is wrong.
    """
    path = Path(path)
    _check_file(path, what)
    try:
        head = _head(path, f"{what} {str(path)!r}")
    except _UNTAKEN as exc:
        raise _refused(path, what, exc) from None
    this = harness_version()
    same = head.schema_version == SCHEMA_VERSION and this is not None and written_by(head) == this
    for scenario, written in _entries(path, what):
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


def load_streamed(path: str | Path, *, what: str = "results file") -> Results:
    """``load_results`` with the scenarios kept on disk: a ScenarioList in results
    order (by id, a repeated scenario's runs by number), whatever the file's order."""
    spool = ResultSpool()
    order: list[tuple[str, int, str]] = []

    def keep(entry: Entry) -> None:
        key = str(len(order))  # positions: an id repeated in a hand-edited file stays
        scenario = entry.scenario
        spool[key] = dump_json(scenario)
        order.append((scenario.scenario_key, scenario.run or 0, key))

    results = read_streamed(path, keep, what=what)
    order.sort(key=lambda item: item[:2])  # stable: the file's order among equals
    results.scenarios = ScenarioList(
        spool, [key for _, _, key in order], ScenarioResult.model_validate_json
    )
    return results


def _entries(path: Path, what: str) -> Iterator[tuple[ScenarioResult, dict[str, Any]]]:
    try:
        with path.open("rb") as file:
            for entry in ijson.items(file, "scenarios.item", use_float=True):
                yield ScenarioResult.model_validate(entry), entry
    except _UNTAKEN as exc:
        raise _refused(path, what, exc) from None


def _head(path: Path, where: str) -> Results:
    """The file's fields but its entries, checked as load_results checks them."""
    fields: dict[str, Any] = {}
    with path.open("rb") as file:
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


def _refused(path: Path, what: str, problem: Exception) -> ResultsFileError:
    """load_results' one-line error for this file (its checks, its wording); for a file
    too large to read whole, the streamed reader's own, which quotes none of it."""
    where = f"{what} {str(path)!r}"
    size = _check_file(path, what)
    if size is None or size > WHOLE_ON_ERROR:  # a pipe cannot be read again
        return ResultsFileError(f"{where} is not a harness results file: {_why(problem)}")
    try:
        load_results(path, what=what)
    except ResultsFileError as exc:
        return exc
    # Taken whole but not streamed (NaN, say, which json reads and yajl does not).
    shown = " ".join(str(problem).split()) or type(problem).__name__
    return ResultsFileError(
        f"{what} {str(path)!r} cannot be read one entry at a time: {shown}; write it again "
        "with `harness run --json FILE`"
    )


def _check_file(path: Path, what: str) -> int | None:
    """The size of ``path`` (None for a pipe); load_results' one-line error when it is no
    file to read (nothing is read from it: it refuses such a path before reading)."""
    try:
        return regular_size(path)
    except OSError:
        load_results(path, what=what)  # raises its one line for the path
        raise


def _why(problem: Exception) -> str:
    """What the streamed reader found wrong, in one line that quotes nothing of the file."""
    if isinstance(problem, ValidationError):
        first = problem.errors(include_url=False, include_input=False)[0]
        field = ".".join(str(part) for part in first["loc"]) or "(top level)"
        return f"an entry's {field}: {' '.join(str(first['msg']).split())}"
    if isinstance(problem, ResultsFileError):
        return str(problem)
    if isinstance(problem, _NotTaken):
        return str(problem)
    if isinstance(problem, OSError):
        return f"cannot read it: {problem.strerror or type(problem).__name__}"
    return "it is not valid JSON (write it with `harness run --json FILE`)"


# -- results kept on disk --------------------------------------------------------------------


def build_spooled_results(
    spool: ResultSpool,
    *,
    started: datetime | None = None,
    skipped: Mapping[str, str] | None = None,
) -> Results:
    """``build_results`` for scenarios kept in a spool (id -> JSON): the same results,
    their ``scenarios`` a ScenarioList read from the spool, so that memory holds one
    scenario at a time (the runs of one repeated scenario while they are counted)."""
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
    return assembled(
        ScenarioList(spool, ids, ScenarioResult.model_validate_json), summary, started, skipped
    )


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
