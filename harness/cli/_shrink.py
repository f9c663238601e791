"""``harness shrink SCENARIO [--keep PATH...] [-o OUT]``: the smallest scenario that fails
the same way (``harness.shrink`` makes it; docs/shrink.md)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from harness._exitcodes import EXIT
from harness.cli._parsing import Parser, to_stderr

__all__ = ["add_arguments", "handle"]


def add_arguments(parser: Parser) -> None:
    """``harness shrink``'s description and options."""
    parser.description = (
        "Shrink a failing scenario to the smallest one that fails the same way (the same "
        "failing expectations and termination): script steps, turns, tools, expectations "
        "and faults that do not matter are removed, faults weakened, texts shortened, each "
        "change checked by rerunning it offline. The result is 1-minimal. See docs/shrink.md."
    )
    parser.usage_on_error = False
    parser.add_argument("scenario", type=Path, metavar="SCENARIO", help="a failing scenario file")
    parser.add_argument(
        "--keep",
        nargs="+",
        action="extend",
        default=[],
        metavar="PATH",
        help="the failing expectations to keep failing, as results name them "
        "(tool_calls.forbid, turns.1.final.contains); default: all of them",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        help="the *.scenario.yaml to write (default: stdout); a recorded scenario's "
        "shrunk cassette is written beside it",
    )


class _Progress:
    """The progress line on stderr: rewritten in place on a terminal, else a line now
    and then."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        # Off a terminal, a shrink of a few seconds needs no progress line at all.
        self.last = 0.0 if self.tty else time.monotonic()
        self.shown = False

    def __call__(self, progress: Any) -> None:
        now = time.monotonic()
        if now - self.last < (0.2 if self.tty else 10.0):
            return
        self.last = now
        line = (
            f"harness shrink: {progress.reruns} reruns, round {progress.round} "
            f"({progress.stage}), size {progress.size.total} of {progress.start.total}"
        )
        if self.tty:
            sys.stderr.write(f"\r\033[K{line}")
            sys.stderr.flush()
            self.shown = True
        else:
            to_stderr(line)

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def handle(args: argparse.Namespace) -> int:
    """``harness shrink``: the shrunk scenario on stdout, or written to ``-o``."""
    from harness.shrink import ShrinkError, ShrinkInterrupted, shrink

    if args.output is not None and not args.output.parent.is_dir():
        to_stderr(f"harness shrink: -o {args.output}: no such folder: {args.output.parent}")
        return EXIT["bad_input"]
    progress = _Progress()
    try:
        result = shrink(args.scenario, keep=args.keep, output=args.output, on_progress=progress)
    except ShrinkInterrupted as stop:
        progress.done()
        _emit(stop.result)
        to_stderr(
            "harness shrink: interrupted: that is the smallest failing scenario found so far "
            "(not 1-minimal)"
        )
        return EXIT["interrupted"]
    except ShrinkError as exc:
        progress.done()
        to_stderr(f"harness shrink: {exc}")
        return EXIT["bad_input"]
    progress.done()
    return _finish(result)


def _emit(result: Any) -> list[Path]:
    """Write the result (stdout without an output file); the files written."""
    if result.output is None:
        sys.stdout.write(result.text)
        return []
    return result.write()


def _finish(result: Any) -> int:
    from harness.shrink import verify

    try:
        written = _emit(result)
    except OSError as exc:
        to_stderr(f"harness shrink: cannot write {result.output}: {exc.strerror or exc}")
        return EXIT["internal"]
    if not verify(result):
        to_stderr(
            "harness shrink: the shrunk scenario does not fail the same way when run as "
            "written: a bug in harness shrink, please report it"
        )
        return EXIT["internal"]
    from harness._project import display_path

    where = ", ".join(display_path(p) for p in written)
    to_stderr(
        f"harness shrink: {'wrote ' + where + ': ' if written else ''}size "
        f"{result.after.total}, was {result.before.total} ({result.reduction:.0%} smaller); "
        f"{result.failure.describe()}; {result.reruns} reruns, {result.seconds:.1f} s"
    )
    return EXIT["passed"]
