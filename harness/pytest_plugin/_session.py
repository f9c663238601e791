"""The session: what one pytest session knows about its scenarios, and what it makes of
them at the end.

``SuiteState`` holds the session's options, its ledger and its outputs, which the
session's other plugins fill as it runs (``_gather``: the test reports; ``tracing``, a
run in parts' ``_parts``); at the end it builds results.json (with the baseline diff)
and has the reports written (``outputs``), in the one process that writes files.
Reports are not written when the session stopped part way (Ctrl-C, collection errors).
Exit status: 2 when a scenario file failed to load (also under xdist, which otherwise
runs on and exits 1), 3 when harness crashed or a report could not be written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pytest

from harness._exitcodes import EXIT
from harness.pytest_plugin._budget import left_unrun, run_budget
from harness.pytest_plugin._ledger import CollectionLedger
from harness.pytest_plugin._options import SessionOptions, session_options
from harness.pytest_plugin._outputs import SessionOutputs

if TYPE_CHECKING:
    from collections.abc import Callable

    from harness._baseline import BaselineDiff, Correction
    from harness._results import Results
    from harness.pytest_plugin._budget import Budget
    from harness.pytest_plugin._live import ConcurrentRuns
    from harness.pytest_plugin._parts import RunPart
    from harness.pytest_plugin._sequential import Sequences

__all__ = [
    "Baseline",
    "SuiteState",
    "diff_against_baseline",
    "get_state",
    "pytest_configure",
    "pytest_unconfigure",
    "state_of",
]


class Baseline(NamedTuple):
    """The results a session compares with, and the file they came from."""

    path: Path
    results: Results


@dataclass(eq=False)  # hashable by identity: pytest keeps plugins in sets
class SuiteState:
    """What one pytest session knows about its scenarios (one per process): its
    options, what it collected (``ledger``) and what it made (``outputs``).

    It is registered as a pytest plugin for the session: its hooks start the run's
    clock, and at the end build the results, have the reports written, set the exit
    status and print the harness summary. The test reports are gathered into its ledger
    and outputs by ``_gather.Gathering``, registered beside it.
    """

    config: pytest.Config
    options: SessionOptions = field(default_factory=SessionOptions)
    baseline: Baseline | None = None
    ledger: CollectionLedger = field(default_factory=CollectionLedger)
    outputs: SessionOutputs = field(default_factory=SessionOutputs)
    # The runs --harness-concurrency started ahead (see harness.pytest_plugin._live).
    runs: ConcurrentRuns | None = None
    # The sequential scenarios' runs so far (harness.pytest_plugin._sequential), and this
    # process's share of the run's budget (harness.pytest_plugin._budget).
    sequences: Sequences | None = None
    budget: Budget | None = None
    # --harness-plugin modules, forgotten when the session ends.
    added_plugins: list[str] = field(default_factory=list)
    # One part of a run in several sessions (`harness run --chunk-size`, set by it:
    # take_part; harness.pytest_plugin._parts).
    part: RunPart | None = None

    @property
    def is_worker(self) -> bool:
        """True in an xdist worker (which runs items but writes nothing)."""
        return hasattr(self.config, "workerinput")

    @property
    def cwd(self) -> Path:
        """Where pytest started (paths in messages are shown from there)."""
        return Path(self.config.invocation_params.dir)

    def take_part(self, part: RunPart) -> None:
        """Make this session a part of a run in parts (harness.cli._parts)."""
        from harness._spool import ResultSpool

        self.part = part
        if part.earlier is not None:
            # The part's results go to the run's file, each process its own index.
            self.outputs.results = ResultSpool(part.earlier.blobs)
        if part.ids_seen is not None:  # a listing round (with --shard) says nothing
            self.config.pluginmanager.unregister(name="harness-part")

    def session_budget(self) -> Budget | None:
        """This process's share of the run's budget (made at first use: a part of a run
        in parts learns what came before it after pytest_configure); None without one."""
        if self.budget is None and (self.options.max_requests or self.options.max_cost):
            from harness.pytest_plugin._budget import Budget

            worker = getattr(self.config, "workerinput", None)
            self.budget = Budget(self.options, worker, self.part)
        return self.budget

    def build(self) -> Results:
        """results.json for the scenarios seen so far (sorted by id; baseline diff added).

        Its scenarios stay on disk (a ScenarioList over the session's spool): the reports
        read them one at a time.
        """
        from harness._results import build_results

        outputs = self.outputs
        results = build_results(
            outputs.results, started=outputs.started, skipped=self.ledger.skipped
        )
        results.budget = run_budget(self.options, outputs.budget)
        if self.options.coverage:
            results.coverage = outputs.coverage.coverage()
        if self.ledger.shard is not None:
            not_run = self.ledger.shard_not_run()
            results.meta["shard"] = {**self.ledger.shard, "not_run": not_run}
        if self.baseline is not None:
            from harness._project import project_root

            ran = set(outputs.results)
            root = project_root(self.config.invocation_params.dir)
            old = self.baseline.results
            not_run_ids = self.ledger.not_run(old, ran, root, self._within_paths)
            outputs.diff = diff_against_baseline(
                old,
                results,
                self.baseline.path,
                not_run=not_run_ids,
                correction=self.options.regression_correction,
            )
            results.baseline = outputs.diff
        return results

    def _within_paths(self, path: Path) -> bool:
        """Whether ``path`` lies under one of the paths this session collects from."""
        from harness._results import ScenarioId

        here = Path(self.config.invocation_params.dir)
        target = path.resolve()
        for arg in (self.part.run_paths if self.part else ()) or self.config.args:
            given = (here / ScenarioId.file_of(str(arg))).resolve()
            if target == given or given in target.parents:
                return True
        return False

    # pytest hooks of the session -------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """The run starts now (results.json's ``meta.started``; a run in parts': when its
        first part did)."""
        self.outputs.started = datetime.now(UTC)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Build the results and write the reports (unless the session stopped part way or
        ran nothing), and set the exit status."""
        from harness.pytest_plugin._outputs import finish_results

        if self.runs is not None:
            self.runs.close()  # runs started ahead that no item took (the session stopped)
        if self.is_worker:
            return
        status = int(session.exitstatus)
        stopped = session.shouldfail or session.shouldstop or status not in (0, 1, 5)
        part = self.part
        if part is not None and part.to_come and not stopped:
            part.handed_on = True  # harness run gathers this part's ledger and outputs
            return
        # The run's end, or a part that stops it: the whole run's.
        joined = part is not None and part.take_earlier(self.ledger, self.outputs)
        outputs = self.outputs
        if status == pytest.ExitCode.NO_TESTS_COLLECTED and joined and outputs.results:
            # The end of a run in parts collects nothing of its own: the run did run.
            status = pytest.ExitCode.OK
        # Ctrl-C, collection errors and pytest's own crashes stop a session part way: its
        # results would overwrite good reports with partial ones.
        outputs.interrupted = status in (
            pytest.ExitCode.INTERRUPTED,
            pytest.ExitCode.INTERNAL_ERROR,
        )
        # A session that ran nothing (--collect-only, everything skipped or deselected)
        # has nothing to report: the last run's reports stay as they were.
        if outputs.results and not outputs.interrupted:
            finish_results(self.build, self.options, outputs, self.cwd)
        session.exitstatus = _exit_status(status, self.options, self.ledger, outputs)
        if part is not None and part.collects_nothing:
            # The end of a run in parts has no terminal reporter (harness.cli._parts): its
            # pytest lines would say "no tests ran". The summary is the run's last word.
            from _pytest.config import create_terminal_writer

            writer = create_terminal_writer(self.config)
            self._summary(lambda title: writer.sep("=", title), writer.line)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Print the harness summary."""
        self._summary(
            lambda title: terminalreporter.write_sep("=", title), terminalreporter.write_line
        )

    def _summary(self, heading: Callable[[str], None], line: Callable[..., None]) -> None:
        handed_on = self.part is not None and self.part.handed_on
        if self.is_worker or handed_on or self.config.get_verbosity() < -1:
            return
        outputs, ledger, options = self.outputs, self.ledger, self.options
        if not (
            outputs.results
            or outputs.written
            or outputs.report_errors
            or ledger.collection_errors
            or ledger.skipped
            or (outputs.interrupted and (options.json_path or options.html_path))
        ):
            return
        heading("harness summary")
        from harness.pytest_plugin._outputs import summary_lines

        results = outputs.final
        if results is None and outputs.results:
            results = self.build()  # (stopped part way: counted, not written)
        baseline = self.baseline.path if self.baseline is not None else None
        lines = summary_lines(results, outputs, ledger, options, cwd=self.cwd, baseline=baseline)
        for text in lines:
            alarm = any(w in text for w in ("did not load", "report error", "harness crashed"))
            line(text, red=alarm, bold=alarm)

    @pytest.hookimpl(trylast=True)
    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """A session harness stopped ends on harness's line alone: pytest would show it
        as ``_pytest.outcomes.Exit: <line>``, its exception's class path first."""
        stopped_by = self.outputs.stopped_by
        if stopped_by is None or not isinstance(excinfo.value, pytest.exit.Exception):
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        memo = getattr(reporter, "_keyboardinterrupt_memo", None)
        crash = getattr(memo, "reprcrash", None)
        if crash is not None:
            crash.message = stopped_by


def _exit_status(
    status: int, options: SessionOptions, ledger: CollectionLedger, outputs: SessionOutputs
) -> int:
    """The session's exit status, from pytest's and what harness made of the run."""
    final = outputs.final
    if status == 0 and final is not None and final.below_min_pass_rate():
        status = EXIT["failed"]  # a scenario's runs fell short of its min_pass_rate
    if status == 0 and options.fail_on_skip and ledger.skipped:
        status = EXIT["failed"]
    if status == 0 and (_below_required(options, final) or left_unrun(final)):
        status = EXIT["failed"]
    if ledger.collection_errors and status in (0, 1, 5):
        status = EXIT["bad_input"]
    if outputs.report_errors or outputs.internal_errors:
        status = EXIT["internal"]
    return status


def _below_required(options: SessionOptions, final: Results | None) -> bool:
    """Whether the run covered less than --harness-coverage-fail-under asks."""
    required = options.coverage_fail_under
    coverage = final.coverage if final is not None else None
    return required is not None and coverage is not None and coverage.below(required)


_STATE = pytest.StashKey[SuiteState]()


def get_state(config: pytest.Config) -> SuiteState | None:
    """The harness state of a pytest session (None before it is configured)."""
    return config.stash.get(_STATE, None)


def state_of(config: pytest.Config) -> SuiteState:
    """The harness state of a pytest session, made now if harness came in late."""
    state = get_state(config)
    if state is None:  # only when harness was registered after pytest_configure
        state = config.stash[_STATE] = SuiteState(config)
    return state


def pytest_configure(config: pytest.Config) -> None:
    """Make the session's state, register it, and load --harness-plugin and the baseline."""
    config.addinivalue_line("markers", "scenario: a harness scenario (*.scenario.yaml) item")
    # Sequential runs carry it, with or without xdist (which declares it too).
    config.addinivalue_line("markers", "xdist_group(name): runs kept on one xdist worker")
    state = SuiteState(config, session_options(config))
    if state.options.otel_content and not (state.options.otel_path or state.options.otel_endpoint):
        raise pytest.UsageError(
            "--harness-otel-content says what traces hold: give --harness-otel FILE or "
            "--harness-otel-endpoint URL too (harness run: --otel / --otel-endpoint)"
        )
    config.stash[_STATE] = state
    config.pluginmanager.register(state, "harness-suite")
    from harness.pytest_plugin._gather import Gathering

    gathering = Gathering(config, state.ledger, state.outputs)
    config.pluginmanager.register(gathering, Gathering.NAME)
    from harness.pytest_plugin._sequential import Sequences

    state.sequences = Sequences()
    config.pluginmanager.register(state.sequences, Sequences.NAME)
    if state.options.otel_path or state.options.otel_endpoint:
        from harness.pytest_plugin._tracing import TraceExport

        export = TraceExport(config, state.options, state.outputs)
        config.pluginmanager.register(export, TraceExport.NAME)
    part = config.getoption("harness_part", None)
    if part is not None:  # harness run --chunk-size's
        from harness.pytest_plugin._parts import PartLine

        config.pluginmanager.register(PartLine(config, part), PartLine.NAME)
    modules = config.getoption("harness_plugin") or []
    if modules:
        _load_harness_plugins(modules, state)
    baseline_path = state.options.baseline_path
    if baseline_path is not None and not state.is_worker:
        state.baseline = Baseline(
            baseline_path, _load_baseline(config.getoption("harness_baseline"))
        )


def _load_harness_plugins(modules: list[str], state: SuiteState) -> None:
    from harness._errors import HarnessError
    from harness._plugins import load_plugin_modules

    # Recorded first: pytest_unconfigure forgets them even when one fails to load.
    state.added_plugins.extend(modules)
    try:
        load_plugin_modules(modules)
    except HarnessError as exc:
        # The message names --harness-plugin already (harness._plugins says where).
        raise pytest.UsageError(str(exc)) from None


def _load_baseline(given: str) -> Results:
    from harness._results import ResultsFileError, load_results

    # The loader of `harness run --baseline`: the same checks, the same one-line errors,
    # the entries read one at a time and kept on disk (docs/running.md#large-suites).
    # (The path as given, relative to the current directory, which is pytest's start.)
    try:
        return load_results(given, what="--harness-baseline")
    except ResultsFileError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_unconfigure(config: pytest.Config) -> None:
    """Unregister the session's state and forget the plugins it added."""
    state = get_state(config)
    if state is None:
        return
    if config.pluginmanager.is_registered(state):
        config.pluginmanager.unregister(state)
    # The spool is not closed here: results.json's Results (harness run's
    # --update-baseline reads it after pytest) read their scenarios from it. Its file has
    # no name on disk and goes when the last of them is dropped.
    for name in ("harness-gathering", "harness-otel", "harness-sequential", "harness-part"):
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)
    if state.added_plugins:
        # Plugins added for this session must not leak into the next one in the same
        # process (pytester's in-process runs, `harness run` called from Python).
        from harness._plugins import discovery

        discovery.reset()


def diff_against_baseline(
    old: Results,
    new: Results,
    source: Path | None,
    *,
    not_run: set[str] | None = None,
    correction: Correction = "holm",
) -> BaselineDiff:
    """The ``baseline`` section of results.json (harness.report's diff); ``not_run`` ids
    are listed as not run instead of removed; pass-rate drops corrected by
    ``correction``."""
    from harness._project import project_relative, project_root
    from harness.report import diff_results

    name = None
    if source is not None:
        # Relative to the baseline's own project root, so that results depend neither on
        # the checkout's location nor on where the run started (a baseline in no project
        # falls back to the current directory, as project_root does).
        name = project_relative(source, project_root(source))
    return diff_results(old, new, source=name, not_run=not_run or (), correction=correction)
