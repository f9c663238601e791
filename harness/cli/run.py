"""``harness run`` and ``harness record``: scenarios through pytest, then the baseline.

The command calls ``pytest.main`` in this process rather than starting a pytest
subprocess: one interpreter start-up less per run, pytest's own output and exit status
as they are, and the session's results at hand for the summary and the baseline (no
re-reading of results.json). pytest-xdist's workers are separate processes anyway.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pluggy

from harness.cli.baseline import load_baseline, update_baseline
from harness.cli.parsing import Parser, UsageError, to_stderr
from harness.cli.plugins import load_plugin_options
from harness.exitcodes import EXIT

if TYPE_CHECKING:
    from harness.baseline import BaselineDiff
    from harness.pytest_plugin import SuiteState
    from harness.pytest_plugin.ledger import CollectionLedger
    from harness.pytest_plugin.session import SessionOutputs
    from harness.results import Results

__all__ = ["add_arguments", "declare", "handle"]

REPORTS = Path("reports")
_AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"

# pytest.hookimpl, without importing pytest where the command does not run it.
_pytest_hookimpl = pluggy.HookimplMarker("pytest")


# -- the options ---------------------------------------------------------------------------


def add_arguments(parser: Parser) -> None:
    """``harness run``'s description and options."""
    declare(parser, record=False)


def declare(parser: Parser, *, record: bool) -> None:
    """The options of ``harness run``, or of ``harness record`` (record mode ``once``).

    Those a session reads are the pytest plugin's (``harness.pytest_plugin.options``),
    declared there once, with the flags this command gives them; the rest are its own.
    """
    from harness.pytest_plugin.options import OPTIONS

    parser.description = (
        "Run scenarios through pytest (record mode 'once' by default). "
        if record
        else "Run scenarios through pytest. "
    ) + "Options pytest knows but harness does not go after `--`."
    parser.passes_on = True
    parser.unknown_hint = "; pytest options go after `--`: harness run scenarios/ -- --maxfail 3"
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="PATHS",
        help="scenario files or folders (default: scenarios/ of the project)",
    )
    record_mode = {
        "default": "once",
        "help": "cassette record mode (default: once: record what the cassette lacks)",
    }
    for option in OPTIONS:
        if option.run is not None:
            declared = {"help": option.run_help or option.help}
            if record and option.dest == "record_mode":
                declared |= record_mode
            parser.add_argument(option.run, **option.arguments(**declared))
    _add_own(parser)


def _add_own(parser: Parser) -> None:
    """The options of this command alone: the baseline's update and check, and which
    pytest plugins load."""
    parser.add_argument(
        "--update-baseline", action="store_true", help="write this run's results as baseline"
    )
    parser.add_argument(
        "--fail-on-change",
        action="store_true",
        help="exit 1 on any regression or change against the baseline",
    )
    parser.add_argument(
        "--chunk-size",
        type=int,
        metavar="N",
        help="run the suite about N scenario files at a time, one pytest session each, "
        "into one set of results and reports: memory stays that of N files "
        "(docs/running.md#large-suites)",
    )
    parser.add_argument(
        "--all-pytest-plugins",
        action="store_true",
        help="load every installed pytest plugin, as plain pytest does (default: only "
        "harness's, pytest-xdist's with -n, and those given after -- with -p)",
    )


# -- before pytest -------------------------------------------------------------------------


def _root_of(paths: list[str]) -> Path:
    """The project the given paths lie in: it decides reports, baseline and ids.

    Wherever the command starts: `cd /tmp && harness run ~/proj/scenarios` writes
    ~/proj/reports and compares with ~/proj/reports/baseline.json. Paths in several
    projects use the current directory's, and a line says so.
    """
    from harness.project import project_root
    from harness.results import ScenarioId

    roots = sorted({project_root(Path(ScenarioId.file_of(p)).resolve()) for p in paths})
    if len(roots) == 1:
        return roots[0]
    here = project_root()
    listed = ", ".join(str(r) for r in roots)
    to_stderr(
        f"harness: the paths lie in {len(roots)} projects ({listed}); reports, the baseline "
        f"and ids use {here}, the current directory's",
    )
    return here


def _scenario_paths(given: list[str]) -> tuple[Path, list[str]]:
    """The project root and the paths pytest collects (the project's scenarios/ if none)."""
    from harness.project import display_path, project_root
    from harness.results import ScenarioId

    # A node id (path::name) names a file too.
    missing = [p for p in given if not Path(ScenarioId.file_of(p)).exists()]
    if missing:
        raise UsageError(f"no such file or folder: {', '.join(missing)}")
    if given:
        return _root_of(given), given
    root = project_root()
    default = root / "scenarios"
    return root, [display_path(default) if default.is_dir() else "."]


def _baseline_file(options: argparse.Namespace, root: Path) -> tuple[Path, str]:
    """The baseline's path, and how messages name it."""
    if options.harness_baseline:
        baseline = Path(options.harness_baseline)
        if not baseline.is_file() and not options.update_baseline:
            raise UsageError(f"--baseline {options.harness_baseline}: no such file")
        return baseline, "--baseline"
    # The user never typed --baseline: messages name the file.
    return root / REPORTS / "baseline.json", "default baseline"


def _comparison(
    options: argparse.Namespace, root: Path, baseline: Path, label: str
) -> tuple[Path, Results] | None:
    """The baseline this run is compared with (its resolved path and results), if any."""
    from harness.project import display_path

    compare = None
    if baseline.is_file():
        loaded = load_baseline(display_path(baseline), label, replacing=options.update_baseline)
        compare = (baseline.resolve(), loaded) if loaded is not None else None
    if options.fail_on_change and compare is None:
        raise UsageError(
            "--fail-on-change needs a baseline: none was given and "
            f"{display_path(root / REPORTS / 'baseline.json')} does not exist "
            "(create it with --update-baseline)"
        )
    return compare


def _plugin_autoloads() -> bool:
    from importlib.metadata import entry_points

    if os.environ.get(_AUTOLOAD):
        return False
    return any(ep.value == "harness.pytest_plugin" for ep in entry_points(group="pytest11"))


def _pytest_args(
    options: argparse.Namespace, paths: list[str], outputs: tuple[Path, Path]
) -> list[str]:
    """pytest's command line for the options (``outputs``: the JSON and HTML files)."""
    from harness.pytest_plugin.options import pytest_args

    json_path, html_path = outputs
    values = vars(options) | {
        "harness_scenarios_only": True,
        "harness_json": str(json_path),
        "harness_html": str(html_path),
        # Loaded here, and handed to the session (_Capture) rather than read again.
        "harness_baseline": None,
    }
    args = [*paths, *pytest_args(values)]
    lean = not options.all_pytest_plugins
    if lean or not _plugin_autoloads():
        # (Without autoload, or from a source tree without the entry point installed.)
        args += ["-p", "harness.pytest_plugin"]
    if lean and options.numprocesses is not None:
        args += ["-p", "xdist.plugin"]
    if lean:
        # pytest's unraisable-exception check runs gc.collect() five times as each
        # process ends; over a large suite's heap that was a second per process.
        args += ["-p", "no:unraisableexception"]
    return args + options.passed_on


# -- pytest --------------------------------------------------------------------------------


class _Capture:
    """A pytest plugin object that keeps the session's config, to read its harness state,
    and hands the session the baseline the command loaded (so it is read once)."""

    def __init__(self, baseline: tuple[Path, Any] | None = None, part: _Part | None = None) -> None:
        self.config: Any = None
        self.baseline = baseline
        self.part = part
        self.ctrl_c = False
        self.failed = 0  # pytest's count of failed items

    @_pytest_hookimpl(trylast=True)  # after harness's own pytest_configure made the state
    def pytest_configure(self, config: Any) -> None:
        """Keep the config; give harness's session state the loaded baseline."""
        from harness.pytest_plugin import Baseline, get_state

        self.config = config
        state = get_state(config)
        if state is not None and self.baseline is not None:
            state.baseline = Baseline(*self.baseline)
        if state is not None and self.part is not None:
            part = self.part
            state.run_paths, state.parts_to_come = part.run_paths, part.to_come
            state.ids_seen = part.ids_seen
            if part.handed is not None:  # what the parts before this one gathered
                state.ledger, state.outputs = part.handed.ledger, part.handed.outputs
                state.carried_on = True

    def pytest_sessionfinish(self, session: Any) -> None:
        """Keep pytest's count of failures (``--maxfail`` over a run's parts)."""
        self.failed = int(session.testsfailed)

    def let_go(self) -> None:
        """Let the finished session go (a run in parts, before the next part): pytest's
        assertion-rewriting import hook, which the modules first imported during the
        session keep as their loader, holds the session's config after it ends, and with
        it the session and every item (a part's worth of memory, to the end of the run)."""
        for module in list(sys.modules.values()):
            loader: Any = getattr(module, "__loader__", None)
            if getattr(loader, "config", None) is self.config:
                # The hook is off sys.meta_path once its session ended: nothing calls it.
                loader.config = loader.session = None
        self.config = None

    def pytest_keyboard_interrupt(self, excinfo: Any) -> None:
        """Ctrl-C: pytest says 2 (as for collection errors), harness 130 (harness.cli.stops)."""
        self.ctrl_c = excinfo.type is KeyboardInterrupt  # not pytest.exit()

    def state(self) -> SuiteState | None:
        """The session's harness state (None when pytest stopped before configuring)."""
        from harness.pytest_plugin import get_state

        return get_state(self.config) if self.config is not None else None


def _call_pytest(args: list[str], capture: _Capture, *, lean: bool) -> int:
    """``pytest.main`` on ``args``; its status, pytest's usage error (4) made bad input."""
    import pytest

    # Scenario items need no third-party pytest plugins, and every autoloaded one is
    # imported by the controller and by each xdist worker: on a 2-CPU machine with
    # hypothesis, Faker, anyio and pytest-recording installed that doubled the run.
    # The variable must be in the environment so that xdist workers see it too.
    saved = os.environ.get(_AUTOLOAD)
    if lean:
        os.environ[_AUTOLOAD] = "1"
    try:
        code = int(pytest.main(args, plugins=[capture]))
    finally:
        if saved is None:
            os.environ.pop(_AUTOLOAD, None)
        else:
            os.environ[_AUTOLOAD] = saved
    # pytest's usage error (4) is bad input for harness; the rest keep pytest's meaning.
    return {4: EXIT["bad_input"]}.get(code, code)


# -- after pytest --------------------------------------------------------------------------


def _write_baseline(options: argparse.Namespace, baseline: Path, results: Results) -> int | None:
    """``--update-baseline``: None when written, else the exit status."""
    from harness.project import display_path

    try:
        update_baseline(baseline, results)
    except OSError as exc:
        # Like a report that cannot be written: exit 3, but no harness bug.
        to_stderr(
            f"harness {options.command}: baseline not written: {display_path(baseline)}: "
            f"{exc.strerror or exc}",
        )
        return EXIT["internal"]
    print(f"harness: baseline updated: {display_path(baseline)}")
    return None


def _changed(diff: BaselineDiff) -> bool:
    """``--fail-on-change``: whether the run regressed or changed; a line names each."""
    # A live pass rate that fell significantly is a regression too (harness.report.passrates).
    regressions = [e.id for e in diff.regressions] + [r.id for r in diff.rate_regressions]
    changed = [e.id for e in diff.changed]
    if not regressions and not changed:
        return False
    # Named, as the summary names regressions: what to look at in the report.
    named = [f"regression {i}" for i in regressions] + [
        f"changed {i}" for i in changed if i not in regressions
    ]
    to_stderr(
        f"harness: --fail-on-change: {len(regressions)} regression(s), {len(changed)} "
        f"changed against the baseline: {'; '.join(named)}",
    )
    return True


def _check(options: argparse.Namespace) -> None:
    """What argparse cannot check: options given together, then the durations file (named
    as the user typed it; the session reads it again, as plain pytest would)."""
    from harness.pytest_plugin.options import read_durations

    if options.harness_durations and not options.harness_shard:
        raise UsageError("--durations balances shards: it needs --shard K/N")
    if options.harness_live and options.record_mode not in (None, "none"):
        raise UsageError("--live records nothing: use `harness run --live` without --record-mode")
    if options.harness_durations:
        read_durations(options.harness_durations, "--durations")
    if options.chunk_size is not None:
        if options.chunk_size < 1:
            raise UsageError(f"--chunk-size {options.chunk_size}: expected at least 1")
        unsplit = [a for a in options.passed_on if a.split("=")[0] in _PER_SESSION]
        if unsplit:
            raise UsageError(
                f"--chunk-size runs the suite as several pytest sessions, and pytest's "
                f"{unsplit[0].split('=')[0]} works within one: run without one of them"
            )


def handle(options: argparse.Namespace) -> int:
    """``harness run`` / ``harness record``; ``options.passed_on``: pytest's, after ``--``."""
    _check(options)
    root, paths = _scenario_paths(options.paths)
    # Defaults live in the project's reports/ (where baseline.json is committed), so a
    # run started from a subfolder writes the same files; given paths are cwd-relative.
    given_json, given_html = options.harness_json, options.harness_html
    json_path = Path(given_json) if given_json else root / REPORTS / "results.json"
    html_path = Path(given_html) if given_html else root / REPORTS / "report.html"
    baseline, label = _baseline_file(options, root)
    load_plugin_options(options.harness_plugin)
    compare = _comparison(options, root, baseline, label)

    parts = _parts(paths, options.chunk_size)
    if parts > 1:
        status, capture = _run_in_parts(options, paths, (json_path, html_path), compare, parts)
    else:
        args = _pytest_args(options, paths, (json_path, html_path))
        capture = _Capture(compare)  # the baseline, as --harness-baseline would load it
        status = _call_pytest(args, capture, lean=not options.all_pytest_plugins)
    if capture.ctrl_c:
        return EXIT["interrupted"]
    state = capture.state()
    if state is None or status not in (0, 1):
        return status
    final, diff = state.outputs.final, state.outputs.diff
    if options.update_baseline and final is not None:
        failed = _write_baseline(options, baseline, final)
        if failed is not None:
            return failed
    if options.fail_on_change and status == 0 and diff is not None and _changed(diff):
        return EXIT["failed"]
    return status


# -- a run in parts (--chunk-size) -----------------------------------------------------------

# pytest options whose meaning needs the whole suite in one session: --lf and --ff pick
# from the last failures of the session's items, --sw stops and resumes within one, and
# --junitxml would be written by each part over the last.
_PER_SESSION = frozenset(
    {"--lf", "--last-failed", "--ff", "--failed-first", "--sw", "--stepwise"}
    | {"--sw-skip", "--stepwise-skip", "--junitxml", "--junit-xml"}
)
# Folders pytest does not look into by default (its norecursedirs), for the count alone.
_NOT_WALKED = frozenset({"CVS", "_darcs", "build", "dist", "node_modules", "venv", "{arch}"})


class _Handed(NamedTuple):
    """What the parts of a run so far gathered, for the next part to go on with."""

    ledger: CollectionLedger
    outputs: SessionOutputs


class _Part(NamedTuple):
    """What a part's session is told: the whole run's paths, whether parts come after
    it, and what the parts before it handed on (None for the first)."""

    run_paths: tuple[str, ...]
    to_come: bool
    handed: _Handed | None
    ids_seen: list[str] | None = None  # the listing round's (with --shard)


def _parts(paths: list[str], chunk_size: int | None) -> int:
    """How many parts a run of ``paths`` is split into: 1 without --chunk-size, else its
    scenario files (counted as pytest would find them) over the size, rounded up."""
    if chunk_size is None:
        return 1
    from harness.pytest_plugin.options import SUFFIXES
    from harness.results import ScenarioId

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


def _run_in_parts(
    options: argparse.Namespace,
    paths: list[str],
    outputs: tuple[Path, Path],
    compare: tuple[Path, Any] | None,
    total: int,
) -> tuple[int, _Capture]:
    """The run as ``total`` pytest sessions, one after another in this process, each
    collecting the scenario files of its part (``harness.shards.part_of``, by path), each
    handing what it gathered to the next; the last writes the reports and the summary of
    the whole run, as one session would. A part that stops the run (Ctrl-C, ``-x``,
    collection errors) is the last. Its status and the last part's capture."""
    import tempfile

    from harness.results import ScenarioId
    from harness.shards import part_of

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
    with tempfile.TemporaryDirectory(prefix="harness-parts-") as folder:
        extra: list[str] = []
        if options.harness_shard is not None:
            listed = Path(folder, "shard-ids.json")
            ids = _ids_selected(options, outputs, runs, total)
            if ids is None:
                stopped = _Capture(compare)
                stopped.ctrl_c = True
                return EXIT["interrupted"], stopped
            listed.write_text(json.dumps(ids), encoding="utf-8")
            extra = ["--harness-shard-ids", str(listed)]
        return _parts_run(options, paths, outputs, compare, total, runs, extra)


def _ids_selected(
    options: argparse.Namespace,
    outputs: tuple[Path, Path],
    runs: list[tuple[int, list[str]]],
    total: int,
) -> list[str] | None:
    """What every part selects (after ``-k``, ``-m``, the paths), from a round of quiet
    ``--collect-only`` sessions: the ids a shard plan splits. A part that fails to
    collect lists what it could; its session in the run proper says what went wrong.
    None: Ctrl-C stopped the listing (and the run)."""
    import contextlib
    import gc

    seen: list[str] = []
    for index, part_paths in runs:
        capture = _Capture(None, _Part((), False, None, seen))
        args = _pytest_args(options, part_paths, outputs)  # (a listing writes nothing)
        args += ["--harness-part", f"{index}/{total}", "--collect-only"]
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            _call_pytest(args, capture, lean=not options.all_pytest_plugins)
        if capture.ctrl_c:
            return None
        capture.let_go()
        del capture
        gc.collect()
    return seen


def _parts_run(
    options: argparse.Namespace,
    paths: list[str],
    outputs: tuple[Path, Path],
    compare: tuple[Path, Any] | None,
    total: int,
    runs: list[tuple[int, list[str]]],
    extra: list[str],
) -> tuple[int, _Capture]:
    """The parts' sessions, one after another (``_run_in_parts``)."""
    import gc

    statuses: list[int] = []
    handed: _Handed | None = None
    failed, maxfail, maxfail_left = 0, 0, None
    capture = _Capture(compare)  # each part's, in turn
    for n, (index, part_paths) in enumerate(runs, 1):
        part = _Part(tuple(paths), n < len(runs), handed)
        capture = _Capture(compare, part)
        args = [*_pytest_args(options, part_paths, outputs), "--harness-part", f"{index}/{total}"]
        args += extra
        if n > 1:
            args.append("--no-header")  # the first part's said it all
        if maxfail_left is not None:
            args.append(f"--maxfail={maxfail_left}")  # the last one given wins
        statuses.append(_call_pytest(args, capture, lean=not options.all_pytest_plugins))
        state = capture.state()
        if capture.ctrl_c or state is None or not state.handed_on:
            break  # the last part, or one that stopped the run: it wrote what there is
        if n == 1:  # the user's (later parts are given what is left of it)
            maxfail = int(capture.config.option.maxfail or 0)
        failed += capture.failed
        maxfail_left = maxfail - failed if maxfail else None
        handed = _Handed(state.ledger, state.outputs)
        capture.let_go()
        # The part's session (its items, reports and plugins) is held in reference cycles:
        # let it go before the next part collects, so that memory holds one part.
        capture, state = _Capture(compare), None
        gc.collect()
    return _joined(statuses), capture


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
