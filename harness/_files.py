"""Writing files harness produces (results, reports, cassettes, frozen scenarios)."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "MAX_READ_BYTES",
    "TEMPORARY_SUFFIX",
    "Unreadable",
    "atomic_write",
    "read_bounded",
    "regular_size",
    "remove_leftovers",
]

# The most harness reads of a file a scenario names (the scenario file, its history): a
# mistaken path to a device, a pipe or a huge file must not hang or exhaust the machine.
MAX_READ_BYTES = 16 * 2**20


class Unreadable(OSError):
    """A file ``read_bounded`` refuses to read; ``str()`` is the reason alone."""

    def __str__(self) -> str:
        return str(self.strerror)


def read_bounded(path: str | Path, limit: int = MAX_READ_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes.

    Unreadable otherwise, saying why: ``it is not a regular file`` (a device such as
    /dev/zero, a pipe, a folder) or ``it is larger than 16 MiB``; OSError when the file
    cannot be opened.
    """
    # Non-blocking: opening a pipe would otherwise wait for a writer forever.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Unreadable(0, "it is not a regular file", str(path))
        # Read one byte more than allowed: a file that grew since fstat is caught too.
        data = handle.read(limit + 1)
    if info.st_size > limit or len(data) > limit:
        raise Unreadable(0, f"it is larger than {_size(limit)}", str(path))
    return data


def regular_size(path: str | Path) -> int | None:
    """The size of the file ``path``, checked before anything reads it: a regular file's
    size; None for a pipe (read as a stream, once); FileNotFoundError, IsADirectoryError,
    or Unreadable for a device (/dev/zero reads for ever)."""
    info = os.stat(path)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
    if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode):
        raise Unreadable(0, "a device, not a file", str(path))
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _size(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit} bytes"


# A temporary file's name ends so: ``.NAME.PID.RANDOM.harness-tmp`` beside NAME. Hidden,
# git-ignored (``.*.harness-tmp``), and removed by the next write or cassette load once the
# process that wrote it is gone (a kill -9 between the write and the rename).
TEMPORARY_SUFFIX = ".harness-tmp"


def atomic_write(path: str | Path, text: str | Iterable[str]) -> None:
    """Write ``text`` (or its pieces, in order, as they are made) to ``path`` through a
    temporary file and a rename (mode 0644)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_leftovers(target)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{target.name}.{os.getpid()}.", suffix=TEMPORARY_SUFFIX, dir=target.parent
    )
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            if isinstance(text, str):
                handle.write(text)
            else:
                handle.writelines(text)
        # mkstemp creates 0600; results and cassettes are ordinary files.
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_leftovers(path: str | Path) -> None:
    """Remove the temporary files of ``path`` whose writer died before its rename.

    A writer still running (another xdist worker saving the same cassette) keeps its
    file: the process id in the name says whose it is.
    """
    target = Path(path)
    try:
        found = list(target.parent.glob(f".{target.name}.*{TEMPORARY_SUFFIX}"))
    except OSError:
        return
    for leftover in found:
        pid = leftover.name[len(target.name) + 2 :].split(".", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            leftover.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
