"""Namespaces harness makes itself, under root: a confined view for ``process``, and a
reachable interpreter for the unprivileged user bubblewrap runs as.

Everything here runs in the child between ``fork`` and ``exec`` (objects are made in the
parent, the child only calls). Mounts are made in a new mount namespace whose mounts are
first made private: nothing done here reaches the host's view.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import re
import signal
import sys
from pathlib import Path

from harness.sandbox._privileges import UNPRIVILEGED, libc_call, set_death_signal, syscall

__all__ = [
    "WORK",
    "Isolation",
    "cover_unreachable",
    "interpreter_folders",
    "interpreter_path",
    "reach",
]

# Where the code works inside a sandbox that has a /tmp of its own.
WORK = "/tmp/work"

_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
# The per-mount options a read-only remount must keep (mountinfo's words, mount(2)'s bits).
_KEEP = {
    b"nosuid": _MS_NOSUID,
    b"nodev": _MS_NODEV,
    b"noexec": _MS_NOEXEC,
    b"noatime": 1024,
    b"nodiratime": 2048,
    b"relatime": 1 << 21,
}
_CLONE_NEWNS, _CLONE_NEWIPC, _CLONE_NEWPID = 0x00020000, 0x08000000, 0x20000000
# mount_setattr(2) (Linux 5.12): one system call, the same number on every architecture.
_MOUNT_SETATTR, _AT_FDCWD, _AT_RECURSIVE, _MOUNT_ATTR_RDONLY = 442, -100, 0x8000, 1
_TMPFS = _MS_NOSUID | _MS_NODEV


def _mount(source: bytes | None, target: str | bytes, kind: bytes | None, flags: int,
           data: bytes | None = None) -> None:  # fmt: skip
    target = target.encode() if isinstance(target, str) else target
    libc_call("mount", source, target, kind, flags, data)


def _private_namespace(flags: int = 0) -> None:
    """A mount namespace of its own (and ``flags``' namespaces), whose mounts no longer
    propagate to or from the host."""
    libc_call("unshare", _CLONE_NEWNS | flags)
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)


def _mounts() -> list[tuple[bytes, int]]:
    """Each mount point of this namespace, with the per-mount flags to keep."""
    found = []
    for line in Path("/proc/self/mountinfo").read_bytes().splitlines():
        fields = line.split(b" ")
        point = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), fields[4])
        flags = sum(bit for word, bit in _KEEP.items() if word in fields[5].split(b","))
        found.append((point, flags))
    return found


def _read_only(target: str | bytes, flags: int = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC) -> None:
    """Make the mount at ``target`` read-only in this namespace."""
    _mount(None, target, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | flags)


def _all_read_only() -> None:
    """Every mount of this namespace read-only, its other options kept: in one call where
    the kernel has mount_setattr, else mount by mount."""
    attributes = (ctypes.c_uint64 * 4)(_MOUNT_ATTR_RDONLY, 0, 0, 0)
    try:
        syscall(_MOUNT_SETATTR, ctypes.c_int(_AT_FDCWD), b"/", ctypes.c_uint(_AT_RECURSIVE),
                attributes, ctypes.c_size_t(ctypes.sizeof(attributes)))  # fmt: skip
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOSYS, errno.EINVAL, errno.EPERM):
            raise
    for point, flags in _mounts():
        with contextlib.suppress(FileNotFoundError):  # under a mount made over it
            _read_only(point, flags)


class Isolation:
    """``process`` under root: its own process, mount and IPC namespaces, where every host
    mount is read-only (``/proc/sys`` and ``/sys`` with the rest), ``/tmp`` (holding the
    working folder) and ``/dev/shm`` are new size-limited tmpfs without set-user-ID, and
    ``/proc`` shows its own processes only. Harness, in the host's namespaces, is out of
    the code's sight and reach. The code runs as PID 1 of its namespace: when it ends, the
    kernel ends every process it left."""

    def __init__(self, code: str, disk_bytes: int) -> None:
        self._code = code.encode("utf-8")
        self._tmpfs = f"size={disk_bytes},mode=1777".encode()

    def enter(self) -> None:
        """In the child: make the namespaces and return in PID 1 of the new one (the
        process that called it stays in between, waits, and ends as its child ended)."""
        _private_namespace(_CLONE_NEWPID | _CLONE_NEWIPC)
        _all_read_only()
        rooms = [room for room in ("/tmp", "/dev/shm") if room == "/tmp" or os.path.isdir(room)]
        kept = _interpreter_under(rooms)
        # Opened before the new rooms hide them; bound back from the open folder after.
        opened = [os.open(folder, os.O_PATH | os.O_DIRECTORY) for folder in kept]
        for room in rooms:  # a minimal container may lack /dev/shm
            _mount(b"harness-sandbox", room, b"tmpfs", _TMPFS, self._tmpfs)
        for folder, fd in zip(kept, opened, strict=True):
            os.makedirs(folder, mode=0o755, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}".encode(), str(folder), None, _MS_BIND | _MS_REC)
            _read_only(str(folder), _MS_NOSUID | _MS_NODEV)
            os.close(fd)
        os.mkdir(WORK, 0o700)
        main = os.open(f"{WORK}/main.py", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(main, self._code)
        os.close(main)
        child = os.fork()
        if child:
            _wait_and_end_as(child)
        set_death_signal()  # the process in between goes when harness does; so does this
        _mount(b"proc", "/proc", b"proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
        _cover_proc()
        os.chdir(WORK)


def interpreter_path() -> Path:
    """The running interpreter, its folder resolved (a path with ``..`` or a symlinked
    folder would not exist inside a sandbox) and its own name kept (a venv's ``python``
    must stay itself to find its ``pyvenv.cfg``)."""
    executable = Path(sys.executable)
    return executable.parent.resolve() / executable.name


def interpreter_folders() -> list[Path]:
    """The folders the running interpreter needs (a venv, its base installation, the
    interpreter's own folder), sorted; a folder inside another is named once."""
    folders = {Path(folder).resolve() for folder in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    folders.add(interpreter_path().parent)
    folders.add(interpreter_path().resolve().parent)
    kept: list[Path] = []
    for folder in sorted(folders):
        if not any(folder.is_relative_to(k) for k in kept):
            kept.append(folder)
    return kept


def _interpreter_under(rooms: list[str]) -> list[Path]:
    """The interpreter's folders inside the rooms the sandbox gives a tmpfs of its own: a
    project cloned under /tmp runs its venv's python from there, which the new /tmp would
    hide (the code would not start). They are bound back read-only."""
    return [f for f in interpreter_folders() if any(f.is_relative_to(room) for room in rooms)]


def _cover_proc() -> None:
    """Every kernel setting a new ``/proc`` offers outside the processes' own folders
    (``sys``, ``sysrq-trigger``, ``irq``, ``bus``, ...) made read-only: the kernel checks
    most of them by uid alone, and the code is root."""
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() or entry.is_symlink():
            continue
        if entry.is_dir() or entry.stat().st_mode & 0o222:
            _mount(entry.path.encode(), entry.path, None, _MS_BIND | _MS_REC)
            _read_only(entry.path)


def _wait_and_end_as(child: int) -> None:
    """The process between harness and the code's namespace (killed with harness: its
    death signal was set before): hold nothing, wait for the code, and end the way it
    ended (its exit status, or the signal that killed it)."""
    try:
        os.closerange(0, os.sysconf("SC_OPEN_MAX"))  # harness's pipes are the code's
        _, status = os.waitpid(child, 0)
        if os.WIFSIGNALED(status):
            number = os.WTERMSIG(status)
            with contextlib.suppress(OSError, ValueError):
                signal.signal(number, signal.SIG_DFL)
            os.kill(os.getpid(), number)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    finally:
        os._exit(255)


def _passable(folder: Path) -> bool:
    """Whether uid ``UNPRIVILEGED`` may pass through ``folder`` (its other-x bit, or its
    own)."""
    mode = folder.stat()
    if mode.st_uid == UNPRIVILEGED:
        return bool(mode.st_mode & 0o100)
    return bool(mode.st_mode & 0o001)


def cover_unreachable(folders: list[Path]) -> list[tuple[Path, list[Path]]]:
    """For each folder an unprivileged user cannot reach (an interpreter under /root,
    mode 0700), the first folder on its way that user cannot pass, with the folders
    below it to show: ``reach`` covers each such folder with a tmpfs showing just those."""
    covers: dict[Path, list[Path]] = {}
    for folder in folders:
        for step in (*reversed(folder.parents), folder):
            if not _passable(step):
                covers.setdefault(step, []).append(folder)
                break
    return sorted(covers.items())


def reach(covers: list[tuple[Path, list[Path]]]) -> None:
    """In the child, still root: in a mount namespace of its own, cover each folder the
    unprivileged user cannot pass with a tmpfs that holds binds of the folders needed
    below it (the rest of it stays hidden)."""
    if not covers:
        return
    _private_namespace()
    for top, folders in covers:
        # Opened before the cover hides them; bound from the open folder afterwards.
        opened = [os.open(folder, os.O_PATH | os.O_DIRECTORY) for folder in folders]
        _mount(b"harness-sandbox", str(top), b"tmpfs", _TMPFS, b"size=1m,mode=0755")
        for folder, fd in zip(folders, opened, strict=True):
            os.makedirs(folder, mode=0o755, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}".encode(), str(folder), None, _MS_BIND | _MS_REC)
            os.close(fd)
