"""The ``harness`` command: run suites (through pytest), validate files, list plugins.

``harness run`` calls ``pytest.main`` in this process rather than starting a pytest
subprocess: one interpreter start-up less per run, pytest's own output and exit
status as they are, and the session's results at hand for the summary and the baseline
(no re-reading of results.json). pytest-xdist's workers are separate processes anyway.
``harness report``, ``serve`` and ``freeze`` hand their arguments to the functions of
the modules that implement them.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pluggy

from harness.cli.baseline import load_baseline, update_baseline
from harness.cli.exitcodes import EXIT
from harness.cli.parsing import Parser, UsageError

__all__ = ["EXIT", "main"]

# Exit statuses of `harness run` (docs/running.md).

REPORTS = Path("reports")
# What `harness validate DIR` does not descend into (pytest's norecursedirs defaults).
_SKIP_DIRS = {"node_modules", "venv", "build", "dist", "_darcs", "CVS", "__pycache__"}

_DELEGATES = {
    "report": ("harness.cli.report", "report_main", "render saved results as HTML"),
    "serve": ("harness.cli.serve", "serve_main", "an OpenAI-compatible server for a scenario"),
    "freeze": ("harness.cli.freeze", "freeze_main", "a scenario file from a recorded cassette"),
}


def _workers(value: str) -> str:
    if value in ("auto", "logical") or (value.isdigit() and int(value) >= 0):
        return value
    raise argparse.ArgumentTypeError(f"expected a number of workers or 'auto', got {value!r}")


def _parser() -> Parser:
    from harness import __version__
    from harness.llm.config import RECORD_MODES

    parser = Parser(
        prog="harness",
        description="Test and simulate LLM agent loops: scenario files, cassettes, reports.",
    )
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    for name, record in (("run", False), ("record", True)):
        sub = commands.add_parser(
            name,
            help="record cassettes: run with --record-mode once"
            if record
            else "run scenario files through pytest and write reports/",
            description=(
                "Run scenarios through pytest (record mode 'once' by default). "
                if record
                else "Run scenarios through pytest. "
            )
            + "Options pytest knows but harness does not go after `--`.",
        )
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

    plugin_help = "load a harness plugin module first (repeatable), as harness run -p does"
    sub = commands.add_parser(
        "validate",
        help="check scenario files without running them",
        description="Check scenario files without running them: every problem of every file "
        "is printed as path:line: field: message. Exit 0 when all are valid, 2 otherwise.",
    )
    sub.add_argument("paths", nargs="+", metavar="PATHS", help="scenario files or folders")
    sub.add_argument(
        "-p", dest="plugins", action="append", default=[], metavar="MODULE", help=plugin_help
    )

    commands.add_parser(
        "schema",
        help="print the JSON Schema of scenario files",
        description="Print the JSON Schema of scenario files, for editors "
        "(# yaml-language-server: $schema=...) and other tools.",
    )

    sub = commands.add_parser(
        "plugins",
        help="list plugins, their hooks and what they registered",
        description="List the plugins harness loads here (built-ins, entry points, the "
        "project's [tool.harness] plugins, -p), with their hooks and what they registered.",
    )
    sub.add_argument(
        "-p", dest="plugins", action="append", default=[], metavar="MODULE", help=plugin_help
    )
    sub.add_argument("--json", action="store_true", help="print JSON")

    for name, (_, _, help_text) in _DELEGATES.items():
        commands.add_parser(name, help=help_text, add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``harness`` console script; returns the exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in _DELEGATES:
        command = args[0]
        return _guarded(command, lambda: _delegate(command, args[1:]))
    extra: list[str] = []
    if args and args[0] in ("run", "record") and "--" in args:
        cut = args.index("--")
        args, extra = args[:cut], args[cut + 1 :]
    parser = _parser()
    try:
        options, unknown = parser.parse_known_args(args)
    except SystemExit as exc:  # --help, --version (0) and usage errors (2)
        return int(exc.code or 0)
    command = options.command
    if command is None:
        parser.print_help(sys.stderr)
        return EXIT["bad_input"]
    if unknown:
        hint = (
            "; pytest options go after `--`: harness run scenarios/ -- --maxfail 3"
            if command in ("run", "record")
            else ""
        )
        print(
            f"harness {command}: unrecognized arguments: {' '.join(unknown)}{hint}",
            file=sys.stderr,
        )
        return EXIT["bad_input"]
    handlers: dict[str, Callable[[argparse.Namespace, list[str]], int]] = {
        "run": _run,
        "record": _run,
        "validate": _validate,
        "schema": _schema,
        "plugins": _plugins,
    }
    return _guarded(command, lambda: handlers[command](options, extra))


def _guarded(command: str, call: Callable[[], int]) -> int:
    """Run a command: bad input exits 2 with its message, a harness bug 3 with a traceback."""
    from harness.errors import HarnessError

    try:
        return call()
    except (UsageError, HarnessError) as exc:
        print(f"harness {command}: {exc}", file=sys.stderr)
        return EXIT["bad_input"]
    except KeyboardInterrupt:
        return EXIT["interrupted"]
    except Exception as exc:
        import traceback

        traceback.print_exc()
        print(f"harness {command}: internal error (a bug in harness): {exc}", file=sys.stderr)
        return EXIT["internal"]


# -- run / record ----------------------------------------------------------------------------


# pytest.hookimpl, without importing pytest where the command does not run it.
_pytest_hookimpl = pluggy.HookimplMarker("pytest")


class _Capture:
    """A pytest plugin object that keeps the session's config, to read its harness state,
    and hands the session the baseline the command loaded (so it is read once)."""

    def __init__(self, baseline: tuple[Path, Any] | None = None) -> None:
        self.config: Any = None
        self.baseline = baseline

    @_pytest_hookimpl(trylast=True)  # after harness's own pytest_configure made the state
    def pytest_configure(self, config: Any) -> None:
        from harness.pytest_plugin import get_state

        self.config = config
        state = get_state(config)
        if state is not None and self.baseline is not None:
            state.baseline_path, state.baseline = self.baseline


def _load_plugins(modules: list[str]) -> None:
    """Load ``-p`` modules now, so that one that does not load is named as the user did."""
    from harness.plugins import PluginError, get_plugins, load_plugin_modules

    if not modules:
        return
    get_plugins()  # discovery's own errors (pyproject, entry points) are not -p's
    for module in modules:
        try:
            load_plugin_modules([module])
        except PluginError as exc:
            # harness.plugins says where a module came from as "--harness-plugin: ";
            # here it came from -p.
            message = str(exc).removeprefix("--harness-plugin: ")
            raise UsageError(f"-p {module}: {message}") from None


def _plugin_autoloads() -> bool:
    from importlib.metadata import entry_points

    if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return False
    return any(ep.value == "harness.pytest_plugin" for ep in entry_points(group="pytest11"))


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
    print(
        f"harness: the paths lie in {len(roots)} projects ({listed}); reports, the baseline "
        f"and ids use {here}, the current directory's",
        file=sys.stderr,
    )
    return here


def _run(options: argparse.Namespace, extra: list[str]) -> int:
    import pytest

    from harness.project import display_path, project_root
    from harness.results import ScenarioId

    paths = options.paths
    # A node id (path::name) names a file too.
    missing = [p for p in paths if not Path(ScenarioId.file_of(p)).exists()]
    if missing:
        raise UsageError(f"no such file or folder: {', '.join(missing)}")
    root = _root_of(paths) if paths else project_root()
    if not paths:
        default = root / "scenarios"
        paths = [display_path(default) if default.is_dir() else "."]

    # Defaults live in the project's reports/ (where baseline.json is committed), so a
    # run started from a subfolder writes the same files; given paths are cwd-relative.
    json_path = Path(options.json) if options.json else root / REPORTS / "results.json"
    html_path = Path(options.html) if options.html else root / REPORTS / "report.html"
    if options.baseline:
        baseline = Path(options.baseline)
        label = "--baseline"
        if not baseline.is_file() and not options.update_baseline:
            raise UsageError(f"--baseline {options.baseline}: no such file")
    else:
        baseline = root / REPORTS / "baseline.json"
        label = "default baseline"  # the user never typed --baseline: name the file
    _load_plugins(options.plugins)
    compare = None
    if baseline.is_file():
        shown = display_path(baseline)
        loaded = load_baseline(shown, label, replacing=options.update_baseline)
        compare = (baseline.resolve(), loaded) if loaded is not None else None
    if options.fail_on_change and compare is None:
        raise UsageError(
            "--fail-on-change needs a baseline: none was given and "
            f"{display_path(root / REPORTS / 'baseline.json')} does not exist "
            "(create it with --update-baseline)"
        )

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
    args += extra

    capture = _Capture(compare)  # the baseline, as --harness-baseline would load it
    # Scenario items need no third-party pytest plugins, and every autoloaded one is
    # imported by the controller and by each xdist worker: on a 2-CPU machine with
    # hypothesis, Faker, anyio and pytest-recording installed that doubled the run.
    # The variable must be in the environment so that xdist workers see it too.
    saved = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    if lean:
        os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        code = int(pytest.main(args, plugins=[capture]))
    finally:
        if saved is None:
            os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
        else:
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = saved
    from harness.pytest_plugin import get_state

    state = get_state(capture.config) if capture.config is not None else None
    # pytest's usage error (4) is bad input for harness; the rest keep pytest's meaning.
    status = {4: EXIT["bad_input"]}.get(code, code)
    if state is None or status not in (0, 1):
        return status

    if options.update_baseline and state.final is not None:
        try:
            update_baseline(baseline, state.final, compare[1] if compare else None)
        except OSError as exc:
            # Like a report that cannot be written: exit 3, but no harness bug.
            print(
                f"harness {options.command}: baseline not written: {display_path(baseline)}: "
                f"{exc.strerror or exc}",
                file=sys.stderr,
            )
            return EXIT["internal"]
        print(f"harness: baseline updated: {display_path(baseline)}")
    if options.fail_on_change and status == 0 and state.diff is not None:
        regressions = [e.id for e in state.diff.regressions]
        changed = [e.id for e in state.diff.changed]
        if regressions or changed:
            # Named, as the summary names regressions: what to look at in the report.
            named = [f"regression {i}" for i in regressions] + [
                f"changed {i}" for i in changed if i not in regressions
            ]
            print(
                f"harness: --fail-on-change: {len(regressions)} regression(s), {len(changed)} "
                f"changed against the baseline: {'; '.join(named)}",
                file=sys.stderr,
            )
            return EXIT["failed"]
    return status


# -- validate / schema / plugins ------------------------------------------------------------


def _scenario_files(paths: list[str]) -> list[Path]:
    from harness.scenario import SUFFIX

    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for found in sorted(path.rglob(f"*{SUFFIX}")):
                parts = found.relative_to(path).parts[:-1]
                if not any(p.startswith(".") or p in _SKIP_DIRS for p in parts):
                    files.append(found)
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"no such file or folder: {given}")
    return files


def _validate(options: argparse.Namespace, extra: list[str]) -> int:
    from harness.errors import HarnessError
    from harness.scenario import load_scenario

    _load_plugins(options.plugins)
    files = _scenario_files(options.paths)
    if not files:
        print(f"no scenario files (*.scenario.yaml) in {', '.join(options.paths)}")
        return EXIT["nothing"]
    bad = 0
    for file in files:
        try:
            load_scenario(file)
        except HarnessError as exc:
            bad += 1
            print(str(exc))
    if bad:
        print(f"{bad} of {len(files)} scenario file(s) invalid", file=sys.stderr)
        return EXIT["bad_input"]
    print(f"{len(files)} scenario(s) OK")
    return EXIT["passed"]


def _schema(options: argparse.Namespace, extra: list[str]) -> int:
    from harness.scenario.schema import json_schema

    print(json.dumps(json_schema(), indent=2))
    return EXIT["passed"]


def _plugin_origins() -> dict[str, str]:
    from importlib.metadata import entry_points

    from harness.plugins import DEFAULT_PLUGINS
    from harness.project import project_config

    origins = {name: "built-in" for name in DEFAULT_PLUGINS}
    for ep in entry_points(group="harness"):
        origins[ep.name] = f"entry point {ep.value} ({ep.dist.name if ep.dist else '?'})"
    for module in project_config().get("plugins", []):
        origins[module] = "pyproject.toml [tool.harness] plugins"
    return origins


def _plugins(options: argparse.Namespace, extra: list[str]) -> int:
    from harness.plugins import get_plugins

    _load_plugins(options.plugins)
    plugins = get_plugins()
    for kind in ("planners", "tools", "llms", "expectations"):
        plugins.registry(kind)  # fills plugins.registered
    origins = _plugin_origins()
    rows = []
    for name, plugin in plugins.plugins():
        hooks = sorted(caller.name for caller in plugins.pm.get_hookcallers(plugin) or [])
        registered = plugins.registered.get(name)
        rows.append(
            {
                "name": name,
                "origin": origins.get(name, "-p / --harness-plugin"),
                "file": getattr(plugin, "__file__", None),
                "hooks": hooks,
                "registered": {
                    kind: list(getattr(registered, kind))
                    for kind in ("planners", "tools", "llms", "expectations")
                    if registered is not None and getattr(registered, kind)
                },
            }
        )
    if options.json:
        print(json.dumps(rows, indent=2))
        return EXIT["passed"]
    for row in rows:
        print(f"{row['name']}  ({row['origin']})")
        print(f"  hooks: {', '.join(row['hooks']) or 'none'}")
        for kind, names in row["registered"].items():
            print(f"  {kind}: {', '.join(names)}")
    return EXIT["passed"]


# -- report / serve / freeze ------------------------------------------------------------------


def _delegate(command: str, argv: list[str]) -> int:
    module_name, function, _ = _DELEGATES[command]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not module_name.startswith(exc.name):
            raise
        module = None
    target = getattr(module, function, None) if module is not None else None
    if target is None:
        print(
            f"harness {command}: not available yet ({module_name}.{function} is missing "
            "from this installation)",
            file=sys.stderr,
        )
        return EXIT["bad_input"]
    return int(target(argv) or 0)
