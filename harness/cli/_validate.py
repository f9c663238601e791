"""``harness validate``: scenario files checked without running them."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness._exitcodes import EXIT
from harness.cli._hints import say_misnamed
from harness.cli._parsing import Parser, UsageError, to_stderr
from harness.cli._plugins import PLUGIN_HELP, load_plugin_options

__all__ = ["add_arguments", "handle"]


def add_arguments(parser: Parser) -> None:
    """``harness validate``'s description and options."""
    parser.description = (
        "Check scenario files without running them: every problem of every file "
        "is printed as path:line: field: message. Exit 0 when all are valid, 2 otherwise."
    )
    parser.unknown_hint = ""
    parser.add_argument("paths", nargs="+", metavar="PATHS", help="scenario files or folders")
    parser.add_argument(
        "-p", dest="plugins", action="append", default=[], metavar="MODULE", help=PLUGIN_HELP
    )


def _scenario_files(paths: list[str]) -> list[Path]:
    from harness.scenario._naming import is_scenario_file, rename_hint, scenario_files

    for given in paths:
        path = Path(given)
        if not path.exists():
            raise UsageError(f"no such file or folder: {given}")
        if path.is_file() and not is_scenario_file(path):
            # harness run would never collect it: validate does not call it OK either.
            raise UsageError(
                f"{given}: not a scenario file name, so harness run never collects it; "
                f"{rename_hint(path)}"
            )
    return scenario_files(paths)


def handle(options: argparse.Namespace) -> int:
    """``harness validate PATHS [-p MODULE]``: every problem of every file, on stdout."""
    from harness._errors import HarnessError
    from harness.scenario import load_scenario

    load_plugin_options(options.plugins)
    files = _scenario_files(options.paths)
    if not files:
        print(f"no scenario files (*.scenario.yaml) in {', '.join(options.paths)}")
        say_misnamed(options.paths, "validate")
        return EXIT["nothing"]
    bad = cases = 0
    skipped: list[str] = []
    for file in files:
        try:
            scenario = load_scenario(file)
        except HarnessError as exc:
            bad += 1
            print(str(exc))
            continue
        if scenario.cases is not None:
            cases += len(scenario.case_scenarios)
        if scenario.skip_reason is not None:
            skipped.append(f"{file.as_posix()}: {scenario.skip_reason}")
    if bad:
        to_stderr(f"{bad} of {len(files)} scenario file(s) invalid")
        return EXIT["bad_input"]
    print(f"{len(files)} scenario(s) OK" + (f" ({cases} cases)" if cases else ""))
    for line in skipped:
        # Valid, but a run here skips it: said, so a skip is never a surprise.
        print(f"skipped when run here: {line}")
    return EXIT["passed"]
