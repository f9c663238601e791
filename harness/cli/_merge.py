"""``harness merge SHARD.json... [--json OUT] [--html OUT] [--baseline B] [--update-baseline]``:
the results of ``harness run --shard K/N`` jobs joined into one results.json, one report
and one baseline diff, as one serial run would have written them."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from harness._baseline import CORRECTIONS
from harness._exitcodes import EXIT
from harness.cli._baseline import load_baseline, update_baseline
from harness.cli._parsing import Parser, UsageError, to_stderr

if TYPE_CHECKING:
    from collections.abc import Sequence

    from harness._baseline import BaselineDiff, Correction
    from harness._results import Results
    from harness._sections import Section
    from harness.report._sections import Gathered

__all__ = ["add_arguments", "handle"]

PROG = "harness merge"
REPORTS = Path("reports")


def add_arguments(parser: Parser) -> None:
    """``harness merge``'s description and options."""
    parser.description = (
        "Merge the results.json files of `harness run --shard K/N` jobs into one "
        "results.json, HTML report and baseline diff."
    )
    # Every refusal is one line: no usage first.
    parser.usage_on_error = False
    parser.add_argument("shards", nargs="+", metavar="SHARD.json", help="every shard's results")
    parser.add_argument(
        "--json", metavar="OUT", help="results file (default: reports/results.json)"
    )
    parser.add_argument("--html", metavar="OUT", help="HTML report (default: reports/report.html)")
    parser.add_argument(
        "--baseline",
        metavar="B",
        help="results to compare with (default: reports/baseline.json when it exists)",
    )
    parser.add_argument(
        "--update-baseline", action="store_true", help="write the merged results as baseline"
    )
    parser.add_argument(
        "--regression-correction",
        choices=CORRECTIONS,
        default="holm",
        help="how pass-rate drops are corrected for the scenarios compared at once "
        "(default holm; docs/gate.md)",
    )
    parser.add_argument(
        "--coverage-fail-under",
        type=_percent,
        metavar="P",
        help="exit 1 when the shards together covered less than P%% of the behaviours "
        "(shards run with --coverage)",
    )


def _percent(value: str) -> float:
    from harness.pytest_plugin._options import percent

    return percent(value)


def _error(message: str) -> int:
    to_stderr(f"{PROG}: error: {message}")
    return EXIT["bad_input"]


def handle(args: argparse.Namespace) -> int:
    """Run ``harness merge``: 0 all passed, 1 a scenario failed, 2 refused, 3 not written."""
    from harness._project import project_root
    from harness._results import ResultsFileError
    from harness._shards import MergeError, merge_files
    from harness.explore._merging import is_exploration

    if all(is_exploration(Path(shard)) for shard in args.shards):
        from harness.cli._explore import merge_shards

        return merge_shards(args)  # harness explore --shard K/N jobs (docs/explore.md)
    root = project_root()
    try:
        merged = merge_files(args.shards)
        baseline_path, old = _baseline(args, root)
    except (ResultsFileError, MergeError, UsageError) as exc:
        return _error(str(exc))
    if old is not None:
        merged.baseline = _diff(old, merged, baseline_path, args.regression_correction)
    json_path = Path(args.json) if args.json else root / REPORTS / "results.json"
    html_path = Path(args.html) if args.html else root / REPORTS / "report.html"
    gathered = _sections(merged)
    written = _write(merged, json_path, html_path, gathered.sections)
    if written is None:
        return EXIT["internal"]
    if args.update_baseline:
        try:
            update_baseline(baseline_path, merged)
        except OSError as exc:
            print(f"{PROG}: baseline not written: {baseline_path}: {exc.strerror or exc}")
            return EXIT["internal"]
        written.append(baseline_path)
    required = args.coverage_fail_under
    if required is not None and merged.coverage is None:
        return _error(
            "--coverage-fail-under: the shards have no coverage (run them with --coverage)"
        )
    _summary(merged, baseline_path, written, required, gathered.sections)
    for error in gathered.errors:  # the reports are written, without that plugin's sections
        print(f"report error: {error}")
    if gathered.errors:
        return EXIT["internal"]
    if not merged.summary.by_status.keys() <= {"passed"}:
        return EXIT["failed"]
    below = required is not None and merged.coverage is not None and merged.coverage.below(required)
    return EXIT["failed"] if below else EXIT["passed"]


def _baseline(args: argparse.Namespace, root: Path) -> tuple[Path, Results | None]:
    """The baseline's path and its results (None when there is none to compare with)."""
    given, replacing = args.baseline, args.update_baseline
    path = Path(given) if given else root / REPORTS / "baseline.json"
    if given and not path.is_file() and not replacing:
        raise UsageError(f"--baseline {given}: no such file")
    if not path.is_file():
        return path, None
    label = "--baseline" if given else "default baseline"
    return path, load_baseline(str(path), label, replacing=replacing)


def _diff(old: Results, merged: Results, path: Path, correction: Correction) -> BaselineDiff:
    """The baseline diff a serial run of the same suite would hold."""
    from harness._project import project_relative
    from harness.report._diff import diff_results

    name = project_relative(path)
    if Path(name).is_absolute():
        name = str(path)
    # Collected but not selected, or skipped, in the shards: not run, never removed.
    not_run = set(merged.meta.get("not_run", []))
    return diff_results(old, merged, source=name, not_run=not_run, correction=correction)


def _sections(merged: Results) -> Gathered:
    """The report sections of the current project's plugins (and the built-ins')."""
    from harness._plugins import PluginError, discover
    from harness.report._sections import Gathered, gather_sections

    try:
        plugins = discover()
    except PluginError as exc:
        return Gathered(errors=(str(exc),))
    return gather_sections(merged, plugins)


def _write(
    merged: Results, json_path: Path, html_path: Path, sections: Sequence[Section]
) -> list[Path] | None:
    from harness.report._html import write_html

    try:
        merged.write(json_path)
        write_html(html_path, merged, sections=sections)
    except OSError as exc:
        to_stderr(f"{PROG}: error: not written: {exc.filename}: {exc.strerror or exc}")
        return None
    return [json_path, html_path]


def _summary(
    merged: Results,
    baseline_path: Path,
    written: list[Path],
    required: float | None,
    sections: Sequence[Section],
) -> None:
    from harness._project import display_path
    from harness.report._sections import text_section_lines
    from harness.report._text import baseline_lines, results_lines

    print(f"merged {merged.meta['merged']['shards']} shard(s)")
    for line in [*results_lines(merged), *text_section_lines(sections)]:
        print(line)
    if merged.coverage is not None:
        from harness.report._coverage import coverage_lines

        for line in coverage_lines(merged.coverage, required):
            print(line)
    if merged.baseline is not None:
        for line in baseline_lines(merged.baseline, display_path(baseline_path)):
            print(line)
    print("results: " + ", ".join(display_path(p) for p in written))
