"""The ``bubblewrap`` backend: ``bwrap`` namespaces around the same interpreter.

The code sees an empty root holding only what it needs: the system's programs and
libraries (``/usr``), the interpreter's own folders, a private ``/tmp``, ``/dev`` and
``/proc``, and the working folder, the one place it may write. It runs as an unprivileged
user (uid 65534) in a user namespace of its own with every capability dropped, even when
harness runs as root, with no network, in a process namespace of its own (the host's
processes are invisible, and every process it starts ends with it), and it cannot make
user namespaces of its own. What the code can and cannot reach: docs/sandbox.md.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.sandbox.base import Execution, Limits, child_environment, run_in_new_folder

__all__ = ["BubblewrapSandbox", "interpreter_path"]

_WORK = "/tmp/work"  # inside the private /tmp: the read-only root has no room for it
_USER = "65534"  # "nobody": the code's user and group inside the sandbox
# The top-level names a merged-/usr system makes symlinks into /usr (Debian, Ubuntu,
# Fedora); on an older layout they are folders, bound as they are.
_SYSTEM_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
_TMP_BYTES = 64 * 1024 * 1024  # the private /tmp lives in memory: bounded


def interpreter_path() -> Path:
    """The running interpreter, its folder resolved (a path with ``..`` or a symlinked
    folder would not exist inside the sandbox) and its own name kept (a venv's
    ``python`` must stay itself to find its ``pyvenv.cfg``)."""
    executable = Path(sys.executable)
    return executable.parent.resolve() / executable.name


def _system_binds() -> list[str]:
    """``/usr`` read-only, and the top-level links or folders into it."""
    binds = ["--ro-bind", "/usr", "/usr"]
    for name in _SYSTEM_LINKS:
        path = Path("/", name)
        if path.is_symlink():
            binds += ["--symlink", str(path.readlink()), str(path)]
        elif path.is_dir():
            binds += ["--ro-bind", str(path), str(path)]
    return binds


def _interpreter_binds() -> list[str]:
    """Read-only binds of the interpreter's folders (a venv, its base installation),
    outside /usr; a folder inside another is bound once."""
    folders = {Path(folder).resolve() for folder in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    folders.add(interpreter_path().parent)
    folders.add(interpreter_path().resolve().parent)
    kept: list[Path] = []
    for folder in sorted(folders):
        if folder.is_relative_to("/usr") or any(folder.is_relative_to(k) for k in kept):
            continue
        kept.append(folder)
    return [arg for folder in kept for arg in ("--ro-bind", str(folder), str(folder))]


class BubblewrapSandbox:
    """Runs code under ``bwrap`` with no network, no capabilities and a minimal view."""

    name = "bubblewrap"

    def __init__(self) -> None:
        self._checked = False
        self._unavailable: str | None = None
        self._no_userns: list[str] = []  # --disable-userns where this bwrap has it

    def unavailable(self) -> str | None:
        """None when ``bwrap`` is on PATH and can make namespaces here."""
        if not self._checked:
            self._unavailable = self._check()
            self._checked = True
        return self._unavailable

    def _check(self) -> str | None:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            return "bwrap is not on PATH (Debian/Ubuntu: apt-get install bubblewrap)"
        usage = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=30)
        # bubblewrap 0.8 and later: the code cannot make a user namespace of its own
        # (where it would hold every capability again, against the kernel's surface).
        if "--disable-userns" in usage.stdout:
            self._no_userns = ["--disable-userns"]
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

    def _argv(self, bwrap: str, work: str) -> list[str]:
        return [
            bwrap,
            # Namespaces: the code's own user (mapped to an unprivileged id, every
            # capability dropped even when harness is root), processes, network (none),
            # IPC, host name and cgroup view.
            "--unshare-user", "--uid", _USER, "--gid", _USER,
            "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try",
            "--cap-drop", "ALL",
            *self._no_userns,
            "--die-with-parent",
            "--new-session",  # no terminal to inject keystrokes into (TIOCSTI)
            # The view: nothing of the host but what the code needs.
            *_system_binds(),
            "--size", str(_TMP_BYTES), "--tmpfs", "/tmp",
            *_interpreter_binds(),  # after /tmp: an interpreter under /tmp stays visible
            "--dev", "/dev",
            "--proc", "/proc",
            "--bind", work, _WORK,
            "--remount-ro", "/",
            "--chdir", _WORK,
            "--clearenv",
            *(arg for key, value in child_environment(_WORK).items()
              for arg in ("--setenv", key, value)),
            str(interpreter_path()),
        ]  # fmt: skip

    async def run(self, code: str, limits: Limits) -> Execution:
        """Run ``code`` inside a new bwrap sandbox."""
        self.unavailable()  # the probe also learns which flags this bwrap has
        bwrap = shutil.which("bwrap") or "bwrap"
        return await run_in_new_folder(
            code, limits, self.name, lambda work: self._argv(bwrap, work)
        )
