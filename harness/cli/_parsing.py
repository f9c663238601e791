"""The argument parser of every ``harness`` command, the error for bad input, and the one
way a command prints a line on stderr."""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from harness._exitcodes import EXIT

__all__ = ["Parser", "UsageError", "to_stderr"]


class UsageError(Exception):
    """Bad command-line input: printed as ``harness <cmd>: message``, exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse, exiting with the bad-input status on bad input: ``prog: error: message``.

    A command's ``add_arguments`` may set three attributes. ``usage_on_error``: print the
    command's usage first, as argparse does (``harness report`` turns it off: its errors
    are one line, whatever went wrong). ``unknown_hint``: None, an argument the command
    does not know is argparse's error like any other; a string, it is one line without
    usage, ``prog: unrecognized arguments: ARGS`` and the hint. ``passes_on``: the
    arguments after ``--`` are not the command's but passed on (``harness run``'s, to
    pytest), as ``options.passed_on``.
    """

    def __init__(self, *args: Any, usage_on_error: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.usage_on_error = usage_on_error
        self.unknown_hint: str | None = None
        self.passes_on = False

    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse drops write errors: help or a version printed into a closed pipe must
        # end as any other output does (harness.cli._stops: exit 141).
        if message:
            (file or sys.stderr).write(message)

    def error(self, message: str) -> NoReturn:
        """Report bad input and exit (argparse's own ``error``, with harness's status)."""
        if self.usage_on_error:
            self.print_usage(sys.stderr)
        self.exit(EXIT["bad_input"], f"{self.prog}: error: {message}\n")


def to_stderr(line: str) -> None:
    """Print ``line`` on stderr with secrets masked (``harness._secrets.scrub_text``): every
    error, note and status line of the commands goes through here, whatever it quotes."""
    from harness._secrets import scrub_text

    print(scrub_text(line), file=sys.stderr)
