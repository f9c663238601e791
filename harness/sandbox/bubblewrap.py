"""The ``bubblewrap`` backend: ``bwrap`` namespaces around the same interpreter.

No network (a network namespace of its own), a read-only view of the system, a private
/tmp and /proc (the parent's processes and their environments cannot be seen), and only
the working folder writable; the limits of the process backend apply too.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.sandbox.base import Execution, Limits, child_environment, run_in_new_folder

__all__ = ["BubblewrapSandbox"]

_WORK = "/tmp/work"  # inside the private /tmp: the read-only root has no room for it


def _interpreter_binds() -> list[str]:
    """Read-only binds for an interpreter under /tmp (a venv made there): the private
    /tmp would hide it."""
    binds: list[str] = []
    for folder in sorted({sys.prefix, sys.base_prefix, sys.exec_prefix}):
        if Path(folder).resolve().is_relative_to("/tmp"):
            binds += ["--ro-bind", folder, folder]
    return binds


class BubblewrapSandbox:
    """Runs code under ``bwrap`` with no network and a read-only root."""

    name = "bubblewrap"

    def __init__(self) -> None:
        self._unavailable: str | bool | None = False  # False: not checked yet

    def unavailable(self) -> str | None:
        """None when ``bwrap`` is on PATH and can make namespaces here."""
        if self._unavailable is False:
            self._unavailable = self._check()
        return self._unavailable  # type: ignore[return-value]

    def _check(self) -> str | None:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            return "bwrap is not on PATH (Debian/Ubuntu: apt-get install bubblewrap)"
        probe = subprocess.run(
            [*self._argv(bwrap, tempfile.gettempdir()), "-I", "-S", "-c", "pass"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if probe.returncode != 0:
            reason = (probe.stderr.strip().splitlines() or ["no message"])[-1]
            return f"bwrap cannot create a sandbox here: {reason}"
        return None

    @staticmethod
    def _argv(bwrap: str, work: str) -> list[str]:
        return [
            bwrap,
            "--ro-bind", "/", "/",
            "--dev", "/dev",
            "--proc", "/proc",
            "--tmpfs", "/tmp",
            *_interpreter_binds(),
            "--bind", work, _WORK,
            "--chdir", _WORK,
            "--unshare-net",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--die-with-parent",
            "--new-session",
            "--clearenv",
            *(arg for key, value in child_environment(_WORK).items()
              for arg in ("--setenv", key, value)),
            sys.executable,
        ]  # fmt: skip

    async def run(self, code: str, limits: Limits) -> Execution:
        """Run ``code`` inside a new bwrap sandbox."""
        bwrap = shutil.which("bwrap") or "bwrap"
        return await run_in_new_folder(
            code, limits, self.name, lambda work: self._argv(bwrap, work)
        )
