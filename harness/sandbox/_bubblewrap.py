"""The ``bubblewrap`` backend: ``bwrap`` namespaces around the same interpreter.

The code sees an empty root holding only what it needs: the system's programs and
libraries (``/usr``), the interpreter's own folders (read-only), ``/dev`` (read-only) and
``/proc`` (its ``sys`` read-only), and memory-backed file systems of its own, each of
``disk_mb``: ``/tmp`` holding its working folder, and ``/dev/shm``. Nothing of the host is
writable, so nothing it writes outlives it. It runs as uid 65534 in a user namespace of
its own with every capability dropped, with no network, in a process namespace of its
own (the host's processes are invisible, and every process it starts ends with it), and
it cannot make user namespaces of its own. Under root, bwrap itself is run as the host's
uid 65534: bubblewrap maps the code's user to the user that starts it, and the code must
never be root on the host (kernel settings and set-user-ID files are root's by uid
alone). What the code can and cannot reach: docs/sandbox.md.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from harness.sandbox._base import (
    Confinement,
    Execution,
    Limits,
    child_environment,
    python_flags,
    run_limited,
)
from harness.sandbox._cgroup import PidsCgroup
from harness.sandbox._child import preexec
from harness.sandbox._namespaces import (
    WORK,
    cover_unreachable,
    interpreter_folders,
    interpreter_path,
)

__all__ = ["BubblewrapSandbox", "interpreter_path"]

_USER = "65534"  # "nobody": the code's user and group inside the sandbox
# The top-level names a merged-/usr system makes symlinks into /usr (Debian, Ubuntu,
# Fedora); on an older layout they are folders, bound as they are.
_SYSTEM_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


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


def _interpreter_folders() -> list[Path]:
    """The interpreter's folders outside /usr (bound on their own: /usr is bound whole)."""
    return [folder for folder in interpreter_folders() if not folder.is_relative_to("/usr")]


def _confinement() -> Confinement:
    """Under root, bwrap runs as an unprivileged user (with the interpreter's folders
    made reachable for it); otherwise as harness's own user, which is not root."""
    if os.geteuid() != 0:
        return Confinement()
    return Confinement(unprivileged=cover_unreachable(_interpreter_folders()))


def _code_file(code: str) -> int:
    """An anonymous file holding ``code``, for bwrap to copy into the sandbox."""
    fd = os.memfd_create("main.py")
    os.write(fd, code.encode("utf-8"))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


class BubblewrapSandbox:
    """Runs code under ``bwrap`` with no network, no capabilities and a minimal view."""

    name = "bubblewrap"

    def __init__(self) -> None:
        self._checked = False
        self._unavailable: str | None = None
        self._no_userns: list[str] = []  # --disable-userns where this bwrap has it

    def unavailable(self) -> str | None:
        """None when ``bwrap`` is on PATH and can make namespaces here (under root: as
        an unprivileged user)."""
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
        limits = Limits()
        code = _code_file("pass")
        pids = PidsCgroup(limits.processes)
        try:
            probe = subprocess.run(
                [*self._argv(bwrap, code, limits), *python_flags(limits), "main.py"],
                capture_output=True,
                text=True,
                timeout=30,
                cwd="/",
                pass_fds=(code,),
                preexec_fn=preexec(limits, pids, _confinement()),
            )
        except (subprocess.SubprocessError, OSError) as exc:
            return f"bwrap cannot be started as an unprivileged user here ({exc})"
        finally:
            pids.close_waiting()
            os.close(code)
        if probe.returncode != 0:
            reason = (probe.stderr.strip().splitlines() or ["no message"])[-1]
            user = " as an unprivileged user (harness is root)" if os.geteuid() == 0 else ""
            return f"bwrap cannot create a sandbox here{user}: {reason}"
        return None

    def _argv(self, bwrap: str, code: int, limits: Limits) -> list[str]:
        disk = str(limits.disk_mb * 1024 * 1024)
        return [
            bwrap,
            # Namespaces: the code's own user (mapped to an unprivileged id, every
            # capability dropped), processes, network (none), IPC, host name and cgroup view.
            "--unshare-user", "--uid", _USER, "--gid", _USER,
            "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try",
            "--cap-drop", "ALL",
            *self._no_userns,
            "--die-with-parent",
            "--new-session",  # no terminal to inject keystrokes into (TIOCSTI)
            # The view: nothing of the host but what the code needs, none of it writable.
            *_system_binds(),
            # In memory, bounded, without set-user-ID, gone with the sandbox: /tmp holding
            # the working folder, and /dev/shm (on bwrap's own /dev, which is unbounded).
            "--size", disk, "--tmpfs", "/tmp",
            "--dir", WORK,
            "--file", str(code), f"{WORK}/main.py",
            *(arg for folder in _interpreter_folders()  # after /tmp: one under it shows
              for arg in ("--ro-bind", str(folder), str(folder))),
            "--dev", "/dev",
            "--size", disk, "--tmpfs", "/dev/shm",
            "--remount-ro", "/dev",
            "--proc", "/proc",
            "--ro-bind", "/proc/sys", "/proc/sys",  # a second guard: the code is not root
            "--remount-ro", "/",
            "--chdir", WORK,
            "--clearenv",
            *(arg for key, value in child_environment(WORK).items()
              for arg in ("--setenv", key, value)),
            str(interpreter_path()),
        ]  # fmt: skip

    async def run(self, code: str, limits: Limits) -> Execution:
        """Run ``code`` inside a new bwrap sandbox."""
        self.unavailable()  # the probe also learns which flags this bwrap has
        bwrap = shutil.which("bwrap") or "bwrap"
        main = _code_file(code)
        try:
            return await run_limited(
                [*self._argv(bwrap, main, limits), *python_flags(limits), "main.py"],
                cwd="/",
                env={},
                limits=limits,
                sandbox=self.name,
                confinement=_confinement(),
                pass_fds=(main,),
            )
        finally:
            os.close(main)
