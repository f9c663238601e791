"""``harness validate`` and ``harness schema``: scenario files checked without running
them, and the JSON Schema they follow."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from harness.cli.parsing import UsageError, to_stderr
from harness.cli.plugins import PLUGIN_HELP, load_plugin_options
from harness.exitcodes import EXIT

__all__ = ["add_parsers", "schema_command", "validate_command"]

# What `harness validate DIR` does not descend into (pytest's norecursedirs defaults).
_SKIP_DIRS = {"node_modules", "venv", "build", "dist", "_darcs", "CVS", "__pycache__"}


def add_parsers(commands: Any) -> None:
    """Add ``harness validate`` and ``harness schema`` to the subcommands."""
    sub = commands.add_parser(
        "validate",
        help="check scenario files without running them",
        description="Check scenario files without running them: every problem of every file "
        "is printed as path:line: field: message. Exit 0 when all are valid, 2 otherwise.",
    )
    sub.add_argument("paths", nargs="+", metavar="PATHS", help="scenario files or folders")
    sub.add_argument(
        "-p", dest="plugins", action="append", default=[], metavar="MODULE", help=PLUGIN_HELP
    )
    commands.add_parser(
        "schema",
        help="print the JSON Schema of scenario files",
        description="Print the JSON Schema of scenario files, for editors "
        "(# yaml-language-server: $schema=...) and other tools.",
    )


def _scenario_files(paths: list[str]) -> list[Path]:
    from harness.scenario import SUFFIX

    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for found in sorted(path.rglob(f"*{SUFFIX}")):
                parts = found.relative_to(path).parts[:-1]
                if not any(p.startswith(".") or p in _SKIP_DIRS for p in parts):
                    files.append(found)
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"no such file or folder: {given}")
    return files


def validate_command(options: argparse.Namespace, extra: list[str]) -> int:
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


def schema_command(options: argparse.Namespace, extra: list[str]) -> int:
    """``harness schema``: the JSON Schema of scenario files, on stdout."""
    from harness.scenario.schema import json_schema

    print(json.dumps(json_schema(), indent=2))
    return EXIT["passed"]
