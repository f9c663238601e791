"""Scenario files as pytest items: collection, running, and how a failure reads.

One item per ``*.scenario.yaml`` file (other YAML is ignored; more with cases, a matrix
or repeats); its tags become
registered markers; a file that does not load is a collection error showing the
``path:line: field: message`` lines, no traceback. An exception raised in a plugin (or
other user code) during a run is that scenario's error; one raised in harness's own code
is a harness crash (exit status 3).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness._modeljson import dump_json
from harness._spool import Blobs
from harness.pytest_plugin._budget import check_price, on_report
from harness.pytest_plugin._options import SUFFIXES
from harness.pytest_plugin._sequential import make_sequential, sequential_plan
from harness.pytest_plugin._session import get_state, state_of

if TYPE_CHECKING:
    from harness._results import ScenarioResult
    from harness._sequential import SequentialPlan
    from harness.scenario import Scenario

__all__ = [
    "ScenarioFailed",
    "ScenarioFile",
    "ScenarioItem",
    "pytest_collect_file",
    "pytest_ignore_collect",
    "pytest_itemcollected",
    "pytest_report_teststatus",
    "pytest_runtest_makereport",
]


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With --harness-scenarios-only, ignore every file but scenario files; with
    --harness-part, every scenario file of the other parts."""
    # `harness run DIR` runs the scenarios of DIR, not its Python tests; files named on
    # the command line are never ignored (pytest does not ask about them).
    state = get_state(config)
    if state is not None and state.part is not None and state.part.collects_nothing:
        return True  # the end of a run in parts (harness run --chunk-size)
    scenario_file = collection_path.name.endswith(SUFFIXES)
    if config.getoption("harness_scenarios_only", False) and not scenario_file:
        return True if collection_path.is_file() else None
    part = config.getoption("harness_part", None)
    if part is not None and scenario_file:
        # Another part's file (harness run --chunk-size): its session collects it.
        from harness._shards import part_of

        where = os.path.relpath(collection_path, config.invocation_params.dir)
        return True if part_of(where, part.total) != part.index else None
    return None


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """A ScenarioFile for each ``*.scenario.yaml`` (or ``*.scenario.yml``) file."""
    if file_path.name.endswith(SUFFIXES):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


# The marks this session's items carry ("scenario" and the tags registered as markers):
# one object each, shared by every item that carries it.
_MARKS = pytest.StashKey[dict[str, pytest.MarkDecorator]]()


class ScenarioFile(pytest.File):
    """A ``*.scenario.yaml`` file: loaded (and checked) at collection, one item."""

    def collect(self) -> list[pytest.Item]:
        """Load (and check) the file: its one scenario item, marked with its tags."""
        from harness.scenario import load_scenario

        scenario = load_scenario(self.path)
        state = get_state(self.config)
        items: list[pytest.Item] = []
        # Cases first (name[paris]), then a matrix's combinations (name[paris][model=a]),
        # then repeats of each (name[paris][model=a][k]).
        for name, each in _expanded(scenario):
            marks = _marks(self.config, each.tags)
            repeat = _repeat(each, self.config)
            runs = [None] if repeat == 1 else range(1, repeat + 1)
            minimum = _min_pass_rate(each, self.config) if repeat > 1 else None
            if state is not None and state.options.max_cost is not None:
                check_price(each)  # before any runs: a budget it could not keep
            plan = sequential_plan(each, state.options if state else None, repeat, minimum)
            if plan is not None:
                minimum = plan.min_pass_rate
            for run in runs:
                shown = name if run is None else f"{name}[{run}]"
                item = ScenarioItem.from_parent(
                    self, name=shown, scenario=each, run=run, min_pass_rate=minimum
                )
                for mark in marks:
                    item.add_marker(mark)
                if plan is not None and run is not None:
                    make_sequential(item, plan)
                items.append(item)
        return items

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """A scenario file's load errors as they are, without a traceback."""
        from harness._errors import HarnessError

        if isinstance(excinfo.value, HarnessError):
            # The ScenarioError lines exactly: they say what, where and how to fix it.
            # A plain string also lets xdist de-duplicate the workers' copies.
            return str(excinfo.value)
        return super().repr_failure(excinfo)


def _marks(config: pytest.Config, tags: list[str]) -> list[pytest.MarkDecorator]:
    """The marks of a scenario's items: ``scenario``, then its tags, each tag registered
    as a marker before its first use (so --strict-markers passes and nothing warns)."""
    known = config.stash.setdefault(_MARKS, {})
    marks = []
    for name in ("scenario", *tags):
        if name not in known:
            if name != "scenario":  # registered by harness's pytest_configure
                config.addinivalue_line("markers", f"{name}: scenario tag")
            known[name] = getattr(pytest.mark, name)
        marks.append(known[name])
    return marks


def _repeat(scenario: Scenario, config: pytest.Config) -> int:
    """How many times a scenario runs: its own ``repeat:``, else --harness-repeat, else 1."""
    if "repeat" in scenario.model_fields_set:
        return scenario.runs
    state = get_state(config)
    return (state.options.repeat if state is not None else None) or 1


def _min_pass_rate(scenario: Scenario, config: pytest.Config) -> float | None:
    """The share of a repeated scenario's runs that must pass: its own ``repeat:
    {min_pass_rate: R}``, else --harness-min-pass-rate, else None (every run)."""
    if scenario.min_pass_rate is not None:
        return scenario.min_pass_rate
    state = get_state(config)
    return state.options.min_pass_rate if state is not None else None


def _expanded(scenario: Scenario) -> list[tuple[str, Scenario]]:
    """The items one scenario runs as, (name, scenario) pairs: one, or more after the
    expansions, applied in order, each extending the names the one before gave
    (``name[model=a,planner=b]``)."""
    from harness.pytest_plugin._matrix import expand_case_items, expand_matrix_items

    pairs = [(scenario.display_name, scenario)]
    for expand in (expand_case_items, expand_matrix_items):
        pairs = expand(pairs)
    return pairs


def pytest_itemcollected(item: pytest.Item) -> None:
    """Note each scenario the session collected (see CollectionLedger.not_run)."""
    state = get_state(item.config)
    if state is not None and isinstance(item, ScenarioItem):
        state.ledger.collected_ids.add(item.scenario_id)


class ScenarioFailed(Exception):
    """A scenario ran and did not pass (its result says why)."""

    def __init__(self, result: ScenarioResult) -> None:
        super().__init__(result.id)
        self.result = result


class ScenarioItem(pytest.Item):
    """One scenario: runs it, fails with its unmet expectations and trajectory."""

    def __init__(
        self,
        *,
        scenario: Scenario,
        run: int | None = None,
        min_pass_rate: float | None = None,
        **kwargs: Any,
    ) -> None:
        from harness.scenario import scenario_id

        super().__init__(**kwargs)
        # Kept packed on disk until the item runs (a suite's memory does not grow with
        # every scenario's parsed model; docs/running.md#large-suites), read back when used.
        self._scenario: Scenario | None = scenario
        self._packs = _packs(self.config)
        self._packed = _pack(scenario, self._packs)
        # Which run of a repeated scenario this item is (1-based); None: it runs once.
        self.run = run
        # The share of the runs that must pass; None: every run must (a failed run fails).
        self.min_pass_rate = min_pass_rate
        self.result: ScenarioResult | None = None
        self.internal_error: str | None = None
        # A file the run could not write (NotWritten), for the session's exit status.
        self.not_written: str | None = None
        # With --harness-coverage, the run's observer of what its requests offered (a
        # target's, or a scenario's with MCP tools: harness.scenario._coverage).
        self.offered: Any = None
        # An exception that escaped the run, and whose code raised it (None: harness's).
        self.escaped: BaseException | None = None
        self.culprit: str | None = None
        # The scenario's id, ``path::name`` (the key of results.json and the baseline),
        # taken while the model is at hand.
        self.scenario_id = str(scenario_id(scenario)) + ("" if run is None else f"[{run}]")
        # A sequential scenario's run: the plan its runs are decided by, and why this
        # run was not needed (the verdict came first).
        self.sequential: SequentialPlan | None = None
        self.not_needed: str | None = None
        self.budget_left: str | None = None  # why the run's budget left it unrun
        if self._packed is not None:
            self._scenario = None

    @property
    def scenario(self) -> Scenario:
        """The scenario this item runs (read back from its packed copy while it runs)."""
        if self._scenario is None:
            import pickle
            import zlib

            assert self._packed is not None  # only None while the model itself is kept
            self._scenario = pickle.loads(zlib.decompress(self._packs.get(self._packed)))
        return self._scenario

    @property
    def scenario_key(self) -> str:
        """The scenario's id without the run's ``[k]``: what its runs share."""
        return (
            self.scenario_id if self.run is None else self.scenario_id.removesuffix(f"[{self.run}]")
        )

    def let_go(self) -> None:
        """Drop what the run made and the scenario's model (its packed copy stays): the
        item lives until the session ends."""
        self.result = None
        self.offered = None
        if self._packed is not None:
            self._scenario = None

    def arun(self) -> Any:
        """The scenario's run, as a coroutine (what --harness-concurrency starts ahead)."""
        from harness.scenario import arun_scenario

        state = state_of(self.config)
        observers = []
        if state.options.coverage:
            from harness.scenario._coverage import OfferedTools, needs_observer

            if needs_observer(self.scenario):
                self.offered = OfferedTools()
                observers.append(self.offered)
        return arun_scenario(
            self.scenario,
            state.options.record_mode,
            disable_recording=state.options.disable_recording,
            plugins=observers,
            run=self.run,
            seed=state.options.seed,
        )

    def behaviours(self) -> str | None:
        """With --harness-coverage, the behaviours of the run as JSON (for its report)."""
        if self.result is None or not state_of(self.config).options.coverage:
            return None
        import json

        from harness.scenario._coverage import behaviours

        try:
            found = behaviours(self.scenario, self.result, self.offered)
        except Exception as exc:  # harness's bug: the result stands, the run exits 3
            self.internal_error = (
                f"{self.nodeid}: coverage not recorded: {type(exc).__name__}: {exc}"
            )
            return None
        return json.dumps(found.to_json(), separators=(",", ":"))

    def _outcome(self) -> ScenarioResult:
        """Run the scenario here, or take the run started ahead (--harness-concurrency)."""
        from harness._sync import run_sync

        state = state_of(self.config)
        if state.options.concurrency > 1:
            from harness.pytest_plugin._live import ConcurrentRuns, run_ahead

            state.runs = state.runs or ConcurrentRuns(state.options.concurrency)
            return run_ahead(self, state.runs, state.budget).take(self.nodeid)
        return run_sync(self.arun(), name="run_scenario()", instead="arun_scenario(...)")

    def own(self, result: ScenarioResult) -> ScenarioResult:
        """The result as this item's: a repeated scenario's run gets its id and number,
        and what its repeats are judged by (harness._repeats.count_repeats counts them)."""
        if self.run is None:
            return result
        from harness._repeats import Repeats

        result.id = self.scenario_id
        result.run = self.run
        passed = int(result.status == "passed")
        live = state_of(self.config).options.live
        result.repeats = Repeats.of(
            passed,
            1,
            min_pass_rate=self.min_pass_rate,
            live=live,
            stochastic=self.scenario.stochastic,
            sequential=self.sequential,
        )
        sequences = state_of(self.config).sequences
        if self.sequential is not None and sequences is not None:
            sequences.record(self.scenario_key, self.sequential, self.run, bool(passed))
        return result

    def runtest(self) -> None:
        """Run the scenario; raise ScenarioFailed unless it passed."""
        from harness._errors import HarnessError, NotWritten, RecordingRefused

        if self.scenario.skip_reason is not None:
            # A target whose framework or program is not installed: not this suite's fault.
            pytest.skip(self.scenario.skip_reason)
        if self.sequential is not None:
            from harness.pytest_plugin._sequential import skip_if_not_needed

            skip_if_not_needed(self, state_of(self.config).sequences)
        state = state_of(self.config)
        budget = state.session_budget()
        if budget is not None:
            budget.skip_if_reached(self, state.runs)
        try:
            result = self.own(self._outcome())
        except RecordingRefused as exc:
            # The key is wrong for every scenario: stop the session in one line, exit 2.
            line = f"harness: {exc}"
            state_of(self.config).outputs.stopped_by = line
            pytest.exit(line, returncode=2)
        except NotWritten as exc:
            # A recording that could not be saved (a full disk): the scenario errors with
            # the one line, and the session exits 3 as for a report not written.
            self.result = self.own(_error_result(self.scenario, exc))
            self.not_written = f"{self.scenario_id}: {exc}"
            raise ScenarioFailed(self.result) from None
        except HarnessError as exc:
            # Bad configuration met at run time (a provider's settings, say): the
            # scenario errors with the message, as when a template fails.
            self.result = self.own(_error_result(self.scenario, exc))
            raise ScenarioFailed(self.result) from None
        except Exception as exc:
            # The scenario errors either way. Raised in a plugin's (or other user) code,
            # it is that code's error; raised in harness, harness crashed: exit 3.
            self.result = self.own(_error_result(self.scenario, exc))
            self.escaped = exc
            self.culprit = _culprit(exc, self.scenario.root)
            if self.culprit is None:
                self.internal_error = f"{self.nodeid}: {type(exc).__name__}: {exc}"
            raise
        self.result = result
        if result.status != "passed":
            raise ScenarioFailed(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        """Why the scenario failed, or whose code an escaped exception came from."""
        if isinstance(excinfo.value, ScenarioFailed):
            from harness.report._text import format_failure

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
        """Where the item is, for pytest's report headers."""
        # Line 0, not None: pytest's report of a skip mark needs a line. The header names
        # the file too, so failures in a large suite are told apart by their headers. Not
        # the id itself: pytest's -v line, ending in it, would show its dots as "::"
        # (scenarios/a::scenario::yaml::a), as it does a Python test's Class.method.
        file, _, name = self.scenario_id.partition("::")
        return self.path, 0, f"{name} ({file})"


def _is_library(path: Path) -> bool:
    import sysconfig

    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        root = paths.get(key)
        if root and path.is_relative_to(Path(root).resolve()):
            return True
    return False


# harness's own code: an exception raised there is a harness crash.
_HARNESS_DIR = Path(__file__).resolve().parents[1]


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

    from harness._plugins import discover
    from harness._project import display_path

    plugin_files: dict[Path, str] = {}
    try:
        plugins = discover(root).plugins()
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
    from harness._actions import FinalResponse, RunError
    from harness._results import ScenarioResult
    from harness.scenario import scenario_id

    sid = scenario_id(scenario)
    return ScenarioResult(
        id=str(sid),
        name=sid.name,
        file=sid.file,
        description=scenario.description,
        tags=list(scenario.tags),
        matrix=scenario.combination,
        case=scenario.case_id,
        status="error",
        termination="error",
        final=FinalResponse(
            error=RunError(type="error", exception=type(exc).__name__, message=str(exc))
        ),
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Carry a scenario's result on its test report (to the controller, under xdist)."""
    report = yield
    if isinstance(item, ScenarioItem) and call.when == "call":
        # A budget's count; runs not needed (sequential) or left unrun (the budget).
        on_report(item, report, state_of(item.config).budget)
    if isinstance(item, ScenarioItem) and call.when == "call" and item.result is not None:
        if item.min_pass_rate is not None and isinstance(
            call.excinfo and call.excinfo.value, ScenarioFailed
        ):
            # One run of a scenario judged by its pass rate: the session's end judges the
            # scenario over all its runs (exit 1 when too few passed).
            report.outcome = "skipped"
            report.wasxfail = (
                f"run {item.run} did not pass ({item.result.status}); the scenario is judged "
                f"by its pass rate (min_pass_rate {item.min_pass_rate:g})"
            )
        # Plain attributes: xdist sends report.__dict__ to the controller (user_properties
        # would work too, but would leak into --junitxml).
        report.harness_id = item.result.id
        report.harness_result = dump_json(item.result)
        report.harness_status = item.result.status
        behaviours = item.behaviours()
        if behaviours is not None:
            report.harness_coverage = behaviours
        if item.result.run is not None:
            report.harness_run = item.result.run  # its place in results.json's order
        if item.internal_error:
            report.harness_internal = item.internal_error
        if item.not_written:
            report.harness_not_written = item.not_written
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """Once a scenario's reports are made, its item lets go of its run: the item lives
    until the session ends, and a suite's memory would grow with every scenario's record
    (transcript, events; its test report carried it to the results)."""
    outcome = yield
    if isinstance(item, ScenarioItem):
        item.let_go()
    return outcome


# The session's packed scenarios (harness._spool.Blobs, one file per pytest config).
_PACKS = pytest.StashKey[Blobs]()


def _packs(config: pytest.Config) -> Blobs:
    """Where this session's items keep their packed scenarios (made on first use). Not
    closed when the session ends: an item can still be asked for its scenario after (a
    pytester run's items); the file, which has no name on disk, goes when the config and
    the items are dropped, or when the process ends."""
    if _PACKS not in config.stash:
        config.stash[_PACKS] = Blobs()
    return config.stash[_PACKS]


def _pack(scenario: Scenario, packs: Blobs) -> tuple[int, int] | None:
    """Where in ``packs`` the scenario's model is, pickled and deflated (about 2 kB for a
    typical scenario, ten times less than the model, on disk: an item keeps two numbers);
    None when it does not pickle (a plugin put something unpicklable in it), which keeps
    the model itself."""
    import pickle
    import zlib

    try:
        data = zlib.compress(pickle.dumps(scenario, protocol=pickle.HIGHEST_PROTOCOL), 1)
    except Exception:  # any object can refuse pickling, in any way
        return None
    return packs.put(data)


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Any:
    """A scenario that ended in ``error`` shows as a pytest error."""
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
