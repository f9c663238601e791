"""A working folder on the host for the code (``process`` without namespaces, ``docker``),
and its removal, which the code's own files cannot defeat.

``shutil.rmtree`` recurses: a tree 1,500 folders deep makes it raise ``RecursionError``
(no OSError, so ``ignore_errors`` does not apply), and paths that deep pass PATH_MAX.
Here the folder is held open from its creation and emptied through open folders, never
by path, never following a link, with a bounded number of folders open at once.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import tempfile

from harness.sandbox._owners import PREFIX, gone, stamp

__all__ = ["HostFolder"]

# Folders held open at once while emptying; a subtree deeper than this is moved up to
# the top first (a rename in the same file system: instant, whatever its depth).
_DEPTH = 32
# Entries removed at most: a process the code left that is still writing cannot keep
# harness emptying the folder for ever (the rest is left; the survivor is reported).
_MOST = 10_000_000
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW


class HostFolder:
    """A new folder holding ``main.py`` (the code), removed by ``remove``.

    Named after the harness process that made it, and locked while it lives: a harness
    killed mid-run cannot remove its folder, so each new one first removes this user's
    folders whose harness is gone and whose lock nobody holds.
    """

    def __init__(self, code: str) -> None:
        parent = tempfile.gettempdir()
        _tidy(parent)
        self.path = tempfile.mkdtemp(prefix=stamp(), dir=parent)
        self._fd = os.open(self.path, _OPEN_DIR)
        fcntl.flock(self._fd, fcntl.LOCK_SH)
        with open(os.path.join(self.path, "main.py"), "w", encoding="utf-8") as main:
            main.write(code)

    def remove(self) -> None:
        """Empty the folder (wherever the code moved it) and remove it; never raises."""
        with contextlib.suppress(OSError):
            _empty(self._fd)
        with contextlib.suppress(OSError):
            if os.stat(self.path, follow_symlinks=False).st_ino == os.fstat(self._fd).st_ino:
                os.rmdir(self.path)
        os.close(self._fd)


def _tidy(parent: str) -> None:
    """Remove the folders in ``parent`` left by harness processes that are gone."""
    for entry in os.scandir(parent):
        if not entry.name.startswith(PREFIX) or not gone(entry.name):
            continue
        try:
            folder = os.open(entry.path, _OPEN_DIR)
        except OSError:
            continue
        try:
            if os.fstat(folder).st_uid == os.geteuid():
                fcntl.flock(folder, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: a live run's
                _empty(folder)
                os.rmdir(entry.path)
        except OSError:
            pass
        finally:
            os.close(folder)


def _open_folder(name: str, parent: int) -> int:
    """Open the folder ``name`` in ``parent`` (a link is refused), first giving its owner
    (harness) the rights the code may have taken away (chmod 0)."""
    path = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
    try:
        with contextlib.suppress(OSError):
            os.chmod(f"/proc/self/fd/{path}", 0o700)  # the folder itself: no link followed
        return os.open(name, _OPEN_DIR, dir_fd=parent)
    finally:
        os.close(path)


def _clear_files(folder: int) -> tuple[str | None, int]:
    """Remove every entry of ``folder`` that is not a folder; the name of a folder left
    in it (None: it is empty now), and how many entries went."""
    removed = 0
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                return entry.name, removed
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry.name, dir_fd=folder)
            removed += 1
    return None, removed


def _empty(top: int) -> None:
    """Remove everything below the folder open as ``top``."""
    with contextlib.suppress(OSError):
        os.chmod(f"/proc/self/fd/{top}", 0o700)  # the code may have closed it (chmod 0)
    stack: list[tuple[int, str]] = []  # the open folders below top, and their names
    removed = 0
    try:
        while removed < _MOST:
            current = stack[-1][0] if stack else top
            name, count = _clear_files(current)
            removed += count + 1
            if name is None:  # empty: close it and remove it from its parent
                if not stack:
                    return
                folder, own = stack.pop()
                os.close(folder)
                os.rmdir(own, dir_fd=stack[-1][0] if stack else top)
            elif len(stack) >= _DEPTH:
                hoisted = f".harness-{secrets.token_hex(8)}"
                os.rename(name, hoisted, src_dir_fd=current, dst_dir_fd=top)
            else:
                stack.append((_open_folder(name, current), name))
    finally:
        for folder, _ in stack:
            os.close(folder)
