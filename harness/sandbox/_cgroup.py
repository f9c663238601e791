"""A pids cgroup per execution, where harness may make one (root, cgroup v1 or v2).

RLIMIT_NPROC counts per user and is not enforced for root: under root (CI containers) a
fork bomb is stopped by a cgroup instead. Each cgroup is named after the harness process
that made it (its pid and start time): a harness killed mid-run cannot remove its own,
so each new one first removes those whose harness is gone.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import time
from pathlib import Path

from harness.sandbox._owners import gone, stamp

__all__ = ["PidsCgroup"]

_BASES = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))
_count = itertools.count()
# This process's cgroups in use: the rest of its own are leftovers too.
_live: set[str] = set()
# How long a cgroup's killed processes may take to be reaped before it can be removed.
_REAPED = 2.0


def _tidy(base: Path) -> None:
    """Remove the empty cgroups of harness processes that are gone (killed mid-run), and
    this process's own that no run uses (their processes reaped after the run ended)."""
    own = stamp()
    for entry in os.scandir(base):
        mine = entry.name.startswith(own) and entry.path not in _live
        if mine or gone(entry.name):
            with contextlib.suppress(OSError):  # still holding processes: not ours to end
                os.rmdir(entry.path)


class PidsCgroup:
    """A pids cgroup capping the processes of one execution (``path`` None: none here)."""

    def __init__(self, limit: int) -> None:
        self.path: Path | None = None
        for base in _BASES:
            if not (base / "cgroup.procs").exists() or not os.access(base, os.W_OK):
                continue
            _tidy(base)
            path = base / f"{stamp()}{next(_count)}"
            try:
                path.mkdir()
                (path / "pids.max").write_text(str(limit))
            except OSError:
                with contextlib.suppress(OSError):
                    path.rmdir()
                continue
            self.path = path
            _live.add(str(path))
            break

    def opened(self) -> int | None:
        """In the child, before any namespace: the cgroup's process list, open to write
        (a mount namespace made afterwards may make the cgroup tree read-only)."""
        if self.path is None:
            return None
        try:
            return os.open(self.path / "cgroup.procs", os.O_WRONLY)
        except OSError:
            return None

    @staticmethod
    def join(procs: int | None) -> None:
        """In the child: move itself into the cgroup through ``opened``'s file."""
        if procs is not None:
            with contextlib.suppress(OSError):
                os.write(procs, b"0")  # 0: the writing process, in any pid namespace
            os.close(procs)

    def close(self) -> bool:
        """Kill what is left in the cgroup and remove it; whether it is gone (a cgroup
        whose killed processes are not reaped yet goes with a later run's tidying)."""
        if self.path is None:
            return True
        for _ in range(50):
            try:
                pids = (self.path / "cgroup.procs").read_text().split()
            except OSError:
                break
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(OSError, ValueError):
                    os.kill(int(pid), signal.SIGKILL)
        _live.discard(str(self.path))  # the run is over: a later one may tidy it
        try:
            self.path.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            return False  # busy: killed processes not reaped yet
        self.path = None
        return True

    def close_waiting(self) -> None:
        """``close``, waiting a moment for killed processes to be reaped (for a caller
        that may block: a probe)."""
        deadline = time.monotonic() + _REAPED
        while not self.close() and time.monotonic() < deadline:
            time.sleep(0.02)

    async def aclose(self) -> None:
        """``close``, waiting a moment for killed processes to be reaped: a sandbox's
        namespace is torn down after its first process is (a fork bomb's, for a while)."""
        deadline = time.monotonic() + _REAPED
        while not self.close() and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
