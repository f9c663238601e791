"""What a session makes: its outputs (``SessionOutputs``: results, coverage, what it
spent, what went wrong), and at its end results.json, the HTML report, the Markdown
summary (and GitHub's job summary), and the harness summary printed in the terminal.

Only the controlling process writes (never an xdist worker), and only a session that
ran something: one that stopped part way or ran nothing leaves the last reports as they
were (harness.pytest_plugin._session decides).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness._coverage import CoverageTable
from harness._spool import ResultSpool

if TYPE_CHECKING:
    from harness._baseline import BaselineDiff
    from harness._results import Results
    from harness._sections import Section
    from harness.pytest_plugin._ledger import CollectionLedger
    from harness.pytest_plugin._options import SessionOptions

__all__ = [
    "GITHUB_STEP_SUMMARY",
    "SessionOutputs",
    "Spent",
    "finish_results",
    "shown_path",
    "summary_lines",
]


@dataclass
class Spent:
    """What the scenarios that ran spent, and the ones not run for the budget (id ->
    why): what a session reports (SessionOutputs.budget, gathered from test reports;
    harness.pytest_plugin._budget)."""

    requests: int = 0
    cost: float = 0.0
    not_run: dict[str, str] = field(default_factory=dict)

    def extend(self, later: Spent) -> None:
        """Add what a later part of the run spent."""
        self.requests += later.requests
        self.cost = round(self.cost + later.cost, 9)
        self.not_run.update(later.not_run)


@dataclass
class SessionOutputs:
    """What a session made: its results, the reports written, and what went wrong."""

    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    # Scenario id -> its ScenarioResult as JSON (what the test reports carry), kept on
    # disk: a suite's size does not weigh on the session's memory.
    results: ResultSpool = field(default_factory=ResultSpool)
    # results.json as written (with its baseline diff), and the files written.
    final: Results | None = None
    diff: BaselineDiff | None = None
    written: list[Path] = field(default_factory=list)
    # Harness crashes (exit 3) and reports not written (exit 3), one line each.
    internal_errors: list[str] = field(default_factory=list)
    report_errors: list[str] = field(default_factory=list)
    # Stopped part way (Ctrl-C, pytest's own crash): nothing written.
    interrupted: bool = False
    # The session built its results and wrote its reports (finish_results): the
    # traces (harness.pytest_plugin._tracing) follow them.
    reported: bool = False
    # The one line harness stopped the session with (a refused recording).
    stopped_by: str | None = None
    # With --harness-otel: scenario id -> what its trace needs that its result does not
    # keep (harness.pytest_plugin._tracing's RunFacts as JSON, from the test reports).
    trace_facts: dict[str, str] = field(default_factory=dict)
    # With --harness-coverage: the behaviours the scenarios that ran covered, gathered
    # from the test reports (docs/coverage.md): the table, never a scenario's record.
    coverage: CoverageTable = field(default_factory=CoverageTable)
    # With a budget: what the scenarios that ran spent, and those left unrun for it.
    budget: Spent = field(default_factory=Spent)
    sections: Any = None  # the report sections' Gathered, made once for every medium

    def extend(self, later: SessionOutputs) -> None:
        """Take in what a later session made (a later part of a run in parts): its
        results (sharing this spool's file), coverage, errors and traces' facts."""
        self.started = min(self.started, later.started)
        self.results.extend(later.results)
        self.coverage.update(later.coverage)
        self.budget.extend(later.budget)
        self.internal_errors.extend(later.internal_errors)
        self.report_errors.extend(later.report_errors)
        self.trace_facts.update(later.trace_facts)


# The file GitHub Actions shows as a job's summary, when the job runs there.
GITHUB_STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


def finish_results(
    build: Callable[[], Results], options: SessionOptions, outputs: SessionOutputs, cwd: Path
) -> None:
    """Build the session's results (``outputs.final``) and write the reports asked for;
    what cannot be written is a report error (exit 3), the rest are still written.
    ``cwd``: where pytest started (the paths in messages are shown from there)."""
    outputs.reported = True
    try:
        final = outputs.final = build()
    except Exception as exc:  # a bug between results and reports must still show
        outputs.report_errors.append(f"results not built: {type(exc).__name__}: {exc}")
        return
    sections = _sections(outputs, cwd, final)

    def write(path: Path, how: Callable[[Path], object]) -> None:
        try:
            how(path)
            outputs.written.append(path)
        except Exception as exc:
            outputs.report_errors.append(f"{shown_path(path, cwd)} not written: {_why(exc)}")

    if options.json_path is not None:
        write(options.json_path, final.write)
    if options.html_path is not None:

        def html(path: Path) -> None:
            from harness.report import write_html

            write_html(path, final, sections=sections)  # the diff is in final.baseline

        write(options.html_path, html)
    report = shown_path(options.html_path, cwd) if options.html_path is not None else None
    if options.markdown_path is not None:
        write(options.markdown_path, lambda path: _markdown(final, report, sections, path))
    step_summary = os.environ.get(GITHUB_STEP_SUMMARY)
    if step_summary and (options.json_path or options.html_path or options.markdown_path):
        _append_step_summary(final, report, sections, Path(step_summary), outputs)


def _sections(outputs: SessionOutputs, cwd: Path, final: Results) -> tuple[Section, ...]:
    """The report sections of the session's project (its plugins' and the built-ins',
    the project found from ``cwd``), gathered once for every medium; a plugin that
    failed is a report error (exit 3)."""
    if outputs.sections is None:
        from harness._plugins import discover
        from harness._project import project_root
        from harness.report._sections import Gathered, gather_sections

        try:
            plugins = discover(project_root(cwd))
            outputs.sections = gather_sections(final, plugins)
        except Exception as exc:  # the project's plugins did not load: reports go on
            outputs.sections = Gathered(errors=(f"report sections: {_why(exc)}",))
        outputs.report_errors.extend(outputs.sections.errors)
    return outputs.sections.sections


def _markdown(
    final: Results, report: str | None, sections: tuple[Section, ...], path: Path | None
) -> str:
    """The Markdown summary (``report``: the HTML report, as shown); written to ``path``
    when one is given."""
    from harness._files import atomic_write
    from harness._secrets import scrub_text
    from harness.report._markdown import render_markdown

    text = scrub_text(render_markdown(final, report=report, sections=sections))
    if path is not None:
        atomic_write(path, text)
    return text


def _append_step_summary(
    final: Results,
    report: str | None,
    sections: tuple[Section, ...],
    path: Path,
    outputs: SessionOutputs,
) -> None:
    """Add the Markdown summary to GitHub's job summary (a file the job appends to)."""
    try:
        text = _markdown(final, report, sections, None)
        with path.open("a", encoding="utf-8") as out:
            out.write(text)
    except Exception as exc:
        line = f"${GITHUB_STEP_SUMMARY} ({path}) not written: {_why(exc)}"
        outputs.report_errors.append(line)


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}"


def summary_lines(
    results: Results | None,
    outputs: SessionOutputs,
    ledger: CollectionLedger,
    options: SessionOptions,
    *,
    cwd: Path,
    baseline: Path | None = None,
    slowest: int = 5,
) -> list[str]:
    """The end-of-run summary: counts, pass rates, skips, the baseline diff with what
    changed (``baseline``: the file compared with), and where the reports are.
    ``results``: the session's (``outputs.final``, or built for the summary)."""
    from harness.report._text import baseline_lines, results_lines, skipped_lines

    lines: list[str] = []
    if results is not None and results.scenarios:
        lines.extend(results_lines(results, slowest=slowest))
    if results is not None and results.coverage is not None:
        from harness.report._coverage import coverage_lines

        lines.extend(coverage_lines(results.coverage, options.coverage_fail_under))
    lines.extend(skipped_lines(ledger.skipped))
    if results is not None and results.scenarios:
        from harness.report._sections import text_section_lines

        lines.extend(text_section_lines(_sections(outputs, cwd, results)))
    if outputs.diff is not None:
        shown = shown_path(baseline, cwd) if baseline is not None else "baseline"
        report = options.html_path
        lines.extend(
            baseline_lines(
                outputs.diff,
                shown,
                report=shown_path(report, cwd) if report in outputs.written else None,
            )
        )
    lines.extend(_ending_lines(outputs, ledger, options, cwd))
    return lines


def _ending_lines(
    outputs: SessionOutputs, ledger: CollectionLedger, options: SessionOptions, cwd: Path
) -> list[str]:
    """Why reports were not written, what went wrong, and what was written."""
    lines: list[str] = []
    asked = options.json_path or options.html_path or options.markdown_path
    if ledger.collection_errors:
        count = len(ledger.collection_errors)
        lines.append(
            f"{count} scenario file(s) did not load"
            + ("" if outputs.written else "; reports not written")
        )
    elif outputs.interrupted:
        lines.append("interrupted: nothing was written (reports and baseline left as they were)")
    elif asked and not outputs.results:
        lines.append(
            "no scenario ran: nothing was written (the last reports are left as they were)"
        )
    lines.extend(f"harness crashed: {error}" for error in outputs.internal_errors)
    lines.extend(f"report error: {error}" for error in outputs.report_errors)
    if outputs.written:
        lines.append("results: " + ", ".join(shown_path(p, cwd) for p in outputs.written))
    return lines


def shown_path(path: Path, cwd: Path) -> str:
    """A path as the user gave it: relative to ``cwd`` when below it."""
    try:
        return path.resolve().relative_to(cwd.resolve()).as_posix()
    except ValueError:
        return str(path)
