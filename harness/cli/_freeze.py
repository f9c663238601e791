"""``harness freeze [CASSETTE | --trace FILE] [--scenario S] [--run N] [-o SCENARIO]``: a
recorded run (a cassette, or an OpenTelemetry trace) as an editable scripted scenario
(``harness.freeze`` makes it)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from harness._exitcodes import EXIT
from harness.cli._parsing import Parser, to_stderr

__all__ = ["add_arguments", "handle"]


def add_arguments(parser: Parser) -> None:
    """``harness freeze``'s description and options."""
    parser.description = (
        "Turn a recorded cassette, or an OpenTelemetry trace, into an editable scripted scenario."
    )
    parser.add_argument(
        "cassette", type=Path, nargs="?", help="a vcrpy cassette (default: --scenario's)"
    )
    parser.add_argument("-o", "--output", type=Path, help="the *.scenario.yaml file to write")
    parser.add_argument(
        "--scenario",
        type=Path,
        help="the scenario that made the recording: its agent settings and tool definitions",
    )
    parser.add_argument(
        "--trace",
        type=Path,
        metavar="FILE",
        help="freeze an OpenTelemetry trace (OTLP JSON) of an agent run instead of a cassette",
    )
    parser.add_argument(
        "--run", type=int, help="which recorded run to freeze (1-based; default the last)"
    )


def handle(args: argparse.Namespace) -> int:
    """``harness freeze``: the scenario on stdout, or written to ``-o``."""
    from harness._errors import HarnessError
    from harness._files import atomic_write
    from harness.freeze import freeze

    try:
        frozen = freeze(
            args.cassette,
            scenario=args.scenario,
            run=args.run,
            output=args.output,
            trace=args.trace,
        )
    except HarnessError as exc:
        to_stderr(f"harness freeze: {exc}")
        return EXIT["bad_input"]
    for note in frozen.notes:
        to_stderr(f"harness freeze: note: {note}")
    if args.output is None:
        sys.stdout.write(frozen.text)
        return EXIT["passed"]
    try:
        atomic_write(args.output, frozen.text)
    except OSError as exc:
        # Like harness report: an output that cannot be written is exit 3, not a bug.
        to_stderr(f"harness freeze: cannot write {args.output}: {exc.strerror or exc}")
        return EXIT["internal"]
    to_stderr(f"harness freeze: wrote {args.output}")
    return EXIT["passed"]
