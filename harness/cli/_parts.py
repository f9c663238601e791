"""A run in parts (``harness run --chunk-size N``, docs/running.md#large-suites): the
suite as several pytest sessions, one after another, each collecting the scenario files
of its part, each in a process forked from harness's (harness.cli._forked), then the
run's end in harness's process, which writes and prints for the whole run.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import pickle
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from harness._exitcodes import EXIT
from harness.cli._session import Capture, call_pytest, pytest_args

if TYPE_CHECKING:
    from harness._spool import Blobs
    from harness.pytest_plugin._parts import Gathered, RunPart

__all__ = ["PER_SESSION", "Around", "count_parts", "run_in_parts"]


class Around(NamedTuple):
    """What the command gives every session of a run in parts: the baseline they compare
    with (its path and loaded results, as ``Capture`` takes it), and what the command
    does once the session that wrote the run's results ended (given its status)."""

    compare: tuple[Path, Any] | None
    ended: Callable[[Capture, int], int]


# pytest options whose meaning needs the whole suite in one session: --lf and --ff pick
# from the last failures of the session's items, --sw stops and resumes within one, and
# --junitxml would be written by each part over the last.
PER_SESSION = frozenset(
    {"--lf", "--last-failed", "--ff", "--failed-first", "--sw", "--stepwise"}
    | {"--sw-skip", "--stepwise-skip", "--junitxml", "--junit-xml"}
)
# Folders pytest does not look into by default (its norecursedirs), for the count alone.
_NOT_WALKED = frozenset({"CVS", "_darcs", "build", "dist", "node_modules", "venv", "{arch}"})


class _Plan(NamedTuple):
    """A run in parts: the run's paths, the folders its end is given, how many parts the
    files are split into, those that run (index, paths), and pytest arguments every part
    is given."""

    run_paths: tuple[str, ...]
    folders: list[str]
    total: int
    runs: list[tuple[int, list[str]]]
    extra: list[str]


class _Outcome(NamedTuple):
    """What a part's process tells the run: its status, whether Ctrl-C stopped it, its
    failures and ``--maxfail``, and whether it handed on what it gathered (else it ended
    the run, and ``status`` is the run's)."""

    status: int
    ctrl_c: bool
    failed: int
    maxfail: int
    handed: bool


def count_parts(paths: list[str], chunk_size: int | None) -> int:
    """How many parts a run of ``paths`` is split into: 1 without --chunk-size, else its
    scenario files (counted as pytest would find them) over the size, rounded up."""
    if chunk_size is None:
        return 1
    from harness._results import ScenarioId
    from harness.pytest_plugin._options import SUFFIXES

    count = 0
    for given in paths:
        path = Path(ScenarioId.file_of(given))
        if not path.is_dir():
            count += 1
            continue
        for _, folders, files in os.walk(path):
            folders[:] = [f for f in folders if f[:1] != "." and f not in _NOT_WALKED]
            count += sum(name.endswith(SUFFIXES) for name in files)
    return max(1, -(-count // chunk_size))


def run_in_parts(
    options: argparse.Namespace,
    paths: list[str],
    outputs: tuple[Path, Path],
    around: Around,
    total: int,
) -> tuple[int, Capture]:
    """The run as ``total`` pytest sessions, one after another, each collecting the
    scenario files of its part (``harness._shards.part_of``, by path), each in a process
    of its own (harness.cli._forked) that hands back what it gathered; then a session of
    this process that collects nothing writes the reports and the summary of the whole
    run, as one session would. A part that stops the run (Ctrl-C, ``-x``, collection
    errors) ends it there, as the run's end would. The status and the end's
    capture."""
    from harness._results import ScenarioId
    from harness._shards import part_of

    here = os.getcwd()

    def part_of_file(given: str) -> int | None:
        # Files named on the command line go to their part alone: pytest collects a named
        # file whatever pytest_ignore_collect says.
        path = ScenarioId.file_of(given)
        return (
            part_of(os.path.relpath(os.path.abspath(path), here), total)
            if Path(path).is_file()
            else None
        )

    named = {given: part_of_file(given) for given in paths}
    planned = [[p for p in paths if named[p] in (None, k)] for k in range(1, total + 1)]
    runs = [(k, part_paths) for k, part_paths in enumerate(planned, 1) if part_paths]
    # The run's end is given the run's folders (a named file's own), so that it finds the
    # same rootdir and configuration as the parts did; it collects nothing.
    folders = sorted(
        {str(Path(ScenarioId.file_of(p)).parent) if named[p] is not None else p for p in paths}
    )
    with contextlib.ExitStack() as stack:
        extra: list[str] = []
        if options.harness_shard is not None:
            ids = _ids_selected(options, outputs, runs, total)
            if ids is None:
                stopped = Capture()
                stopped.ctrl_c = True
                return EXIT["interrupted"], stopped
            extra = ["--harness-shard-ids", _listed(stack, ids)]
            del ids  # the parts read them from the file: not held while they run
        plan = _Plan(tuple(paths), folders, total, runs, extra)
        return _parts_run(options, plan, outputs, around)


def _listed(stack: contextlib.ExitStack, ids: list[str]) -> str:
    """A file of ``ids`` (JSON) that every part, and every xdist worker of a part, opens
    by its path. On Linux the file has no name (``/proc/PID/fd/N`` reaches it while this
    process holds it): nothing is left on disk however the run ends, a kill -9 included."""
    listed = stack.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8"))  # noqa: SIM115
    json.dump(ids, listed)
    listed.flush()
    held = Path(f"/proc/{os.getpid()}/fd/{listed.fileno()}")
    if held.exists():
        return str(held)
    folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="harness-parts-"))
    named = Path(folder, "shard-ids.json")
    named.write_text(json.dumps(ids), encoding="utf-8")
    return str(named)


def _ids_selected(
    options: argparse.Namespace,
    outputs: tuple[Path, Path],
    runs: list[tuple[int, list[str]]],
    total: int,
) -> list[str] | None:
    """What every part selects (after ``-k``, ``-m``, the paths), from a round of quiet
    ``--collect-only`` sessions, each in a process of its own: the ids a shard plan
    splits. A part that fails to collect lists what it could; its session in the run
    proper says what went wrong. None: Ctrl-C stopped the listing (and the run)."""

    from harness.cli._forked import forked
    from harness.pytest_plugin._parts import RunPart

    def listing(index: int, part_paths: list[str]) -> list[str] | None:
        import contextlib

        seen: list[str] = []
        capture = Capture(None, RunPart((), False, None, seen))
        args = pytest_args(options, part_paths, outputs)  # (a listing writes nothing)
        args += ["--harness-part", f"{index}/{total}", "--collect-only"]
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            call_pytest(args, capture, lean=not options.all_pytest_plugins)
        return None if capture.ctrl_c else seen

    selected: list[str] = []
    for index, part_paths in runs:
        seen = forked(lambda: listing(index, part_paths))  # noqa: B023 -- called at once
        if seen is None:
            return None
        selected += seen
    return selected


def _parts_run(
    options: argparse.Namespace,
    plan: _Plan,
    outputs: tuple[Path, Path],
    around: Around,
) -> tuple[int, Capture]:
    """The parts' sessions, one after another, then the run's end (``run_in_parts``)."""
    from harness._spool import Blobs
    from harness.cli._forked import forked
    from harness.pytest_plugin._parts import Earlier, RunPart

    compare = around.compare
    handed: list[IO[bytes]] = []  # what each part handed back, pickled, read at the run's end
    blobs = Blobs()  # the run's results file, which every part's spool writes to
    earlier = Earlier(blobs, functools.partial(_read, blobs, handed))
    statuses: list[int] = []
    failed, maxfail = 0, 0
    for n, (index, part_paths) in enumerate(plan.runs, 1):
        part = RunPart(plan.run_paths, True, earlier)
        args = pytest_args(options, part_paths, outputs)
        args += ["--harness-part", f"{index}/{plan.total}", *plan.extra]
        if n > 1:
            args.append("--no-header")  # the first part's said it all
            if maxfail:
                args.append(f"--maxfail={maxfail - failed}")  # the last one given wins
        kept = tempfile.TemporaryFile(prefix="harness-part-")  # noqa: SIM115 -- closed below
        outcome = forked(lambda: _part(options, args, around, part, kept))  # noqa: B023
        statuses.append(outcome.status)
        if not outcome.handed:  # it stopped the run, and ended it
            kept.close()
            for earlier_part in handed:
                earlier_part.close()
            ended = Capture(compare)
            ended.ctrl_c = outcome.ctrl_c
            return _joined(statuses), ended
        handed.append(kept)
        failed += outcome.failed
        maxfail = maxfail or outcome.maxfail  # the user's, from the first part
    end = RunPart(plan.run_paths, False, earlier, collects_nothing=True)
    capture = Capture(compare, end)
    args = [*pytest_args(options, plan.folders, outputs), "--no-header"]
    if options.numprocesses is not None:
        args.append("--numprocesses=0")  # nothing to run: no workers to start
    statuses.append(call_pytest(args, capture, lean=not options.all_pytest_plugins))
    return _joined(statuses), capture


def _part(
    options: argparse.Namespace,
    args: list[str],
    around: Around,
    part: RunPart,
    kept: IO[bytes],
) -> _Outcome:
    """A part's session, in its own process (``_parts_run``): what it gathered, pickled
    into ``kept``; or, when it stopped the run and so ended it, the run's status."""
    from harness.pytest_plugin._parts import Gathered

    capture = Capture(around.compare, part)
    status = call_pytest(args, capture, lean=not options.all_pytest_plugins)
    state = capture.state()
    if state is None or not part.handed_on:
        return _Outcome(around.ended(capture, status), capture.ctrl_c, 0, 0, False)
    pickle.dump(Gathered(state.ledger, state.outputs), kept, pickle.HIGHEST_PROTOCOL)
    kept.flush()
    maxfail = int(capture.config.option.maxfail or 0)
    return _Outcome(status, False, capture.failed, maxfail, True)


def _read(blobs: Blobs, handed: list[IO[bytes]]) -> Gathered:
    """What the parts handed back, one file at a time, as one: results (in the run's
    file: each part's spool pickles as the Blobs of this process), ledgers, errors."""
    from harness._spool import ResultSpool
    from harness.pytest_plugin._ledger import CollectionLedger
    from harness.pytest_plugin._outputs import SessionOutputs
    from harness.pytest_plugin._parts import Gathered

    run = Gathered(CollectionLedger(), SessionOutputs(results=ResultSpool(blobs)))
    for kept in handed:
        with kept:
            kept.seek(0)
            part: Gathered = pickle.load(kept)
        run.ledger.extend(part.ledger)
        run.outputs.extend(part.outputs)  # the earliest part's start is the run's
    return run


def _joined(statuses: list[int]) -> int:
    """A run's status from its parts': the last part's when it is no test outcome (it
    stopped the run, or harness changed it for the whole run), else 1 when any part had
    a failure, 0 when any ran, 5 when none collected anything."""
    last = statuses[-1]
    if last not in (0, 1, 5):
        return last
    if 1 in statuses:
        return 1
    return 0 if 0 in statuses else 5
