"""How a command ends when it is stopped from outside: Ctrl-C, or its reader going away.

One rule for every command (docs/running.md#stopped-from-outside): it stops quietly, no
traceback and nothing half written, and exits with 128 + the signal's number, as a shell
reports any program that signal stopped: 130 for Ctrl-C (SIGINT), 141 when the reader of
its output closed the pipe (SIGPIPE: ``harness plugins --json | head``). Python turns
both into exceptions (KeyboardInterrupt, BrokenPipeError), caught here.
"""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Callable
from typing import Any

from harness._exitcodes import EXIT

__all__ = ["output_closed", "reader_gone", "stopped_from_outside"]


def _closed(stream: Any) -> bool:
    """Whether ``stream`` is a pipe whose reader has gone away."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False  # not a file (captured, replaced): not a pipe of ours
    if not hasattr(select, "poll"):  # Windows: no poll; the broken pipe was ours
        return True
    poller = select.poll()
    poller.register(fd, 0)  # POLLERR is always reported: set on a pipe with no reader
    return any(events & select.POLLERR for _, events in poller.poll(0))


def output_closed(exc: BaseException) -> bool:
    """Whether ``exc`` is the reader of stdout or stderr gone, not another broken pipe
    (a target's stdin, a socket), which is a failure of its own."""
    return isinstance(exc, BrokenPipeError) and (_closed(sys.stdout) or _closed(sys.stderr))


def reader_gone() -> int:
    """Exit status 141, quietly: the closed streams are pointed at /dev/null, as Python's
    documentation advises, so that the flush at exit does not fail again with a traceback."""
    closed = [s for s in (sys.stdout, sys.stderr) if _closed(s)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for stream in closed:
            os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)
    return EXIT["reader_gone"]


def stopped_from_outside(command: Callable[[], int]) -> int:
    """Run ``command`` (the whole command line) and say a stop from outside by the rule."""
    try:
        status = command()
        sys.stdout.flush()  # a closed pipe shows here, not in the flush at exit
        return status
    except KeyboardInterrupt:
        return EXIT["interrupted"]
    except BrokenPipeError as exc:
        if output_closed(exc):
            return reader_gone()
        raise
