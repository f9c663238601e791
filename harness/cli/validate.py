"""``harness validate``: scenario files checked without running them."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.cli.parsing import Parser, UsageError, to_stderr
from harness.cli.plugins import PLUGIN_HELP, load_plugin_options
from harness.exitcodes import EXIT

__all__ = ["add_arguments", "handle"]

# What `harness validate DIR` does not descend into (pytest's norecursedirs defaults).
_SKIP_DIRS = {"node_modules", "venv", "build", "dist", "_darcs", "CVS", "__pycache__"}


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
    from harness.scenario import SUFFIXES

    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found_files = (f for suffix in SUFFIXES for f in path.rglob(f"*{suffix}"))
            for found in sorted(found_files):
                parts = found.relative_to(path).parts[:-1]
                if not any(p.startswith(".") or p in _SKIP_DIRS for p in parts):
                    files.append(found)
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"no such file or folder: {given}")
    return files


def handle(options: argparse.Namespace) -> int:
    """``harness validate PATHS [-p MODULE]``: every problem of every file, on stdout."""
    from harness.errors import HarnessError
    from harness.scenario import load_scenario

    load_plugin_options(options.plugins)
    files = _scenario_files(options.paths)
    if not files:
        print(f"no scenario files (*.scenario.yaml) in {', '.join(options.paths)}")
        return EXIT["nothing"]
    bad = 0
    for file in files:
        try:
            load_scenario(file)
        except HarnessError as exc:
            bad += 1
            print(str(exc))
    if bad:
        to_stderr(f"{bad} of {len(files)} scenario file(s) invalid")
        return EXIT["bad_input"]
    print(f"{len(files)} scenario(s) OK")
    return EXIT["passed"]
