"""A function run in a process of its own, forked from this one: what ``harness run
--chunk-size`` runs each part of a suite in (docs/running.md#large-suites).

A forked child starts with everything this process has imported (no start-up cost) and
gives all its memory back when it ends: a part's pytest session, its items and whatever
the allocator keeps after them never weigh on the parts after it. The child's value
comes back pickled through a file that has no name (nothing is left on disk, however
either process ends); its output goes where this process's goes. The child dies with
this process: if it is killed (kill -9), the kernel sends the child SIGTERM (Linux's
PR_SET_PDEATHSIG), which stops it as Ctrl-C would, its cleanup run.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from typing import IO, Any, TypeVar

__all__ = ["PartCrashed", "can_fork", "forked"]

_T = TypeVar("_T")

# A child that raised: it printed the traceback, the parent says what it was.
_RAISED = 70
# Seconds a child told to stop by its parent's death has for its cleanup.
_CLEANUP = 10
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


class PartCrashed(RuntimeError):
    """The child ended without a value (it raised, or a signal killed it)."""


def can_fork() -> bool:
    """Whether this platform forks (not Windows)."""
    return hasattr(os, "fork")


def forked(work: Callable[[], _T]) -> _T:
    """``work()`` in a child process forked from this one; its value.

    Ctrl-C reaches the child (it is in the terminal's process group) and this process
    waits for it to end as it chooses to, as pytest does on Ctrl-C.
    """
    with tempfile.TemporaryFile(prefix="harness-part-") as handed:
        return _run(work, handed)


def _orphaned(signum: int, frame: Any) -> None:
    """SIGTERM in a child: its parent is gone (or someone stopped it): stop as Ctrl-C
    stops a run, within _CLEANUP seconds (SIGALRM ends it then)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.alarm(_CLEANUP)
    raise KeyboardInterrupt


def _die_with(parent: int) -> None:
    """In a child: be sent SIGTERM when ``parent`` dies, and stop at once if it already
    has. Without prctl (not Linux), a child outlives a killed parent until it ends."""
    with contextlib.suppress(ValueError):  # not the main thread of the interpreter
        signal.signal(signal.SIGTERM, _orphaned)
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:  # it died before prctl: no signal would come
        os.kill(os.getpid(), signal.SIGTERM)


def _run(work: Callable[[], _T], handed: IO[bytes]) -> _T:
    # What this process wrote but has not flushed would be written twice, and its
    # objects, moved out of the collector's reach, are not copied by the child's
    # collections (a fork shares memory until either side writes to it).
    sys.stdout.flush()
    sys.stderr.flush()
    gc.collect()
    gc.freeze()
    # Ctrl-C is the child's from the fork on: this process ignores it until the child
    # ends (the terminal sends it to both), and the child holds it back until its own
    # handler is back, so that one pressed at the fork is neither lost nor this process's.
    main = threading.current_thread() is threading.main_thread()  # (signals: its alone)
    if main:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        interrupt = signal.signal(signal.SIGINT, signal.SIG_IGN)
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's code
        code = 0
        try:
            _die_with(parent)
            if main:
                signal.signal(signal.SIGINT, interrupt)
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            value = work()
            # Into the file both processes hold open (one offset): read back from its start.
            pickle.dump(value, handed, protocol=pickle.HIGHEST_PROTOCOL)
            handed.flush()
        except BaseException:
            traceback.print_exc()
            code = _RAISED
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    gc.unfreeze()
    try:
        if main:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # (ignored)
        _, status = os.waitpid(pid, 0)
    finally:
        if main:
            signal.signal(signal.SIGINT, interrupt)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        how = f"signal {-code}" if code < 0 else f"status {code}"
        raise PartCrashed(f"a part of the run ended with {how}, without its results")
    handed.seek(0)
    result: _T = pickle.load(handed)
    return result
