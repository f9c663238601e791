"""``harness coverage RESULTS.json [--uncovered] [--fail-under P] [--suggest [-o DIR]]``:
the behaviour coverage of a run (``harness run --coverage``), and scenarios for the
behaviours it did not cover (docs/coverage.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from harness._exitcodes import EXIT
from harness.cli._parsing import Parser, to_stderr

if TYPE_CHECKING:
    from harness._coverage import Coverage
    from harness.scenario._suggest import Suggestion

__all__ = ["add_arguments", "handle"]

PROG = "harness coverage"


def _percent(value: str) -> float:
    from harness.pytest_plugin._options import percent

    return percent(value)


def add_arguments(parser: Parser) -> None:
    """``harness coverage``'s description and options."""
    parser.description = (
        "Print the behaviour coverage of a run made with `harness run --coverage`; with "
        "--suggest, write a scenario for each uncovered behaviour a scenario can reach."
    )
    parser.usage_on_error = False
    parser.add_argument(
        "results", metavar="RESULTS.json", help="results written by harness run --coverage"
    )
    parser.add_argument(
        "--uncovered", action="store_true", help="list only the behaviours not covered"
    )
    parser.add_argument(
        "--fail-under",
        type=_percent,
        metavar="P",
        help="exit 1 when less than P%% of the behaviours were covered",
    )
    parser.add_argument(
        "--suggest",
        action="store_true",
        help="write, for each uncovered behaviour a scenario of the suite can reach, a "
        "scenario derived from it that covers it (each checked by a run)",
    )
    parser.add_argument(
        "-o",
        "--output",
        metavar="DIR",
        default="suggested",
        help="with --suggest: the folder of the scenarios written (default: suggested/)",
    )


def handle(args: argparse.Namespace) -> int:
    """Run ``harness coverage``: 0, 1 below --fail-under, 2 on bad input, 3 not written."""
    from harness._results import Entry, ResultsFileError, read_streamed
    from harness.report._coverage import coverage_lines, table_lines

    files: set[str] = set()

    def note(entry: Entry) -> None:
        files.add(entry.scenario.file)

    try:
        results = read_streamed(args.results, note)
    except ResultsFileError as exc:
        to_stderr(f"{PROG}: error: {exc}")
        return EXIT["bad_input"]
    coverage = results.coverage
    if coverage is None:
        to_stderr(
            f"{PROG}: error: {args.results} has no coverage: write it with "
            "`harness run --coverage` (or [tool.harness] coverage = true)"
        )
        return EXIT["bad_input"]
    for line in table_lines(coverage, uncovered_only=args.uncovered):
        print(line)
    if args.suggest:
        status = _suggest(coverage, Path(args.results), files, Path(args.output))
        if status is not None:
            return status
    for line in coverage_lines(coverage, args.fail_under)[1:]:
        print(line)
    below = args.fail_under is not None and coverage.below(args.fail_under)
    return EXIT["failed"] if below else EXIT["passed"]


def _suggest(coverage: Coverage, results: Path, files: set[str], out: Path) -> int | None:
    """Write the suggestions and say what became of each cell; an exit status when they
    could not be written."""
    from harness._project import display_path, project_root
    from harness.scenario._suggest import suggest

    # Ids name files relative to the project root of the run, which wrote the results.
    root = project_root(results.resolve().parent)
    paths = [root / file for file in sorted(files) if not file.startswith("<")]
    try:
        found = suggest(coverage, paths, out)
    except OSError as exc:
        to_stderr(f"{PROG}: error: not written: {exc.filename}: {exc.strerror or exc}")
        return EXIT["internal"]
    for line in _suggestion_lines(found, display_path(out)):
        print(line)
    return None


def _suggestion_lines(found: list[Suggestion], out: str) -> list[str]:
    from harness._project import display_path

    lines = []
    written = [s for s in found if s.path is not None]
    for s in found:
        kind, key = s.cell
        if s.path is not None:
            lines.append(f"suggested: {display_path(s.path)}: {kind} {key} (from {s.source})")
            if s.recording is not None:
                lines.append(f"  its MCP recording, copied: {display_path(s.recording)}")
        else:
            lines.append(f"not suggested: {kind} {key}: {s.why}")
    lines.append(
        f"{len(written)} scenario(s) written to {out}/ for {len(found)} uncovered "
        "behaviour(s) a derivation exists for"
        + (f"; rerun with them: harness run --coverage PATHS {out}" if written else "")
    )
    return lines
