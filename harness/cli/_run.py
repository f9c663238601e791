"""``harness run`` and ``harness record``: scenarios through pytest, then the baseline.

pytest runs in this process (harness.cli._session); a run in parts, in several
(harness.cli._parts).
"""

from __future__ import annotations

import argparse
import functools
from pathlib import Path
from typing import TYPE_CHECKING

import pluggy

from harness._exitcodes import EXIT
from harness.cli._baseline import load_baseline, update_baseline
from harness.cli._hints import refuse_misnamed, say_misnamed, say_nothing_to_record
from harness.cli._parsing import Parser, UsageError, to_stderr
from harness.cli._parts import PER_SESSION, Around, count_parts, run_in_parts
from harness.cli._plugins import load_plugin_options
from harness.cli._session import Capture, call_pytest, pytest_args

if TYPE_CHECKING:
    from harness._baseline import BaselineDiff
    from harness._results import Results

__all__ = ["add_arguments", "declare", "handle"]

REPORTS = Path("reports")
# A plain run's part size where the platform forks (docs/running.md#large-suites): a suite
# of more scenario files runs in parts, so that its memory is that of this many files
# whatever its size; measured in docs/performance.md#suites-past-one-machine.
DEFAULT_CHUNK_SIZE = 1000
_AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"

# pytest.hookimpl, without importing pytest where the command does not run it.
_pytest_hookimpl = pluggy.HookimplMarker("pytest")


# -- the options ---------------------------------------------------------------------------


def add_arguments(parser: Parser) -> None:
    """``harness run``'s description and options."""
    declare(parser, record=False)


def declare(parser: Parser, *, record: bool) -> None:
    """The options of ``harness run``, or of ``harness record`` (record mode ``once``).

    Those a session reads are the pytest plugin's (``harness.pytest_plugin._options``),
    declared there once, with the flags this command gives them; the rest are its own.
    """
    from harness.pytest_plugin._options import OPTIONS

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
        help="run the suite about N scenario files at a time, one pytest session each in "
        "a process of its own, into one set of results and reports: memory stays that of N "
        "files; 0: one session (default: the project's [tool.harness] chunk_size, else "
        f"{DEFAULT_CHUNK_SIZE}: a smaller suite is one session; docs/running.md#large-suites)",
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
    from harness._project import project_root
    from harness._results import ScenarioId

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
    from harness._project import display_path, project_root
    from harness._results import ScenarioId

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
    from harness._project import display_path

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


# -- after pytest --------------------------------------------------------------------------


def _write_baseline(options: argparse.Namespace, baseline: Path, results: Results) -> int | None:
    """``--update-baseline``: None when written, else the exit status."""
    from harness._project import display_path

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
    # A live pass rate that fell significantly is a regression too (harness.report._passrates).
    regressions = [e.id for e in diff.regressions]
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
    from harness.pytest_plugin._options import read_durations

    if options.harness_durations and not options.harness_shard:
        raise UsageError("--durations balances shards: it needs --shard K/N")
    if options.harness_live and options.record_mode not in (None, "none"):
        raise UsageError("--live records nothing: use `harness run --live` without --record-mode")
    budget = options.harness_max_requests is not None or options.harness_max_cost is not None
    if budget and not options.harness_live:
        raise UsageError(
            "--max-requests and --max-cost budget a --live run (a replay sends no request): "
            "add --live"
        )
    if options.harness_durations:
        read_durations(options.harness_durations, "--durations")
    if options.chunk_size:  # given, and not 0 (one session)
        from harness.cli._forked import can_fork

        if not can_fork():
            raise UsageError(
                "--chunk-size runs each part in a process forked from harness's, and this "
                "platform does not fork (Windows): run without it"
            )
        if options.chunk_size < 0:
            raise UsageError(
                f"--chunk-size {options.chunk_size}: expected a number of scenario files "
                "(0: one session)"
            )
        unsplit = _within_one_session(options)
        if unsplit:
            raise UsageError(
                f"--chunk-size runs the suite as several pytest sessions, and pytest's "
                f"{unsplit[0].split('=')[0]} works within one: run without one of them"
            )


def _within_one_session(options: argparse.Namespace) -> list[str]:
    """pytest's options given that work within one session (PER_SESSION), as given."""
    return [a for a in options.passed_on if a.split("=")[0] in PER_SESSION]


def _chunk_size(options: argparse.Namespace, root: Path) -> int | None:
    """The run's parts' size: ``--chunk-size``, else the project's ``[tool.harness]
    chunk_size``, else DEFAULT_CHUNK_SIZE, where the run can be split (a platform that
    forks, none of pytest's options that work within one session given); None (or 0):
    one session."""
    if options.chunk_size is not None:
        return options.chunk_size or None
    from harness._project import project_config
    from harness.cli._forked import can_fork

    value = project_config(root).get("chunk_size", DEFAULT_CHUNK_SIZE)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(
            f"{root / 'pyproject.toml'}: [tool.harness] chunk_size must be a number of "
            f"scenario files (0: one session), not {value!r}"
        )
    if not can_fork() or _within_one_session(options):
        return None
    return value or None


def _project_coverage(root: Path) -> bool:
    """The project's ``[tool.harness] coverage`` (false when absent): the run's project
    decides, wherever the command starts (the plugin reads the current directory's)."""
    from harness._project import project_config

    value = project_config(root).get("coverage", False)
    if not isinstance(value, bool):
        raise UsageError(
            f"{root / 'pyproject.toml'}: [tool.harness] coverage must be true or false, "
            f"not {value!r}"
        )
    return value


def handle(options: argparse.Namespace) -> int:
    """``harness run`` / ``harness record``; ``options.passed_on``: pytest's, after ``--``."""
    _check(options)
    refuse_misnamed(options.paths)
    root, paths = _scenario_paths(options.paths)
    # Defaults live in the project's reports/ (where baseline.json is committed), so a
    # run started from a subfolder writes the same files; given paths are cwd-relative.
    given_json, given_html = options.harness_json, options.harness_html
    json_path = Path(given_json) if given_json else root / REPORTS / "results.json"
    html_path = Path(given_html) if given_html else root / REPORTS / "report.html"
    baseline, label = _baseline_file(options, root)
    options.harness_coverage = options.harness_coverage or _project_coverage(root)
    load_plugin_options(options.harness_plugin)
    compare = _comparison(options, root, baseline, label)

    parts = count_parts(paths, _chunk_size(options, root))
    if parts > 1:
        from harness.cli._forked import PartCrashed

        files = (json_path, html_path)
        try:
            ended = functools.partial(_after, options, baseline)
            status, capture = run_in_parts(options, paths, files, Around(compare, ended), parts)
        except PartCrashed as exc:  # killed (out of memory?), or harness's bug (traced)
            to_stderr(f"harness {options.command}: {exc}")
            return EXIT["internal"]
    else:
        args = pytest_args(options, paths, (json_path, html_path))
        capture = Capture(compare)  # the baseline, as --harness-baseline would load it
        status = call_pytest(args, capture, lean=not options.all_pytest_plugins)
    if status == EXIT["nothing"]:
        say_misnamed(paths, options.command)
    elif options.command == "record":
        say_nothing_to_record(paths)
    return _after(options, baseline, capture, status)


def _after(options: argparse.Namespace, baseline: Path, capture: Capture, status: int) -> int:
    """The run's exit status, once the session that wrote its results ended: the
    baseline updated (--update-baseline), a change made a failure (--fail-on-change)."""
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
