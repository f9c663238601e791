"""``harness report RESULTS.json [--baseline B.json] [-o OUT.html]``: render saved results."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pydantic import ValidationError

from harness.report.diff import diff_results
from harness.report.html import write_html
from harness.results import SCHEMA_VERSION, Results

__all__ = ["ReportInputError", "load_results", "report_main"]

PROG = "harness report"


class ReportInputError(Exception):
    """A results file that cannot be used; the message is one line meant for people."""


def load_results(path: str | Path, *, what: str = "results file") -> Results:
    """Read a results.json file, or raise ReportInputError saying what is wrong with it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportInputError(f"{what} {str(path)!r} does not exist") from None
    except IsADirectoryError:
        raise ReportInputError(f"{what} {str(path)!r} is a directory, not a file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportInputError(f"cannot read {what} {str(path)!r}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportInputError(
            f"{what} {str(path)!r} is not valid JSON: {exc.msg} "
            f"(line {exc.lineno}, column {exc.colno})"
        ) from None
    if not isinstance(data, dict) or "scenarios" not in data:
        raise ReportInputError(
            f"{what} {str(path)!r} is not a harness results file (no 'scenarios'); "
            "write one with `harness run --json FILE`"
        )
    version = data.get("schema_version")
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise ReportInputError(
            f"{what} {str(path)!r} has schema_version {version}, newer than this harness "
            f"understands ({SCHEMA_VERSION}); upgrade harness"
        )
    try:
        return Results.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        more = exc.error_count() - 1
        extra = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise ReportInputError(
            f"{what} {str(path)!r} is not a valid harness results file: "
            f"{where}: {first['msg']}{extra}"
        ) from None


class _Parser(argparse.ArgumentParser):
    # argparse prints the usage and exits on a bad flag; the command wants one line
    # and exit status 2 from report_main itself.
    def error(self, message: str) -> None:  # type: ignore[override]
        raise ReportInputError(message)


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
    except ReportInputError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    try:
        results = load_results(args.results)
        diff = None
        if args.baseline:
            old = load_results(args.baseline, what="baseline")
            diff = diff_results(old, results, source=args.baseline)
    except ReportInputError as exc:
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
