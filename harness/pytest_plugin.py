"""pytest integration: scenario files are test items, their results become results.json.

Loaded through the ``pytest11`` entry point, so it is active in every pytest session of
the environment: everything here stays inert (and cheap to import) until a
``*.scenario.yaml`` file is collected or a ``--harness-*`` option is given.

- Collection: one item per ``*.scenario.yaml`` file (other YAML is ignored); its tags
  become registered markers; a file that does not load is a collection error showing
  the ``path:line: field: message`` lines, no traceback.
- Results: each item's ScenarioResult travels on its test report as JSON (xdist ships a
  report's ``__dict__`` to the controller), so a serial run and an ``-n N`` run build
  results.json the same way, in the one process that writes files.
- Exit status: 2 when a scenario file failed to load (also under xdist, which otherwise
  runs on and exits 1), 3 when harness crashed (an exception raised in harness's own code;
  one raised in a plugin is that scenario's error) or a report could not be written.
- Reports are not written when the session stopped part way (Ctrl-C, collection errors).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shlex
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.cli.exitcodes import EXIT
from harness.llm.config import RECORD_MODES

if TYPE_CHECKING:
    from harness.agent import Agent
    from harness.baseline import BaselineDiff
    from harness.results import Results, ScenarioResult
    from harness.scenario import Scenario

__all__ = [
    "SUFFIX",
    "HarnessFixture",
    "ScenarioFile",
    "ScenarioItem",
    "SuiteState",
    "diff_against_baseline",
    "format_failure",
    "get_state",
    "trajectory_lines",
]

SUFFIX = ".scenario.yaml"

# The pytest-recording plugin, under the names pytest may register it with.
_RECORDING = ("recording", "pytest_recording.plugin")


# -- options -------------------------------------------------------------------------------


def _plugin_args(pluginmanager: pytest.PytestPluginManager) -> list[str]:
    """Every ``-p`` value of the session: ini ``addopts``, ``PYTEST_ADDOPTS``, command line."""
    config = pluginmanager.get_plugin("pytestconfig")
    # pytest parses all three into known_args_namespace before it loads any plugin.
    known = getattr(config, "known_args_namespace", None)
    if known is not None:
        return [str(p).strip() for p in getattr(known, "plugins", None) or []]
    args = [str(a) for a in config.invocation_params.args] if config is not None else []
    args += shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    values = []
    for i, arg in enumerate(args):
        if arg == "-p" and i + 1 < len(args):
            values.append(args[i + 1].strip())
        elif arg.startswith("-p") and arg != "-p":
            values.append(arg[2:].strip())
    return values


def _recording_owns_options(pluginmanager: pytest.PytestPluginManager) -> bool:
    """Whether pytest-recording defines ``--record-mode`` in this session (then harness
    must not): it is registered, or will be, or harness loads it here.

    Adding the option twice kills pytest at start-up, and which of the two plugins loads
    first depends on entry-point order and on where it is asked for, so this decides
    before either option exists: pytest-recording, when installed and not blocked, is the
    one owner of the option.
    """
    if any(pluginmanager.has_plugin(name) for name in _RECORDING):
        return True
    asked = None  # the last -p naming it wins, as in pytest
    for arg in _plugin_args(pluginmanager):
        if arg in _RECORDING:
            asked = True
        elif arg.startswith("no:") and arg[3:].strip() in _RECORDING:
            asked = False
    if asked is False or any(pluginmanager.is_blocked(name) for name in _RECORDING):
        return False  # -p no:recording, from any source
    if importlib.util.find_spec("pytest_recording") is None:
        return False  # not installed
    env_plugins = {p.strip() for p in os.environ.get("PYTEST_PLUGINS", "").split(",")}
    if asked or env_plugins & set(_RECORDING):
        return True  # -p recording / PYTEST_PLUGINS: pytest registers it before conftests
    config = pluginmanager.get_plugin("pytestconfig")
    args = [str(a) for a in config.invocation_params.args] if config is not None else []
    autoload = not (
        os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") or "--disable-plugin-autoload" in args
    )
    if autoload and any(ep.name == "recording" for ep in entry_points(group="pytest11")):
        return True
    # Installed but not asked for, with autoloading off. The one way left for it to
    # arrive is a conftest's `pytest_plugins`, after harness's option exists: a clash.
    # Loading it now, under the module name a conftest uses (which then is a no-op),
    # keeps a single owner of the option whatever the conftests do.
    pluginmanager.import_plugin("pytest_recording.plugin")
    return True


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    group = parser.getgroup("harness", "harness scenarios (*.scenario.yaml)")
    if not _recording_owns_options(pluginmanager):
        # Same names, values and defaults as pytest-recording's, so that a session reads
        # them the same way whichever plugin defined them.
        group.addoption(
            "--record-mode",
            action="store",
            default=None,
            choices=RECORD_MODES,
            help="cassette record mode for recorded scenarios (default: none = replay only)",
        )
        group.addoption(
            "--disable-recording",
            action="store_true",
            default=False,
            help="run recorded scenarios live against the endpoint and write no cassette",
        )
    group.addoption(
        "--harness-plugin",
        action="append",
        default=[],
        metavar="MODULE",
        help="load a harness plugin module (repeatable; reaches xdist workers too)",
    )
    group.addoption(
        "--harness-json", metavar="PATH", default=None, help="write results.json to PATH"
    )
    group.addoption(
        "--harness-html", metavar="PATH", default=None, help="write the HTML report to PATH"
    )
    group.addoption(
        "--harness-baseline",
        metavar="PATH",
        default=None,
        help="compare the results with this results.json (the diff goes into the reports)",
    )
    group.addoption(
        "--harness-scenarios-only",
        action="store_true",
        default=False,
        help="collect only *.scenario.yaml files from folders (what `harness run` uses)",
    )


# -- per-session state ---------------------------------------------------------------------


@dataclass(eq=False)  # hashable by identity: pytest keeps plugins in sets
class SuiteState:
    """What one pytest session knows about its scenarios (one per process).

    It is registered as a pytest plugin for the session, so the hooks that gather
    results and write reports have it at hand, workers and controller alike.
    """

    config: pytest.Config
    record_mode: str = "none"
    disable_recording: bool = False
    json_path: Path | None = None
    html_path: Path | None = None
    baseline_path: Path | None = None
    baseline: Results | None = None
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    # scenario id -> its ScenarioResult as JSON (what the test reports carry).
    results: dict[str, str] = field(default_factory=dict)
    # nodeid of a scenario file that did not load -> the error text (de-duplicated).
    collection_errors: dict[str, str] = field(default_factory=dict)
    internal_errors: list[str] = field(default_factory=list)
    report_errors: list[str] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    final: Results | None = None
    diff: BaselineDiff | None = None
    added_plugins: list[str] = field(default_factory=list)
    # What this run collected, deselected or not: ids and files relative to the project
    # root (xdist workers send theirs to the controller). A baseline id the run collected
    # but did not run is "not run", never "removed".
    collected_ids: set[str] = field(default_factory=set)
    unloaded_files: set[str] = field(default_factory=set)
    # Node ids deselected in a worker, for the controller's "N deselected".
    deselected: list[str] = field(default_factory=list)
    # Scenarios skipped (by a skip or skipif mark, say): not run, so not in results.json.
    skipped: set[str] = field(default_factory=set)
    interrupted: bool = False

    @property
    def collected_files(self) -> set[str]:
        """The files of the collected scenarios (an id is ``path::name``)."""
        from harness.results import ScenarioId

        return {ScenarioId.parse(scenario_id).file for scenario_id in self.collected_ids}

    @property
    def is_worker(self) -> bool:
        """True in an xdist worker (which runs items but writes nothing)."""
        return hasattr(self.config, "workerinput")

    def shown(self, path: Path) -> str:
        """A path as the user gave it: relative to where pytest started when below it."""
        return _shown(path, Path(self.config.invocation_params.dir))

    def build(self) -> Results:
        """results.json for the scenarios seen so far (sorted by id; baseline diff added)."""
        from harness.results import ScenarioResult, build_results

        scenarios = [ScenarioResult.model_validate_json(text) for text in self.results.values()]
        results = build_results(scenarios, started=self.started)
        if self.baseline is not None:
            self.diff = diff_against_baseline(
                self.baseline, results, self.baseline_path, not_run=self.not_run(results)
            )
            results.baseline = self.diff
        return results

    def not_run(self, results: Results) -> set[str]:
        """Baseline ids this run did not run and that are not gone: deselected, skipped,
        outside the given paths, or in a file that did not load."""
        from harness.project import project_root

        assert self.baseline is not None
        ran = {s.id for s in results.scenarios}
        root = project_root(self.config.invocation_params.dir)
        collected_files = self.collected_files
        not_run = set()
        for old in self.baseline.scenarios:
            if old.id in ran:
                continue
            if old.id in self.collected_ids or old.file in self.unloaded_files:
                not_run.add(old.id)  # collected, then deselected, skipped or not reached
            elif old.file in collected_files:
                continue  # its file was collected and no longer holds it: removed
            elif (root / old.file).exists() or not self._within_paths(root / old.file):
                not_run.add(old.id)  # a file this run did not look at
            # else: the file is gone from where this run looked: removed
        return not_run

    def _within_paths(self, path: Path) -> bool:
        """Whether ``path`` lies under one of the paths this session collects from."""
        from harness.results import ScenarioId

        here = Path(self.config.invocation_params.dir)
        target = path.resolve()
        for arg in self.config.args:
            given = (here / ScenarioId.file_of(str(arg))).resolve()
            if target == given or given in target.parents:
                return True
        return False

    # pytest hooks of the session -------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.started = datetime.now(UTC)

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        if isinstance(item, ScenarioItem):
            self.collected_ids.add(item.scenario_id)

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        if self.is_worker:
            self.deselected.extend(item.nodeid for item in items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if self.is_worker and (self.collected_ids or self.unloaded_files):
            # Sent to the controller when the worker finishes (pytest_testnodedown).
            self.config.workeroutput["harness"] = {  # type: ignore[attr-defined]
                "collected_ids": sorted(self.collected_ids),
                "unloaded_files": sorted(self.unloaded_files),
                "deselected": self.deselected,
            }

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        sent = (getattr(node, "workeroutput", None) or {}).get("harness")
        if not sent:
            return
        self.collected_ids.update(sent["collected_ids"])
        self.unloaded_files.update(sent["unloaded_files"])
        # Workers deselect and the controller never hears of it: count them as a serial
        # run does (each worker deselects the same items, so the set is taken once).
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None and sent["deselected"]:
            shown = reporter.stats.setdefault("deselected", [])
            known = {getattr(entry, "nodeid", None) for entry in shown}
            shown.extend(
                _Deselected(nodeid) for nodeid in sent["deselected"] if nodeid not in known
            )

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self.is_worker:
            return
        text = getattr(report, "harness_result", None)
        if text is None:
            if report.skipped and SUFFIX + "::" in report.nodeid:
                self.skipped.add(report.nodeid)
            return
        # Keyed by id: a rerun of the same scenario replaces its earlier result.
        self.results[report.harness_id] = text  # type: ignore[attr-defined]
        internal = getattr(report, "harness_internal", None)
        if internal:
            self.internal_errors.append(internal)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if not report.failed or not report.nodeid.endswith(SUFFIX):
            return
        if report.nodeid in self.collection_errors:
            return  # the same file, reported again by another xdist worker
        self.collection_errors[report.nodeid] = str(report.longrepr)
        self.unloaded_files.add(_project_file(Path(self.config.rootpath, report.nodeid)))
        if self.is_worker or self.config.getoption("continue_on_collection_errors", False):
            return
        # Serial pytest stops after collection errors and runs nothing; under xdist the
        # workers would run on and exit 1. Stop there too, so both end the same way.
        dsession = self.config.pluginmanager.get_plugin("dsession")
        if dsession is not None and getattr(dsession, "shouldstop", None) is False:
            dsession.shouldstop = f"{len(self.collection_errors)} scenario file(s) did not load"

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.is_worker:
            return
        status = int(session.exitstatus)
        # Ctrl-C, collection errors and pytest's own crashes stop a session part way: its
        # results would overwrite good reports with partial ones. Nothing selected: none.
        self.interrupted = status in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR)
        if (self.json_path or self.html_path) and status != 5 and not self.interrupted:
            self._write_reports()
        if self.collection_errors and status in (0, 1, 5):
            status = EXIT["bad_input"]
        if self.report_errors or self.internal_errors:
            status = EXIT["internal"]
        session.exitstatus = status

    def _write_reports(self) -> None:
        try:
            self.final = self.build()
        except Exception as exc:  # a bug between results and reports must still show
            self.report_errors.append(f"results not built: {type(exc).__name__}: {exc}")
            return
        if self.json_path is not None:
            try:
                self.final.write(self.json_path)
                self.written.append(self.json_path)
            except Exception as exc:
                self.report_errors.append(f"{self.shown(self.json_path)} not written: {_why(exc)}")
        if self.html_path is not None:
            try:
                from harness.report import write_html

                write_html(self.html_path, self.final)  # the diff is in self.final.baseline
                self.written.append(self.html_path)
            except Exception as exc:
                self.report_errors.append(f"{self.shown(self.html_path)} not written: {_why(exc)}")

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker or self.config.get_verbosity() < -1:
            return
        if not (
            self.results
            or self.written
            or self.report_errors
            or self.collection_errors
            or self.skipped
            or (self.interrupted and (self.json_path or self.html_path))
        ):
            return
        terminalreporter.write_sep("=", "harness summary")
        for line in summary_lines(self, cwd=Path(self.config.invocation_params.dir)):
            alarm = any(w in line for w in ("did not load", "report error", "harness crashed"))
            terminalreporter.write_line(line, red=alarm, bold=alarm)


class _Deselected:
    """An item an xdist worker deselected, as the controller's terminal stats count it
    (the controller has no items; plugins that read the stats find a node id)."""

    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid


_STATE = pytest.StashKey[SuiteState]()


def get_state(config: pytest.Config) -> SuiteState | None:
    """The harness state of a pytest session (None before it is configured)."""
    return config.stash.get(_STATE, None)


def _state(config: pytest.Config) -> SuiteState:
    state = get_state(config)
    if state is None:  # only when harness was registered after pytest_configure
        state = config.stash[_STATE] = SuiteState(config)
    return state


def _out_path(config: pytest.Config, value: str | None) -> Path | None:
    # Relative to where pytest was started, like --junitxml.
    return Path(config.invocation_params.dir, value) if value else None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "scenario: a harness scenario (*.scenario.yaml) item")
    state = SuiteState(
        config,
        record_mode=config.getoption("record_mode", None) or "none",
        disable_recording=bool(config.getoption("disable_recording", False)),
        json_path=_out_path(config, config.getoption("harness_json")),
        html_path=_out_path(config, config.getoption("harness_html")),
        baseline_path=_out_path(config, config.getoption("harness_baseline")),
    )
    config.stash[_STATE] = state
    config.pluginmanager.register(state, "harness-suite")
    modules = config.getoption("harness_plugin") or []
    if modules:
        _load_harness_plugins(modules, state)
    if state.baseline_path is not None and not state.is_worker:
        state.baseline = _load_baseline(config.getoption("harness_baseline"))


def _load_harness_plugins(modules: list[str], state: SuiteState) -> None:
    from harness.errors import HarnessError
    from harness.plugins import load_plugin_modules

    # Recorded first: pytest_unconfigure forgets them even when one fails to load.
    state.added_plugins.extend(modules)
    try:
        load_plugin_modules(modules)
    except HarnessError as exc:
        # The message names --harness-plugin already (harness.plugins says where).
        raise pytest.UsageError(str(exc)) from None


def _load_baseline(given: str) -> Results:
    from harness.results import ResultsFileError, load_results

    # The loader of `harness report --baseline`: the same checks, the same one-line errors.
    # (The path as given, relative to the current directory, which is pytest's start.)
    try:
        return load_results(given, what="--harness-baseline")
    except ResultsFileError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_unconfigure(config: pytest.Config) -> None:
    state = get_state(config)
    if state is None:
        return
    if config.pluginmanager.is_registered(state):
        config.pluginmanager.unregister(state)
    if state.added_plugins:
        # Plugins added for this session must not leak into the next one in the same
        # process (pytester's in-process runs, `harness run` called from Python).
        from harness.plugins import reset

        reset()


# -- collection ----------------------------------------------------------------------------


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # `harness run DIR` runs the scenarios of DIR, not its Python tests; files named on
    # the command line are never ignored (pytest does not ask about them).
    if config.getoption("harness_scenarios_only", False) and not collection_path.name.endswith(
        SUFFIX
    ):
        return True if collection_path.is_file() else None
    return None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name.endswith(SUFFIX):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


class ScenarioFile(pytest.File):
    """A ``*.scenario.yaml`` file: loaded (and checked) at collection, one item."""

    def collect(self) -> list[pytest.Item]:
        from harness.scenario import load_scenario

        scenario = load_scenario(self.path)
        item = ScenarioItem.from_parent(self, name=scenario.display_name, scenario=scenario)
        item.add_marker("scenario")
        for tag in scenario.tags:
            # Registered before use, so --strict-markers passes and nothing warns.
            self.config.addinivalue_line("markers", f"{tag}: scenario tag")
            item.add_marker(tag)
        return [item]

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        from harness.errors import HarnessError

        if isinstance(excinfo.value, HarnessError):
            # The ScenarioError lines exactly: they say what, where and how to fix it.
            # A plain string also lets xdist de-duplicate the workers' copies.
            return str(excinfo.value)
        return super().repr_failure(excinfo)


class ScenarioFailed(Exception):
    """A scenario ran and did not pass (its result says why)."""

    def __init__(self, result: ScenarioResult) -> None:
        super().__init__(result.id)
        self.result = result


class ScenarioItem(pytest.Item):
    """One scenario: runs it, fails with its unmet expectations and trajectory."""

    def __init__(self, *, scenario: Scenario, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        self.result: ScenarioResult | None = None
        self.internal_error: str | None = None
        # An exception that escaped the run, and whose code raised it (None: harness's).
        self.escaped: BaseException | None = None
        self.culprit: str | None = None
        self._id: str | None = None

    @property
    def scenario_id(self) -> str:
        """The scenario's id, ``path::name`` (the key of results.json and the baseline)."""
        if self._id is None:
            from harness.scenario import scenario_id

            self._id = str(scenario_id(self.scenario))
        return self._id

    def runtest(self) -> None:
        from harness.errors import HarnessError, RecordingRefused
        from harness.scenario import run_scenario

        state = _state(self.config)
        try:
            result = run_scenario(
                self.scenario, state.record_mode, disable_recording=state.disable_recording
            )
        except RecordingRefused as exc:
            # The key is wrong for every scenario: stop the session in one line, exit 2.
            pytest.exit(f"harness: {exc}", returncode=2)
        except HarnessError as exc:
            # Bad configuration met at run time (a provider's settings, say): the
            # scenario errors with the message, as when a template fails.
            self.result = _error_result(self.scenario, exc)
            raise ScenarioFailed(self.result) from None
        except Exception as exc:
            # The scenario errors either way. Raised in a plugin's (or other user) code,
            # it is that code's error; raised in harness, harness crashed: exit 3.
            self.result = _error_result(self.scenario, exc)
            self.escaped = exc
            self.culprit = _culprit(exc, self.scenario.root)
            if self.culprit is None:
                self.internal_error = f"{self.nodeid}: {type(exc).__name__}: {exc}"
            raise
        self.result = result
        if result.status != "passed":
            raise ScenarioFailed(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, ScenarioFailed):
            return format_failure(excinfo.value.result, verbose=self.config.get_verbosity() > 0)
        if excinfo.value is not self.escaped or self.config.getoption("fulltrace", False):
            return super().repr_failure(excinfo, style=style)  # not from the run (setup, say)
        # An exception escaped the run: its traceback from runtest on, without the frames
        # of pytest, pluggy and other libraries in between (--fulltrace shows them all).
        tbstyle = self.config.getoption("tbstyle", "auto")
        shown = excinfo.getrepr(
            style=tbstyle if tbstyle in ("long", "native") else "short",
            tbfilter=_own_frames,
            chain=False,
            showlocals=bool(self.config.getoption("showlocals", False)),
        )
        # The first line is the one pytest's short test summary shows.
        error = f"{type(excinfo.value).__name__}: {excinfo.value}"
        if self.culprit is not None:
            verdict = f"raised in {self.culprit}, not in harness: the scenario ends in error"
        else:
            verdict = "harness crashed: a bug in harness, please report it with this traceback"
        return f"{error} ({verdict})\n{shown}"

    def reportinfo(self) -> tuple[Path, int, str]:
        # Line 0, not None: pytest's report of a skip mark needs a line. The id names the
        # file too, so failures in a large suite are told apart by their headers.
        return self.path, 0, self.scenario_id


def _is_library(path: Path) -> bool:
    import sysconfig

    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        root = paths.get(key)
        if root and path.is_relative_to(Path(root).resolve()):
            return True
    return False


_HARNESS_DIR = Path(__file__).resolve().parent


def _culprit(exc: BaseException, root: Path) -> str | None:
    """Whose code raised ``exc``: ``plugin NAME (file:line)`` or ``file:line`` for other
    code outside harness, or None when it was harness itself. ``root`` is the scenario's
    project, whose plugins ran.

    The innermost frame in harness, in a harness plugin or in other code of the project
    decides; frames of the standard library and installed packages are passed over (the
    code that called them decides), so a plugin whose library call raises is to blame.
    """
    import sys
    import traceback
    import types

    from harness.plugins import get_plugins
    from harness.project import display_path

    plugin_files: dict[Path, str] = {}
    try:
        plugins = get_plugins(root).plugins()
    except Exception:  # never hide the exception being explained behind another one
        plugins = []
    for name, plugin in plugins:
        module = (
            plugin
            if isinstance(plugin, types.ModuleType)
            else sys.modules.get(type(plugin).__module__)
        )
        file = getattr(module, "__file__", None)
        if file:
            path = Path(file).resolve()
            # A package's plugin owns the package's modules; a module, only itself.
            plugin_files[path.parent if path.name == "__init__.py" else path] = name
    for frame, lineno in reversed(list(traceback.walk_tb(exc.__traceback__))):
        filename = frame.f_code.co_filename
        if filename.startswith("<"):
            continue  # generated code (templates, frozen modules): its caller decides
        path = Path(filename).resolve()
        if path.is_relative_to(_HARNESS_DIR):
            return None
        where = f"{display_path(path)}:{lineno}"
        for owned, name in plugin_files.items():
            if path == owned or (owned.is_dir() and path.is_relative_to(owned)):
                return f"plugin {name} ({where})"
        if not _is_library(path):
            return where
    return None


def _own_frames(excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
    """The frames worth reading: from ScenarioItem.runtest on, in harness or user code,
    and the innermost frame wherever it is."""
    frames = excinfo.traceback.cut(path=Path(__file__))
    if not frames:
        frames = excinfo.traceback
    last = frames[-1] if frames else None

    def keep(entry: Any) -> bool:
        if entry is last:
            return True
        path = entry.path
        if not isinstance(path, Path):
            return False
        path = path.resolve()
        return path.is_relative_to(_HARNESS_DIR) or not _is_library(path)

    return frames.filter(keep)


def _error_result(scenario: Scenario, exc: BaseException) -> ScenarioResult:
    """A result for a scenario whose run raised instead of returning one."""
    from harness.actions import FinalResponse
    from harness.results import ScenarioResult
    from harness.scenario import scenario_id

    sid = scenario_id(scenario)
    return ScenarioResult(
        id=str(sid),
        name=sid.name,
        file=sid.file,
        description=scenario.description,
        tags=list(scenario.tags),
        status="error",
        termination="error",
        final=FinalResponse(
            error={"type": "error", "exception": type(exc).__name__, "message": str(exc)}
        ),
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if isinstance(item, ScenarioItem) and call.when == "call" and item.result is not None:
        # Plain attributes: xdist sends report.__dict__ to the controller (user_properties
        # would work too, but would leak into --junitxml).
        report.harness_id = item.result.id
        report.harness_result = item.result.model_dump_json()
        report.harness_status = item.result.status
        if item.internal_error:
            report.harness_internal = item.internal_error
    return report


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    # A scenario that ended in `error` (a scenario or harness bug, not an unmet
    # expectation) shows as a pytest error: E, ERROR, counted under "errors".
    # (Not under an xfail mark: pytest reports that one as xfailed.)
    if (
        report.when == "call"
        and report.failed
        and getattr(report, "harness_status", None) == "error"
    ):
        return "error", "E", "ERROR"
    return None


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}"


def summary_lines(state: SuiteState, *, cwd: Path, slowest: int = 5) -> list[str]:
    """The end-of-run summary: counts, slowest scenarios, baseline diff, report paths."""
    results = state.final
    if results is None and state.results:
        results = state.build()
    lines: list[str] = []
    if results is not None and results.scenarios:
        s = results.summary
        lines.append(
            f"scenarios: {s.total} ("
            + ", ".join(f"{n} {k}" for k, n in s.by_status.items())
            + f"), simulated time {s.sim_time:.2f}s"
        )
        lines.append("terminations: " + ", ".join(f"{k} {n}" for k, n in s.by_termination.items()))
        # Entries that would print as 0.00s say nothing: a quick suite gets no list.
        slow = [r for r in results.scenarios if r.wall_time >= _SHOWN_WALL_TIME]
        slow = sorted(slow, key=lambda r: (-r.wall_time, r.id))[:slowest]
        if slow:
            lines.append("slowest:")
            lines.extend(f"  {r.wall_time:7.2f}s  {r.id}" for r in slow)
    if state.skipped:
        lines.append(f"skipped: {len(state.skipped)} (not run, so not in results.json)")
    if state.diff is not None:
        shown = _shown(state.baseline_path, cwd) if state.baseline_path else "baseline"
        counts = ", ".join(_counted(n, k) for k, n in state.diff.counts().items())
        not_run = len(state.diff.not_run)
        lines.append(f"baseline {shown}: {counts}" + (f", {not_run} not run" if not_run else ""))
        for entry in state.diff.regressions:
            lines.append(f"  regression: {entry.id} ({entry.old_status} -> {entry.new_status})")
        for change in state.diff.changed:
            lines.append(f"  changed: {change.id} ({', '.join(change.fields) or 'details'})")
    if state.collection_errors:
        count = len(state.collection_errors)
        lines.append(
            f"{count} scenario file(s) did not load"
            + ("" if state.written else "; reports not written")
        )
    elif state.interrupted:
        lines.append("interrupted: nothing was written (reports and baseline left as they were)")
    lines.extend(f"harness crashed: {error}" for error in state.internal_errors)
    lines.extend(f"report error: {error}" for error in state.report_errors)
    if state.written:
        lines.append("results: " + ", ".join(_shown(p, cwd) for p in state.written))
    return lines


def _project_file(path: Path) -> str:
    """A file as scenario ids name it: its POSIX path relative to its project root."""
    from harness.project import project_relative, project_root

    return project_relative(path, project_root(path.parent))


def _shown(path: Path, cwd: Path) -> str:
    try:
        return path.resolve().relative_to(cwd.resolve()).as_posix()
    except ValueError:
        return str(path)


# -- reports -------------------------------------------------------------------------------


def _counted(count: int, key: str) -> str:
    """``1 regression``, ``2 regressions``, ``0 fixed``."""
    return f"{count} {key[:-1] if key == 'regressions' and count == 1 else key}"


# The summary's "slowest" list leaves out what would print as 0.00s.
_SHOWN_WALL_TIME = 0.005


def diff_against_baseline(
    old: Results, new: Results, source: Path | None, *, not_run: set[str] | None = None
) -> BaselineDiff:
    """The ``baseline`` section of results.json (harness.report's diff); ``not_run`` ids
    are listed as not run instead of removed."""
    from harness.project import project_root
    from harness.report import diff_results

    name = None
    if source is not None:
        # Relative to the project root: results must not depend on the checkout's location.
        try:
            name = source.resolve().relative_to(project_root()).as_posix()
        except ValueError:
            name = str(source)
    return diff_results(old, new, source=name, not_run=not_run or ())


# -- failure text --------------------------------------------------------------------------


def _value(value: Any, limit: int | None) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    if limit is not None and len(text) > limit:
        return f"{text[:limit]}… ({len(text) - limit} more characters; -v shows all)"
    return text


def format_failure(result: ScenarioResult, *, verbose: bool = False) -> str:
    """Why a scenario did not pass: each unmet expectation, then a compact trajectory."""
    from harness.secrets import scrub_model

    result = scrub_model(result)  # before long values are shortened
    limit = None if verbose else 300
    lines: list[str] = []
    message = _error_message(result)
    if result.status == "error":
        lines.append(f"scenario {result.name!r} ended in error (a scenario or harness bug)")
        error = result.final.error or {}
        kind = error.get("exception") or error.get("type") or "error"
        lines.append(f"  {kind}: {message.splitlines()[0] if message else ''}")
    failed = result.failed_expectations
    if failed:
        lines.append(
            f"scenario {result.name!r}: {len(failed)} of {len(result.expectations)} "
            "expectation(s) not met"
        )
        for e in failed:
            lines.append(f"  expect.{e.path}")
            lines.append(f"    expected: {_value(e.expected, limit)}")
            lines.append(f"    actual:   {_value(e.actual, limit)}")
    lines.append(
        f"trajectory ({result.planner or 'planner'}, {result.iterations} iteration(s), "
        f"{result.llm_calls} LLM call(s)):"
    )
    lines.extend("  " + line for line in trajectory_lines(result, verbose=verbose))
    if message and _shown_below(result, message, None if verbose else _TRAJECTORY_LIMIT):
        # A cassette miss's diff, a traceback-like text: readable only as its own lines.
        lines.append(f"{result.termination.value} message:")
        shown = message.splitlines()
        if not verbose and len(shown) > _MESSAGE_LINES:
            hidden = len(shown) - _MESSAGE_LINES
            shown = [*shown[:_MESSAGE_LINES], f"... {hidden} more line(s); -v shows all"]
        lines.extend("  " + line for line in shown)
    return "\n".join(lines)


# The longest error message a failure shows whole (-v shows any).
_MESSAGE_LINES = 100


# Values in a trajectory line are cut at this many characters (-v: never).
_TRAJECTORY_LIMIT = 60


def _shown_below(result: ScenarioResult, message: str, limit: int | None) -> bool:
    """Whether an error message gets lines of its own below the trajectory: when it has
    several, or is too long for the trajectory's last line (and not already whole in the
    header of a scenario that ended in error)."""
    if "\n" in message:
        return True
    return result.status != "error" and limit is not None and len(_value(message, None)) > limit


def _error_message(result: ScenarioResult) -> str:
    """final.error's message, whatever ended the run ('' without one).

    The trajectory's last line says "(message below)" for any long one: a validation
    error listing several calls, say, as much as an LLM error's diff.
    """
    error = result.final.error
    if not error:
        return ""
    message = error.get("message")
    return message if isinstance(message, str) else ""


def _call_text(call: Any, limit: int | None) -> str:
    args = ", ".join(
        f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in call.arguments.items()
    )
    if limit is not None and len(args) > limit:
        args = args[:limit] + "…"
    status = "" if call.status == "ok" else f" [{call.status}]"
    return f"{call.name}({args}){status}"


def trajectory_lines(result: ScenarioResult, *, verbose: bool = False) -> list[str]:
    """One line per iteration: ``N  llm#k -> tools asked; ran: calls`` and the ending."""
    limit = None if verbose else _TRAJECTORY_LIMIT
    rows: dict[int, list[str]] = {}
    answered: set[int] = set()
    for event in result.events:
        kind, it = event.get("event"), int(event.get("iteration") or 0)
        if kind == "llm_response":
            answered.add(event.get("call"))
            names = event.get("tool_calls") or []
            text = f"llm#{event.get('call')} -> " + (", ".join(names) if names else "text")
            if event.get("finish_reason") == "length":
                text += " (truncated)"
            rows.setdefault(it, []).append(text)
        elif kind == "llm_request":
            rows.setdefault(it, []).append(f"llm#{event.get('call')} -> ?")
    for it, parts in rows.items():
        # A request without a response failed: the run's ending says how.
        rows[it] = [p.replace(" -> ?", " -> failed") for p in parts if not _superseded(p, parts)]
    by_iteration: dict[int, list[Any]] = {}
    for call in result.tool_calls:
        by_iteration.setdefault(call.iteration, []).append(call)
    for it, calls in by_iteration.items():
        ran = [c for c in calls if c.status in ("ok", "error")]
        together = result.parallel_tools and _parallel(ran)
        if not ran:  # declined by stagnation, stopped by validation, left at the limit
            label = "not run"
        elif together:
            label = "ran in parallel"
        else:
            label = "ran one after another" if len(ran) > 1 else "ran"
        rows.setdefault(it, []).append(
            f"{label}: " + ", ".join(_call_text(c, limit) for c in calls)
        )
    lines = []
    last = max(result.iterations, max(rows, default=0))
    for it in range(1, last + 1):
        parts = rows.get(it)
        if parts:
            lines.append(f"{it:>3}  " + "; ".join(parts))
        elif it < last:
            lines.append(f"{it:>3}  (planner step, no LLM call or tool)")
    lines.append(f"  => {_ending(result, limit)}")
    if not verbose and len(lines) > 24:
        hidden = len(lines) - 20
        lines = [*lines[:10], f"  ... {hidden} more iteration(s); -v shows all ...", *lines[-10:]]
    return lines


def _superseded(part: str, parts: list[str]) -> bool:
    # "llm#2 -> ?" is dropped when "llm#2 -> <reply>" is in the same iteration.
    if not part.endswith(" -> ?"):
        return False
    head = part[: -len("?")]
    return any(p.startswith(head) and p != part for p in parts)


def _parallel(calls: list[Any]) -> bool:
    return len({c.group for c in calls}) == 1 and len(calls) > 1


def _ending(result: ScenarioResult, limit: int | None) -> str:
    final = result.final
    text = result.termination.value
    if final.error:
        error = final.error
        message = error.get("message") or error.get("type") or ""
        if isinstance(message, str) and _shown_below(result, message, limit):
            # The start of it: format_failure prints the whole text below the trajectory.
            first = message.splitlines()[0]
            if limit is not None and len(first) > limit:
                first = first[:limit] + "…"
            return f"{text}: {_value(first, None)} (message below)"
        return f"{text}: {_value(message, limit)}"
    if final.content:
        return f"{text}: {_value(final.content, limit)}"
    if final.data:
        return f"{text}: data {_value(final.data, limit)}"
    return text


# -- the `harness` fixture -----------------------------------------------------------------


class HarnessFixture:
    """Run scenarios and build agents from a hand-written test (the ``harness`` fixture)."""

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self._request = request
        self._registered: list[Any] = []
        state = get_state(request.config)
        self.record_mode = state.record_mode if state else "none"
        self.disable_recording = state.disable_recording if state else False

    def path(self, path: str | Path) -> Path:
        """A scenario path: as given when it exists, else next to the test file."""
        candidate = Path(path)
        if candidate.is_absolute() or candidate.exists():
            return candidate
        beside = Path(self._request.path).parent / candidate
        return beside if beside.exists() else candidate

    def load(self, path: str | Path) -> Scenario:
        """Load a scenario file (ScenarioError lists its problems)."""
        from harness.scenario import load_scenario

        return load_scenario(self.path(path))

    def run(
        self,
        scenario: str | Path | Scenario,
        *,
        record_mode: str | None = None,
        disable_recording: bool | None = None,
        check: bool = True,
    ) -> ScenarioResult:
        """Run a scenario file or Scenario; fail the test unless it passed (or ``check=False``)."""
        from harness.sync import run_sync

        result = run_sync(
            self._arun(scenario, record_mode, disable_recording),
            name="harness.run()",
            instead="harness.arun(...)",
        )
        return self._finish(result, check)

    async def arun(
        self,
        scenario: str | Path | Scenario,
        *,
        record_mode: str | None = None,
        disable_recording: bool | None = None,
        check: bool = True,
    ) -> ScenarioResult:
        """``run`` for async tests."""
        return self._finish(await self._arun(scenario, record_mode, disable_recording), check)

    async def _arun(
        self, scenario: Any, record_mode: str | None, disable_recording: bool | None
    ) -> ScenarioResult:
        from harness.scenario import Scenario, arun_scenario

        if not isinstance(scenario, Scenario):
            scenario = self.load(scenario)
        return await arun_scenario(
            scenario,
            record_mode or self.record_mode,
            disable_recording=self.disable_recording
            if disable_recording is None
            else disable_recording,
        )

    def _finish(self, result: ScenarioResult, check: bool) -> ScenarioResult:
        if check and result.status != "passed":
            pytest.fail(format_failure(result), pytrace=False)
        return result

    def agent(self, llm: Any = None, tools: Any = (), **options: Any) -> Agent:
        """An Agent; ``llm`` may be a list of script steps (a ScriptedLLM)."""
        from harness.agent import Agent

        return Agent([] if llm is None else llm, tools, **options)

    def register(self, plugin: Any, name: str | None = None) -> Any:
        """Register a harness plugin for this test only (unregistered at teardown)."""
        from harness.plugins import get_plugins

        # None: already registered (or blocked), so not this test's to unregister.
        if get_plugins().register(plugin, name) is not None:
            self._registered.append(plugin)
        return plugin

    def _teardown(self) -> None:
        from harness.plugins import get_plugins

        plugins = get_plugins()
        for plugin in reversed(self._registered):
            with contextlib.suppress(ValueError, KeyError):
                plugins.unregister(plugin)
        self._registered.clear()


@pytest.fixture
def harness(request: pytest.FixtureRequest) -> Any:
    """Run scenario files or Scenario objects and build agents in a hand-written test."""
    fixture = HarnessFixture(request)
    yield fixture
    fixture._teardown()
