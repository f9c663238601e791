"""What a sandboxed child gives up before ``exec``: capabilities, the session keyring it
was born with, and (for bubblewrap under root) root itself.

Each function here is made in the parent (libc loaded, numbers read) and returns a plain
callable that the child runs between ``fork`` and ``exec``: only calls there.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "UNPRIVILEGED",
    "become_unprivileged",
    "capability_dropper",
    "keyring_joiner",
    "libc_call",
    "no_new_privileges",
    "set_death_signal",
    "syscall",
]

# The host user bubblewrap is run as when harness is root ("nobody" on Linux systems).
UNPRIVILEGED = 65534

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.argtypes = [ctypes.c_int, *[ctypes.c_ulong] * 4]
_libc.mount.argtypes = [*[ctypes.c_char_p] * 3, ctypes.c_ulong, ctypes.c_char_p]
_libc.unshare.argtypes = [ctypes.c_int]

# prctl(2) and capset(2) numbers (linux/prctl.h, linux/capability.h).
_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAPABILITY_VERSION_3 = 0x20080522
# keyctl(2): its system call number per machine (glibc has no wrapper), and the operation.
_KEYCTL = {
    "x86_64": 250,
    "aarch64": 219,
    "riscv64": 219,
    "i686": 288,
    "armv7l": 311,
    "ppc64le": 271,
    "s390x": 280,
}
_KEYCTL_JOIN_SESSION_KEYRING = 1


def libc_call(name: str, *args: object) -> int:
    """Call libc's ``name``; OSError (with the errno) when it returns -1."""
    result = int(getattr(_libc, name)(*args))
    if result == -1:
        code = ctypes.get_errno()
        raise OSError(code, f"{name}: {os.strerror(code)}")
    return result


def syscall(number: int, *args: object) -> int:
    """A system call glibc has no wrapper for; OSError (with the errno) when it fails."""
    result = int(_libc.syscall(ctypes.c_long(number), *args))
    if result < 0:
        code = ctypes.get_errno()
        raise OSError(code, f"system call {number}: {os.strerror(code)}")
    return result


def set_death_signal() -> None:
    """SIGKILL this process when the thread that started it ends (harness killed)."""
    libc_call("prctl", _PR_SET_PDEATHSIG, 9, 0, 0, 0)


def capability_dropper() -> Callable[[], None]:
    """A function for the child, before exec: no capability in any set, and none to gain.

    Root keeps its uid, but without capabilities it can neither trace nor read a process
    that holds them (harness), nor mount, nor load modules; ``no_new_privs`` keeps a
    set-uid program from giving any back.
    """
    prctl = _libc.prctl
    capset = _libc.capset
    try:
        last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        last = 63
    header = (ctypes.c_uint32 * 2)(_CAPABILITY_VERSION_3, 0)
    empty = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: twice 32 bits

    def drop() -> None:
        for capability in range(last + 1):
            prctl(_PR_CAPBSET_DROP, capability, 0, 0, 0)  # EPERM when not root: none held
        prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        capset(header, empty)

    return drop


def no_new_privileges() -> None:
    """No set-uid program (nor file capability) gives this process anything from now on."""
    libc_call("prctl", _PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


def keyring_joiner() -> Callable[[], None]:
    """A function for the child: a new, empty session keyring of its own.

    A child shares its parent's session keyring, and a process may read every key in the
    keyrings it holds (the kernel's "possessor" rights): without this, the code reads the
    keys of whoever ran harness (``keyctl read @s``). On a machine whose system call number
    is not known here the child keeps the keyring (docs/sandbox.md says so).
    """
    number = _KEYCTL.get(platform.machine())

    def join() -> None:
        if number is None:
            return
        result = _libc.syscall(
            ctypes.c_long(number), ctypes.c_long(_KEYCTL_JOIN_SESSION_KEYRING), None
        )
        code = ctypes.get_errno()
        if result < 0 and code != errno.ENOSYS:  # ENOSYS: no keyrings in this kernel at all
            raise OSError(code, f"a session keyring of its own: {os.strerror(code)}")

    return join


def become_unprivileged() -> None:
    """Root gives itself up for good: uid and gid ``UNPRIVILEGED``, no groups, and no way
    back (``no_new_privs``); every capability goes with the uid."""
    os.setgroups([])
    os.setresgid(UNPRIVILEGED, UNPRIVILEGED, UNPRIVILEGED)
    os.setresuid(UNPRIVILEGED, UNPRIVILEGED, UNPRIVILEGED)
    no_new_privileges()
