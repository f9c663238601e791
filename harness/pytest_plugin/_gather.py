"""What a session gathers as it runs: each scenario's result, coverage, spending and
errors from its test report, and, on the controller of ``-n N``, what each xdist worker
collected, deselected and could not load (into the session's ledger and outputs).

Each item's ScenarioResult travels on its test report as JSON (xdist ships a report's
``__dict__`` to the controller), so a serial run and an ``-n N`` run gather the same
results, in the one process that writes files.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness._coverage import Behaviours
from harness.pytest_plugin._budget import taken
from harness.pytest_plugin._options import SUFFIXES

if TYPE_CHECKING:
    from harness._results import ScenarioResult
    from harness.pytest_plugin._ledger import CollectionLedger
    from harness.pytest_plugin._outputs import SessionOutputs

__all__ = ["Gathering"]


class Gathering:
    """The pytest plugin that gathers a session's test reports into its ledger and
    outputs (the session's own objects: harness.pytest_plugin._session makes them)."""

    NAME = "harness-gathering"

    def __init__(
        self, config: pytest.Config, ledger: CollectionLedger, outputs: SessionOutputs
    ) -> None:
        self.config = config
        self.ledger = ledger
        self.outputs = outputs
        self._is_worker = hasattr(config, "workerinput")  # it runs items, writes nothing

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        """A worker keeps what it deselected, for the controller's count."""
        if self._is_worker:
            self.ledger.deselected.extend(item.nodeid for item in items)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """A worker sends what it collected to the controller."""
        sent = self.ledger.as_sent() if self._is_worker else None
        if sent is not None:
            # Sent to the controller when the worker finishes (pytest_testnodedown).
            # xdist gives a worker's config this attribute; pytest's Config does not declare it.
            self.config.workeroutput["harness"] = sent  # type: ignore[attr-defined]

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """The controller takes in what a finished worker collected and deselected."""
        sent = (getattr(node, "workeroutput", None) or {}).get("harness")
        if not sent:
            return
        self.ledger.take(sent)
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
        """The controller gathers each scenario's result from its test report."""
        if self._is_worker:
            return
        text = getattr(report, "harness_result", None)
        if text is None:
            if taken(self.outputs.budget, report, self._id_of(report.nodeid)):
                return  # not run for the budget, or not needed (sequential repeats)
            if report.skipped and any(f"{suffix}::" in report.nodeid for suffix in SUFFIXES):
                self.ledger.skipped[self._id_of(report.nodeid)] = _skip_reason(report)
            return
        # Keyed by id: a rerun of the same scenario replaces its earlier result. Kept on
        # disk, and not on the report, which pytest's statistics keep to the end.
        sid = report.harness_id
        taken(self.outputs.budget, report, sid)  # what it spent
        result = _checked(sid, text, self.outputs.report_errors)
        self.outputs.results.add(result)  # with its run, what is counted
        del report.harness_result
        behaviours = getattr(report, "harness_coverage", None)
        if behaviours is not None:
            # Under its scenario's id: a repeated scenario's runs cover as one.
            self.outputs.coverage.add(
                result.scenario_key, Behaviours.from_json(json.loads(behaviours))
            )
        internal = getattr(report, "harness_internal", None)
        if internal:
            self.outputs.internal_errors.append(internal)
        not_written = getattr(report, "harness_not_written", None)
        if not_written:
            self.outputs.report_errors.append(not_written)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """Note a scenario file that did not load (once), and stop as serial pytest does."""
        if not report.failed or not report.nodeid.endswith(SUFFIXES):
            return
        errors = self.ledger.collection_errors
        if report.nodeid in errors:
            return  # the same file, reported again by another xdist worker
        errors[report.nodeid] = str(report.longrepr)
        self.ledger.unloaded_files.add(_project_file(Path(self.config.rootpath, report.nodeid)))
        if self._is_worker or self.config.getoption("continue_on_collection_errors", False):
            return
        # Serial pytest stops after collection errors and runs nothing; under xdist the
        # workers would run on and exit 1. Stop there too, so both end the same way.
        dsession = self.config.pluginmanager.get_plugin("dsession")
        if dsession is not None and getattr(dsession, "shouldstop", None) is False:
            dsession.shouldstop = f"{len(errors)} scenario file(s) did not load"

    def _id_of(self, nodeid: str) -> str:
        """A scenario item's id (``path::name``, the path relative to its project root)."""
        file, _, name = nodeid.partition("::")
        name = name.split("@seq-")[0]  # a sequential run under xdist: its group's suffix
        return f"{_project_file(Path(self.config.rootpath, file))}::{name}"


def _checked(sid: str, text: str, report_errors: list[str]) -> ScenarioResult:
    """A scenario's result as its test report carried it, or, when it does not read
    back (a plugin left infinity in the run, which JSON writes as null), an entry in
    error, and a report error (exit 3): the other scenarios keep their results.
    """
    from pydantic import ValidationError

    from harness._actions import FinalResponse
    from harness._errors import describe_errors
    from harness._results import ScenarioResult

    try:
        return ScenarioResult.model_validate_json(text)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        message = f"its result cannot be written: {describe_errors(errors, show_input=True)}"
        if all(err.get("input") is None for err in errors):
            message += " (infinity or NaN, which JSON cannot hold)"
    line = f"{sid}: {message}"
    if line not in report_errors:
        report_errors.append(line)
    raw = json.loads(text)
    return ScenarioResult(
        id=sid,
        name=str(raw.get("name") or sid),
        file=str(raw.get("file") or ""),
        status="error",
        termination="error",
        final=FinalResponse(error={"type": "error", "message": message}),
    )


class _Deselected:
    """An item an xdist worker deselected, as the controller's terminal stats count it
    (the controller has no items; plugins that read the stats find a node id)."""

    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid


def _skip_reason(report: pytest.TestReport) -> str:
    """Why pytest skipped an item, as its mark or ``pytest.skip`` said."""
    wasxfail = getattr(report, "wasxfail", None)
    if wasxfail is not None:
        return f"xfail, not run: {wasxfail}" if wasxfail else "xfail, not run"
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else longrepr
    return str(reason).removeprefix("Skipped: ") or "skipped"


def _project_file(path: Path) -> str:
    """A file as scenario ids name it: its POSIX path relative to its project root."""
    from harness._project import project_relative, project_root

    return project_relative(path, project_root(path.parent))
