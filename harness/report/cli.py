"""``harness report RESULTS.json [--baseline B.json] [-o OUT.html]``: render saved results."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness.report.diff import diff_results
from harness.report.html import write_html
from harness.results import ResultsFileError, load_results

__all__ = ["report_main"]

PROG = "harness report"


class _UsageError(Exception):
    """A bad command line; the message is one line."""


class _Parser(argparse.ArgumentParser):
    # argparse prints the usage and exits on a bad flag; the command wants one line
    # and exit status 2 from report_main itself.
    def error(self, message: str) -> None:  # type: ignore[override]
        raise _UsageError(message)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Render saved results (results.json) into one self-contained HTML report.",
    )
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
    return parser


def report_main(argv: list[str] | None = None) -> int:
    """Run ``harness report``: 0 when the report was written, 2 on bad input, 3 if it
    could not be written."""
    args_list = sys.argv[1:] if argv is None else argv
    try:
        args = _parser().parse_args(args_list)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except _UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    try:
        results = load_results(args.results)
        diff = None
        if args.baseline:
            old = load_results(args.baseline, what="baseline")
            diff = diff_results(old, results, source=args.baseline)
    except ResultsFileError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    output = Path(args.output) if args.output else Path(args.results).with_name("report.html")
    try:
        write_html(output, results, diff, title=args.title)
    except OSError as exc:
        print(
            f"{PROG}: error: cannot write {str(output)!r}: {exc.strerror or exc}", file=sys.stderr
        )
        return 3
    except Exception as exc:  # a bug in harness: still one line, and its own exit status
        print(
            f"{PROG}: error: the report could not be rendered (a harness bug, please report "
            f"it): {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        return 3
    changes = ""
    if diff is not None:
        counts = diff.counts()
        changes = "; vs baseline: " + ", ".join(f"{k} {n}" for k, n in counts.items())
    print(f"wrote {output} ({len(results.scenarios)} scenarios{changes})")
    return 0
