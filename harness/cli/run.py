"""``harness run`` and ``harness record``: scenarios through pytest, then the baseline.

The command calls ``pytest.main`` in this process rather than starting a pytest
subprocess: one interpreter start-up less per run, pytest's own output and exit status
as they are, and the session's results at hand for the summary and the baseline (no
re-reading of results.json). pytest-xdist's workers are separate processes anyway.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pluggy

from harness.cli.baseline import load_baseline, update_baseline
from harness.cli.exitcodes import EXIT
from harness.cli.parsing import Parser, UsageError, to_stderr
from harness.cli.plugins import load_plugin_options

if TYPE_CHECKING:
    from harness.baseline import BaselineDiff
    from harness.results import Results

__all__ = ["add_arguments", "declare", "handle"]

REPORTS = Path("reports")
_AUTOLOAD = "PYTEST_DISABLE_PLUGIN_AUTOLOAD"

# pytest.hookimpl, without importing pytest where the command does not run it.
_pytest_hookimpl = pluggy.HookimplMarker("pytest")


# -- the options ---------------------------------------------------------------------------


def _workers(value: str) -> str:
    if value in ("auto", "logical") or (value.isdigit() and int(value) >= 0):
        return value
    raise argparse.ArgumentTypeError(f"expected a number of workers or 'auto', got {value!r}")


def add_arguments(parser: Parser) -> None:
    """``harness run``'s description and options."""
    declare(parser, record=False)


def declare(parser: Parser, *, record: bool) -> None:
    """The options of ``harness run``, or of ``harness record`` (record mode ``once``)."""
    parser.description = (
        "Run scenarios through pytest (record mode 'once' by default). "
        if record
        else "Run scenarios through pytest. "
    ) + "Options pytest knows but harness does not go after `--`."
    parser.passes_on = True
    parser.unknown_hint = "; pytest options go after `--`: harness run scenarios/ -- --maxfail 3"
    _add_selection(parser)
    _add_recording(parser, record)
    _add_scale(parser)
    _add_outputs(parser)


def _add_selection(sub: argparse.ArgumentParser) -> None:
    """Which scenarios run, and how (PATHS, -k, -m, -n, -p)."""
    sub.add_argument(
        "paths",
        nargs="*",
        metavar="PATHS",
        help="scenario files or folders (default: scenarios/ of the project)",
    )
    sub.add_argument("-k", dest="keyword", metavar="EXPR", help="select by name (pytest -k)")
    sub.add_argument("-m", dest="markexpr", metavar="MARK", help="select by tag (pytest -m)")
    sub.add_argument(
        "-n", dest="workers", type=_workers, metavar="N", help="run in N processes (xdist)"
    )
    sub.add_argument(
        "-p",
        dest="plugins",
        action="append",
        default=[],
        metavar="MODULE",
        help="load a harness plugin module (repeatable)",
    )


def _add_recording(sub: argparse.ArgumentParser, record: bool) -> None:
    """--record-mode (``once`` for harness record) and --disable-recording."""
    from harness.llm.config import RECORD_MODES

    sub.add_argument(
        "--record-mode",
        choices=RECORD_MODES,
        default="once" if record else None,
        help="cassette record mode (default: "
        + ("once: record what the cassette lacks)" if record else "none: replay only)"),
    )
    sub.add_argument(
        "--disable-recording",
        action="store_true",
        help="run recorded scenarios live and write no cassette",
    )


def _count(value: str) -> int:
    if value.isdigit() and int(value) >= 1:
        return int(value)
    raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {value!r}")


def _shard(value: str) -> str:
    from harness.shards import Shard

    try:
        return str(Shard.parse(value))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_scale(sub: argparse.ArgumentParser) -> None:
    """Repeats, live runs, and shards (docs/running.md, "Repeats, live runs and shards")."""
    sub.add_argument(
        "--repeat",
        type=_count,
        metavar="N",
        help="run each scenario N times: pass rates, flaky scenarios (a file's repeat: wins)",
    )
    sub.add_argument(
        "--live",
        action="store_true",
        help="talk to the real endpoint: no cassette read or written, the SDK retries 429s",
    )
    sub.add_argument(
        "--concurrency",
        type=_count,
        metavar="N",
        help="scenario runs in flight at once in each process (default 1)",
    )
    sub.add_argument(
        "--shard",
        type=_shard,
        metavar="K/N",
        help="run shard K of N (for CI machines; join them with `harness merge`)",
    )
    sub.add_argument(
        "--durations",
        metavar="F",
        help="with --shard: balance the shards by the wall times in this results.json",
    )


def _add_outputs(sub: argparse.ArgumentParser) -> None:
    """The reports, the baseline, and which pytest plugins load."""
    sub.add_argument("--json", metavar="F", help="results file (default: reports/results.json)")
    sub.add_argument("--html", metavar="F", help="HTML report (default: reports/report.html)")
    sub.add_argument(
        "--baseline",
        metavar="F",
        help="results to compare with (default: reports/baseline.json when it exists)",
    )
    sub.add_argument(
        "--update-baseline", action="store_true", help="write this run's results as baseline"
    )
    sub.add_argument(
        "--fail-on-change",
        action="store_true",
        help="exit 1 on any regression or change against the baseline",
    )
    sub.add_argument(
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
    if options.baseline:
        baseline = Path(options.baseline)
        if not baseline.is_file() and not options.update_baseline:
            raise UsageError(f"--baseline {options.baseline}: no such file")
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
    options: argparse.Namespace, paths: list[str], outputs: tuple[Path, Path], extra: list[str]
) -> list[str]:
    """pytest's command line for the options (``outputs``: the JSON and HTML files)."""
    json_path, html_path = outputs
    args = [*paths, "--harness-scenarios-only"]
    args += ["--harness-json", str(json_path), "--harness-html", str(html_path)]
    if options.keyword:
        args += ["-k", options.keyword]
    if options.markexpr:
        args += ["-m", options.markexpr]
    if options.workers is not None:
        args += ["-n", options.workers]
    for module in options.plugins:
        args += ["--harness-plugin", module]
    if options.record_mode:
        args += ["--record-mode", options.record_mode]
    if options.disable_recording:
        args.append("--disable-recording")
    if options.repeat is not None:
        args += ["--harness-repeat", str(options.repeat)]
    if options.live:
        args.append("--harness-live")
    if options.concurrency is not None:
        args += ["--harness-concurrency", str(options.concurrency)]
    if options.shard:
        args += ["--harness-shard", options.shard]
    if options.durations:
        args += ["--harness-durations", options.durations]
    lean = not options.all_pytest_plugins
    if lean or not _plugin_autoloads():
        # (Without autoload, or from a source tree without the entry point installed.)
        args += ["-p", "harness.pytest_plugin"]
    if lean and options.workers is not None:
        args += ["-p", "xdist.plugin"]
    if lean:
        # pytest's unraisable-exception check runs gc.collect() five times as each
        # process ends; over a large suite's heap that was a second per process.
        args += ["-p", "no:unraisableexception"]
    return args + extra


# -- pytest --------------------------------------------------------------------------------


class _Capture:
    """A pytest plugin object that keeps the session's config, to read its harness state,
    and hands the session the baseline the command loaded (so it is read once)."""

    def __init__(self, baseline: tuple[Path, Any] | None = None) -> None:
        self.config: Any = None
        self.baseline = baseline

    @_pytest_hookimpl(trylast=True)  # after harness's own pytest_configure made the state
    def pytest_configure(self, config: Any) -> None:
        """Keep the config; give harness's session state the loaded baseline."""
        from harness.pytest_plugin import get_state

        self.config = config
        state = get_state(config)
        if state is not None and self.baseline is not None:
            state.baseline_path, state.baseline = self.baseline

    def state(self) -> Any:
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


def handle(options: argparse.Namespace) -> int:
    """``harness run`` / ``harness record``; ``options.passed_on``: pytest's, after ``--``."""
    if options.durations and not options.shard:
        raise UsageError("--durations balances shards: it needs --shard K/N")
    if options.live and options.record_mode not in (None, "none"):
        raise UsageError("--live records nothing: use `harness run --live` without --record-mode")
    root, paths = _scenario_paths(options.paths)
    # Defaults live in the project's reports/ (where baseline.json is committed), so a
    # run started from a subfolder writes the same files; given paths are cwd-relative.
    json_path = Path(options.json) if options.json else root / REPORTS / "results.json"
    html_path = Path(options.html) if options.html else root / REPORTS / "report.html"
    baseline, label = _baseline_file(options, root)
    load_plugin_options(options.plugins)
    compare = _comparison(options, root, baseline, label)

    args = _pytest_args(options, paths, (json_path, html_path), options.passed_on)
    capture = _Capture(compare)  # the baseline, as --harness-baseline would load it
    status = _call_pytest(args, capture, lean=not options.all_pytest_plugins)
    state = capture.state()
    if state is None or status not in (0, 1):
        return status
    if options.update_baseline and state.final is not None:
        failed = _write_baseline(options, baseline, state.final)
        if failed is not None:
            return failed
    changes_fail = options.fail_on_change and status == 0 and state.diff is not None
    if changes_fail and _changed(state.diff):
        return EXIT["failed"]
    return status
