"""``harness schema``: the JSON Schema scenario files follow, for editors and other tools."""

from __future__ import annotations

import argparse
import json

from harness._exitcodes import EXIT
from harness.cli._parsing import Parser

__all__ = ["add_arguments", "handle"]


def add_arguments(parser: Parser) -> None:
    """``harness schema``'s description (it takes no options)."""
    parser.description = (
        "Print the JSON Schema of scenario files, for editors "
        "(# yaml-language-server: $schema=...) and other tools."
    )
    parser.unknown_hint = ""


def handle(options: argparse.Namespace) -> int:
    """``harness schema``: the JSON Schema of scenario files, on stdout."""
    from harness.scenario._schema import json_schema

    print(json.dumps(json_schema(), indent=2))
    return EXIT["passed"]
