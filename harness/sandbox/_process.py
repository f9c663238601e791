"""The ``process`` backend: the same interpreter, isolated mode, limits, a throw-away folder.

Not a security boundary for files and the network: the code can read what the user running
harness can, and reach the network. It gets no secrets through its environment, a session
keyring of its own, limits on CPU time, memory, file size and processes, and no
capabilities. Under root, where the kernel lets harness make namespaces, it also runs in
process, mount and IPC namespaces of its own (namespaces.Isolation): harness and every
other process out of its sight and reach, the host's files read-only, its folder, /tmp
and /dev/shm small tmpfs of its own. As an ordinary user it runs as that user, in a
folder on the host: it can signal and trace harness. ``auto`` takes it only where no
stronger backend works, and says so. docs/sandbox.md has the table.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys

from harness.sandbox._base import (
    Confinement,
    Execution,
    Limits,
    child_environment,
    python_flags,
    run_in_host_folder,
    run_limited,
)
from harness.sandbox._cgroup import PidsCgroup
from harness.sandbox._child import preexec
from harness.sandbox._namespaces import WORK, Isolation

__all__ = ["ProcessSandbox"]

log = logging.getLogger("harness.sandbox")


class ProcessSandbox:
    """Runs code with ``python -I`` (and ``-S``) in a subprocess with resource limits."""

    name = "process"

    def __init__(self) -> None:
        self._checked = False
        self._no_namespaces: str | None = None  # why namespaces cannot be made, under root

    def unavailable(self) -> str | None:
        """Always available where harness runs."""
        return None

    async def run(self, code: str, limits: Limits) -> Execution:
        """Run ``code`` in namespaces of its own (under root) or a fresh folder."""
        if os.geteuid() == 0:
            if not self._checked:
                self._no_namespaces = await asyncio.to_thread(_namespaces_fail)
                self._checked = True
                if self._no_namespaces is not None:
                    log.warning("%s", _unconfined(self._no_namespaces))
            if self._no_namespaces is None:
                return await run_limited(
                    [sys.executable, *python_flags(limits), "main.py"],
                    cwd="/",
                    env=child_environment(WORK),
                    limits=limits,
                    sandbox=self.name,
                    confinement=_isolated(code, limits),
                )
        execution = await run_in_host_folder(
            code, limits, self.name, [sys.executable], Confinement(drop_capabilities=True)
        )
        if os.geteuid() == 0:
            execution.warning = _unconfined(str(self._no_namespaces))
        return execution


def _unconfined(reason: str) -> str:
    return (
        "sandbox 'process' could not make namespaces here, so the code (root without "
        f"capabilities) can signal harness and write root's files: {reason}"
    )


def _isolated(code: str, limits: Limits) -> Confinement:
    disk = limits.disk_mb * 1024 * 1024
    return Confinement(drop_capabilities=True, isolation=Isolation(code, disk))


def _namespaces_fail() -> str | None:
    """Why namespaces cannot be made here (None: they can): a child made the way a run's
    is, running an empty program."""
    limits = Limits()
    pids = PidsCgroup(limits.processes)
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "main.py"],
            cwd="/",
            env=child_environment(WORK),
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=preexec(limits, pids, _isolated("pass", limits)),
        )
    except (subprocess.SubprocessError, OSError) as exc:
        return f"the child failed before the code started ({exc})"
    finally:
        pids.close_waiting()
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"the code could not start in them ({reason})"
    return None
