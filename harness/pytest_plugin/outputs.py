"""What a session makes at its end: results.json, the HTML report, the Markdown summary
(and GitHub's job summary), and the harness summary printed in the terminal.

Only the controlling process writes (never an xdist worker), and only a session that
ran something: one that stopped part way or ran nothing leaves the last reports as they
were (harness.pytest_plugin.session decides).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness._sections import Section
    from harness.pytest_plugin.session import SuiteState
    from harness.results import Results

__all__ = ["GITHUB_STEP_SUMMARY", "finish_results", "shown_path", "summary_lines"]

# The file GitHub Actions shows as a job's summary, when the job runs there.
GITHUB_STEP_SUMMARY = "GITHUB_STEP_SUMMARY"


def finish_results(state: SuiteState) -> None:
    """Build the session's results (``state.outputs.final``) and write the reports asked
    for; what cannot be written is a report error (exit 3), the rest are still written."""
    outputs, options = state.outputs, state.options
    try:
        final = outputs.final = state.build()
    except Exception as exc:  # a bug between results and reports must still show
        outputs.report_errors.append(f"results not built: {type(exc).__name__}: {exc}")
        return
    sections = _sections(state, final)
    if options.json_path is not None:
        _write(state, options.json_path, final.write)
    if options.html_path is not None:

        def html(path: Path) -> None:
            from harness.report import write_html

            write_html(path, final, sections=sections)  # the diff is in final.baseline

        _write(state, options.html_path, html)
    if options.markdown_path is not None:
        _write(state, options.markdown_path, lambda path: _markdown(state, final, path))
    step_summary = os.environ.get(GITHUB_STEP_SUMMARY)
    if step_summary and (options.json_path or options.html_path or options.markdown_path):
        _append_step_summary(state, final, Path(step_summary))


def _sections(state: SuiteState, final: Results) -> tuple[Section, ...]:
    """The report sections of the session's project (its plugins' and the built-ins'),
    gathered once for every medium; a plugin that failed is a report error (exit 3)."""
    outputs = state.outputs
    if outputs.sections is None:
        from harness.plugins import discover
        from harness.project import project_root
        from harness.report._sections import Gathered, gather_sections

        try:
            plugins = discover(project_root(Path(state.config.invocation_params.dir)))
            outputs.sections = gather_sections(final, plugins)
        except Exception as exc:  # the project's plugins did not load: reports go on
            outputs.sections = Gathered(errors=(f"report sections: {_why(exc)}",))
        outputs.report_errors.extend(outputs.sections.errors)
    return outputs.sections.sections


def _write(state: SuiteState, path: Path, write: Callable[[Path], object]) -> None:
    try:
        write(path)
        state.outputs.written.append(path)
    except Exception as exc:
        state.outputs.report_errors.append(f"{state.shown(path)} not written: {_why(exc)}")


def _markdown(state: SuiteState, final: Results, path: Path | None) -> str:
    """The Markdown summary; written to ``path`` when one is given."""
    from harness.files import atomic_write
    from harness.report.markdown import render_markdown
    from harness.secrets import scrub_text

    html = state.options.html_path
    shown = state.shown(html) if html is not None else None
    text = scrub_text(render_markdown(final, report=shown, sections=_sections(state, final)))
    if path is not None:
        atomic_write(path, text)
    return text


def _append_step_summary(state: SuiteState, final: Results, path: Path) -> None:
    """Add the Markdown summary to GitHub's job summary (a file the job appends to)."""
    try:
        text = _markdown(state, final, None)
        with path.open("a", encoding="utf-8") as out:
            out.write(text)
    except Exception as exc:
        line = f"${GITHUB_STEP_SUMMARY} ({path}) not written: {_why(exc)}"
        state.outputs.report_errors.append(line)


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}"


def summary_lines(state: SuiteState, *, cwd: Path, slowest: int = 5) -> list[str]:
    """The end-of-run summary: counts, pass rates, skips, the baseline diff with what
    changed, and where the reports are."""
    from harness.report.text import baseline_lines, results_lines, skipped_lines

    outputs, ledger = state.outputs, state.ledger
    results = outputs.final
    if results is None and outputs.results:
        results = state.build()
    lines: list[str] = []
    if results is not None and results.scenarios:
        lines.extend(results_lines(results, slowest=slowest))
    if results is not None and results.coverage is not None:
        from harness.report.coverage import coverage_lines

        lines.extend(coverage_lines(results.coverage, state.options.coverage_fail_under))
    lines.extend(skipped_lines(ledger.skipped))
    if results is not None and results.scenarios:
        from harness.report._sections import text_section_lines

        lines.extend(text_section_lines(_sections(state, results)))
    if outputs.diff is not None:
        shown = shown_path(state.baseline.path, cwd) if state.baseline else "baseline"
        report = state.options.html_path
        lines.extend(
            baseline_lines(
                outputs.diff,
                shown,
                report=shown_path(report, cwd) if report in outputs.written else None,
            )
        )
    lines.extend(_ending_lines(state, cwd))
    return lines


def _ending_lines(state: SuiteState, cwd: Path) -> list[str]:
    """Why reports were not written, what went wrong, and what was written."""
    outputs, ledger, options = state.outputs, state.ledger, state.options
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
