"""``harness report RESULTS.json [--baseline B.json] [-o OUT.html]``: render saved results."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness._baseline import CORRECTIONS
from harness._exitcodes import EXIT
from harness._plugins import PluginError, discover
from harness._results import Results, ResultsFileError, load_results
from harness.cli._baseline import load_baseline
from harness.cli._parsing import Parser, UsageError, to_stderr
from harness.report._diff import diff_results
from harness.report._html import write_html
from harness.report._sections import Gathered, gather_sections

__all__ = ["add_arguments", "handle"]

PROG = "harness report"


def add_arguments(parser: Parser) -> None:
    """``harness report``'s description and options."""
    parser.description = "Render saved results (results.json) into one self-contained HTML report."
    # Every error of this command is one line, a bad flag's too: no usage first.
    parser.usage_on_error = False
    parser.add_argument(
        "results", metavar="RESULTS.json", help="results written by harness run --json"
    )
    parser.add_argument(
        "--baseline",
        metavar="B.json",
        help="results to compare with (e.g. reports/baseline.json); the diff goes at the top",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT.html",
        help="where to write the report (default: report.html beside RESULTS.json)",
    )
    parser.add_argument("--title", default="harness report", help="the page title")
    parser.add_argument(
        "--regression-correction",
        choices=CORRECTIONS,
        default="holm",
        help="how pass-rate drops are corrected for the scenarios compared at once "
        "(default holm; docs/gate.md)",
    )


def _error(message: str) -> None:
    to_stderr(f"{PROG}: error: {message}")


def handle(args: argparse.Namespace) -> int:
    """Run ``harness report``: 0 when the report was written, 2 on bad input, 3 if it
    could not be written (or was written without a failing plugin's sections)."""
    try:
        results = load_results(args.results)
        diff = None
        if args.baseline:
            old = load_baseline(args.baseline, "baseline")
            correction = args.regression_correction
            diff = diff_results(old, results, source=args.baseline, correction=correction)
    except (ResultsFileError, UsageError) as exc:
        _error(str(exc))
        return EXIT["bad_input"]
    output = Path(args.output) if args.output else Path(args.results).with_name("report.html")
    gathered = _sections(results)
    try:
        write_html(output, results, diff, title=args.title, sections=gathered.sections)
    except OSError as exc:
        _error(f"cannot write {str(output)!r}: {exc.strerror or exc}")
        return EXIT["internal"]
    except Exception as exc:  # a bug in harness: still one line, and its own exit status
        _error(
            "the report could not be rendered (a harness bug, please report "
            f"it): {type(exc).__name__}: {exc}"
        )
        return EXIT["internal"]
    changes = ""
    if diff is not None:
        counts = diff.counts()
        changes = "; vs baseline: " + ", ".join(f"{k} {n}" for k, n in counts.items())
    print(f"wrote {output} ({len(results.scenarios)} scenarios{changes})")
    for error in gathered.errors:  # the report is written, without that plugin's sections
        _error(error)
    return EXIT["internal"] if gathered.errors else EXIT["passed"]


def _sections(results: Results) -> Gathered:
    """The report sections of the current project's plugins (and the built-ins')."""
    try:
        plugins = discover()
    except PluginError as exc:
        return Gathered(errors=(str(exc),))
    return gather_sections(results, plugins)
