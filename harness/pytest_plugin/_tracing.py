"""``--harness-otel FILE`` and ``--harness-otel-endpoint URL``: the session's runs as
OpenTelemetry traces (``harness run --otel`` / ``--otel-endpoint``).

The traces are written once, when the session ends, from the results the session
gathered (``SessionOutputs.results``), in the one process that writes files: a serial
run and an ``-n N`` run write the same file, sorted by scenario id. Building them from
the typed results rather than observing runs as they go keeps the engine and the runs
untouched (a run pays nothing for it), covers every kind of run the same way (harness's
loop, sub-agents, external targets, turns, repeats, matrices), and makes the trace a
function of the record: the same results, the same bytes. What results do not keep of a
scenario (its model and provider, which tools are remote agents, the tools' definitions)
travels beside each result on its test report, from the worker that ran it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from harness._results import ScenarioResult
    from harness.otel import PlannedTrace, RunFacts
    from harness.pytest_plugin._options import SessionOptions
    from harness.pytest_plugin._outputs import SessionOutputs
    from harness.scenario import Scenario

__all__ = ["TraceExport", "run_facts"]


def run_facts(scenario: Scenario, *, content: bool) -> RunFacts:
    """What a scenario says about its runs that their results do not keep."""
    from harness.otel import RunFacts

    llm = scenario.llm
    # A script answers for harness, whichever wire the target speaks.
    provider = "harness" if llm.provider == "scripted" or scenario.target else llm.provider
    remote = {}
    for name, spec in scenario.tools.items():
        where = spec.remote_spec
        if where is not None:
            remote[name] = where.url or f"scenario {where.scenario}"
    return RunFacts(provider, llm.model, remote, _definitions(scenario) if content else [])


def _definitions(scenario: Scenario) -> list[dict[str, Any]]:
    """The tools' Chat Completions definitions (none when they cannot be built here)."""
    from harness._errors import HarnessError
    from harness.scenario._loader import build_tools

    if scenario.target is not None:
        return []
    try:
        return [tool.openai_schema() for tool in build_tools(scenario).values()]
    except (HarnessError, ValueError):  # the run itself said what was wrong
        return []


def _traced(result: ScenarioResult, facts: RunFacts) -> Any:
    from harness._results import combination_label
    from harness.otel import Evaluation, TracedRun

    return TracedRun(
        id=result.id,
        name=result.name,
        file=result.file,
        status=result.status,
        run=result,
        transcript=result.transcript,
        evaluations=[Evaluation(e.path, e.ok, e.expected, e.actual) for e in result.expectations],
        facts=facts,
        repeat=result.run,
        matrix=combination_label(result.matrix) if result.matrix else None,
    )


class TraceExport:
    """The pytest plugin that writes (or sends) the session's traces when it ends: when
    the session wrote its reports (``outputs.reported``), from the results it gathered."""

    NAME = "harness-otel"

    def __init__(
        self, config: pytest.Config, options: SessionOptions, outputs: SessionOutputs
    ) -> None:
        self.config = config
        self.options = options
        self.outputs = outputs
        self.sent: str | None = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        """Carry the scenario's facts on its test report, beside its result."""
        from harness.scenario import Scenario

        report = yield
        # Any item with a scenario and its result (this module stays below the items').
        scenario = getattr(item, "scenario", None)
        if call.when == "call" and isinstance(scenario, Scenario) and getattr(item, "result", None):
            facts = run_facts(scenario, content=self.options.otel_content)
            report.harness_facts = json.dumps(asdict(facts))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """The controller keeps each scenario's facts."""
        facts = getattr(report, "harness_facts", None)
        if facts is not None and not hasattr(self.config, "workerinput"):  # the controller
            self.outputs.trace_facts[report.harness_id] = facts

    def traces(self, *, fixed: bool) -> Iterator[PlannedTrace]:
        """The planned traces of the session's runs, by scenario id, one result read at a
        time; ``fixed``: on the fixed epoch (a file), else on the session's start (a
        collector)."""
        from harness._results import ScenarioResult
        from harness.otel import Clock, RunFacts, plan_trace

        if fixed:
            clock = Clock()
        else:
            started = self.outputs.started
            epoch = int(started.timestamp() * 1000) * 1_000_000
            clock = Clock(epoch_ns=epoch, seed=started.isoformat())
        content = self.options.otel_content
        # The session's spool, by id: results.json's entries once it was built (it counts
        # the repeats of a repeated scenario's runs into the spool).
        results = self.outputs.results
        for scenario_id in sorted(results):
            result = ScenarioResult.model_validate_json(results[scenario_id])
            given = self.outputs.trace_facts.get(result.id)
            facts = RunFacts(**json.loads(given)) if given else RunFacts()
            yield plan_trace(_traced(result, facts), clock, content=content)

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Any:
        """After the reports (whose results are read once): write the file and send to the
        collector, unless the session stopped part way; exit 3 when that failed."""
        outcome = yield
        # As the reports: not when the session stopped part way or ran nothing, nor by a
        # part of a run that hands on to the next (the last part exports the whole run).
        if not self.outputs.reported or not self.outputs.results:
            return outcome
        try:
            self._export()
        except Exception as exc:  # a trace not written must not lose the other reports
            from harness._exitcodes import EXIT
            from harness._secrets import scrub_text

            self.outputs.report_errors.append(scrub_text(f"traces not exported: {exc}"))
            session.exitstatus = EXIT["internal"]
        return outcome

    def _export(self) -> None:
        from harness.otel import OtelError, send, write_file
        from harness.pytest_plugin._outputs import shown_path

        options, outputs = self.options, self.outputs
        if options.otel_path is not None:
            try:
                write_file(options.otel_path, self.traces(fixed=True))
            except OSError as exc:
                shown = shown_path(options.otel_path, self.config.invocation_params.dir)
                raise OtelError(f"{shown} not written: {exc.strerror or exc}") from None
            outputs.written.append(options.otel_path)
        if options.otel_endpoint is not None:
            send(options.otel_endpoint, self.traces(fixed=False))
            self.sent = options.otel_endpoint

    @pytest.hookimpl(trylast=True)  # after the harness summary
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Say where the traces went (a file is among the summary's results)."""
        if self.sent is not None and self.config.get_verbosity() >= -1:
            from harness._secrets import scrub_text
            from harness.otel import endpoint_url

            runs = len(self.outputs.results)
            terminalreporter.write_line(
                scrub_text(f"traces: {runs} run(s) sent to {endpoint_url(self.sent)}")
            )
