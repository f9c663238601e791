"""What every sandbox backend shares: limits, the outcome of a run, output capture."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import resource
import secrets
import shutil
import signal
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from harness.errors import HarnessError

__all__ = [
    "Execution",
    "Limits",
    "Sandbox",
    "SandboxError",
    "child_environment",
    "python_flags",
    "run_in_new_folder",
    "run_limited",
]

# Marker appended to output cut at the size limit (the model must know it is cut).
CUT = "\n[... output cut at {limit} bytes ...]"


class SandboxError(HarnessError):
    """A sandbox cannot run here, or was asked for something it does not do."""


@dataclass(frozen=True)
class Limits:
    """What one execution may use. Sizes in bytes except ``memory_mb``."""

    timeout: float = 10.0  # wall seconds; the whole process group is killed then
    memory_mb: int = 512  # address space of the child
    output_bytes: int = 64_000  # per stream, kept; the rest is read and dropped
    file_bytes: int = 16_000_000  # largest file the code may write
    processes: int = 32  # processes and threads the code may have at once
    # The standard library only, by default: the installed packages (and their .pth
    # start-up work, ~40 ms here) are not the code's to use unless asked for.
    site_packages: bool = False


@dataclass
class Execution:
    """The outcome of running code: its output and why it stopped."""

    stdout: str
    stderr: str
    exit_status: int | None
    sandbox: str
    # "timeout", "memory", "network", "output" or None: a limit the code ran into.
    limit: str | None = None
    stdout_cut: bool = False
    stderr_cut: bool = False
    # Processes the code started that could not be stopped (pids): reported, never hidden.
    survivors: list[int] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)


class Sandbox(Protocol):
    """A backend: runs Python source in isolation and reports what happened."""

    name: str

    def unavailable(self) -> str | None:
        """None when this backend works on this machine, else why it does not."""

    async def run(self, code: str, limits: Limits) -> Execution:
        """Run ``code`` (Python) under ``limits``."""


def python_flags(limits: Limits) -> list[str]:
    """Isolated mode (no PYTHON* variables, no user site); -S unless site-packages are wanted."""
    return ["-I"] if limits.site_packages else ["-I", "-S"]


def child_environment(home: str) -> dict[str, str]:
    """A fresh environment: nothing of the parent's (no API keys, tokens, cookies)."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "LANG": "C.UTF-8",
        "PYTHONIOENCODING": "utf-8",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


class _Pids:
    """A pids cgroup (v1 or v2) capping the processes of one execution.

    RLIMIT_NPROC counts per user and is not enforced for root: under root (CI
    containers) a fork bomb is stopped by a cgroup instead, when one can be made.
    """

    def __init__(self, limit: int) -> None:
        self.path: Path | None = None
        for base in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")):
            if not (base / "cgroup.procs").exists() or not os.access(base, os.W_OK):
                continue
            path = base / f"harness-sandbox-{os.getpid()}-{id(self)}"
            try:
                path.mkdir()
                (path / "pids.max").write_text(str(limit))
            except OSError:
                with contextlib.suppress(OSError):
                    path.rmdir()
                continue
            self.path = path
            break

    def enter(self) -> None:
        """Move the calling process (a child, before exec) into the cgroup."""
        if self.path is not None:
            with contextlib.suppress(OSError):
                (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def close(self) -> None:
        """Kill what is left in the cgroup and remove it."""
        if self.path is None:
            return
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
        with contextlib.suppress(OSError):
            self.path.rmdir()


# prctl(2) and capset(2) numbers (linux/prctl.h, linux/capability.h).
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
_CAPABILITY_VERSION_3 = 0x20080522


def _privilege_dropper() -> Callable[[], None]:
    """A function for the child, before exec: no capability in any set, and none to gain.

    Made in the parent (libc loaded, the kernel's last capability read) so that the child
    only calls. Root keeps its uid, but without capabilities it can neither trace nor read
    a process that holds them (harness), nor mount, nor load modules; ``no_new_privs``
    keeps a set-uid program from giving any back.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, *[ctypes.c_ulong] * 4]
    capset = libc.capset
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


def _preexec(limits: Limits, pids: _Pids, confine: bool) -> Any:
    drop = _privilege_dropper() if confine else None

    def limit() -> None:
        os.setsid()  # a process group of its own: killed as a whole at the timeout
        pids.enter()
        memory = limits.memory_mb * 1024 * 1024
        cpu = int(limits.timeout) + 1
        for which, value in (
            (resource.RLIMIT_AS, memory),
            (resource.RLIMIT_CPU, cpu),  # soft: SIGXCPU; the hard limit one second later
            (resource.RLIMIT_FSIZE, limits.file_bytes),
            (resource.RLIMIT_NPROC, limits.processes),
            (resource.RLIMIT_CORE, 0),
        ):
            hard = value + 1 if which == resource.RLIMIT_CPU else value
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(which, (value, hard))
        if drop is not None:
            drop()  # last: joining the cgroup and setting limits need the privileges

    return limit


@dataclass
class _Output:
    """One output stream of the code: its first ``keep`` bytes, and whether more came."""

    keep: int
    data: bytearray = field(default_factory=bytearray)
    cut: bool = False

    def take(self, chunk: bytes) -> None:
        room = self.keep - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        if len(chunk) > room:
            self.cut = True  # read and dropped: an endless print cannot fill memory

    def text(self) -> str:
        text = self.data.decode("utf-8", errors="replace")
        return text + CUT.format(limit=self.keep) if self.cut else text


async def _drain(fd: int, output: _Output) -> None:
    """Read the pipe ``fd`` to its end into ``output`` (closing it, even when cancelled)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", buffering=0)
    )
    try:
        while chunk := await reader.read(65536):
            output.take(chunk)
    finally:
        transport.close()


class _Strays:
    """The processes an execution started, found wherever they went.

    Its process group and its cgroup hold them unless they leave: a ``setsid`` daemon
    leaves the group, and a root process can write itself out of the cgroup. Those are
    found by what they keep: the execution's marker in their environment, or its output
    pipes among their open files.
    """

    VARIABLE = "HARNESS_SANDBOX_RUN"

    def __init__(self, pipes: tuple[int, ...]) -> None:
        self.marker = secrets.token_hex(12)
        self._needle = f"{self.VARIABLE}={self.marker}".encode()
        self._pipes = {f"pipe:[{os.fstat(fd).st_ino}]" for fd in pipes}

    def find(self, pipes: bool = True) -> list[int]:
        """Live processes (not harness) that carry the marker, or (``pipes``) hold an
        output pipe: listing every process's files costs ~10 ms, the environments ~2 ms."""
        me, found = os.getpid(), []
        for entry in os.scandir("/proc"):
            if entry.name.isdigit() and int(entry.name) != me and self._belongs(entry.path, pipes):
                found.append(int(entry.name))
        return found

    def _belongs(self, proc: str, pipes: bool) -> bool:
        try:
            with open(f"{proc}/environ", "rb") as environ:
                if self._needle in environ.read():
                    return True
            fds = os.listdir(f"{proc}/fd") if pipes else []
        except OSError:
            return False  # gone, or another user's: not ours to see
        for fd in fds:
            with contextlib.suppress(OSError):
                if os.readlink(f"{proc}/fd/{fd}") in self._pipes:
                    return True
        return False

    def kill(self, pipes: bool = True) -> list[int]:
        """SIGKILL each process ``find`` gives; the pids signalled."""
        found = self.find(pipes)
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        return found


# How long the output is still read after the code was stopped, beyond its timeout:
# the kill must land (a moment on a busy machine) and the last output be read.
_GRACE = 1.0
# How long the output may take to end once everything found was killed, before the
# processes holding its pipes are looked for.
_SETTLE = 0.25


async def run_limited(
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    limits: Limits,
    sandbox: str,
    confine: bool = False,
) -> Execution:
    """Run ``argv`` with resource limits, a wall timeout and bounded output capture.

    ``confine``: drop every capability and privilege in the child (a backend with no
    namespaces of its own). Every process the code started is killed when it ends or
    times out; output is read until then (plus a moment), never longer, and processes
    that could not be stopped are reported in ``Execution.survivors``.
    """
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    strays = _Strays((out_r, err_r))
    outputs = (_Output(limits.output_bytes), _Output(limits.output_bytes))
    readers = None
    pids = _Pids(limits.processes)
    try:
        deadline = asyncio.get_running_loop().time() + limits.timeout
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env={**env, _Strays.VARIABLE: strays.marker},
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
            preexec_fn=_preexec(limits, pids, confine),
        )
        os.close(out_w)
        os.close(err_w)
        out_w = err_w = -1
        readers = asyncio.gather(_drain(out_r, outputs[0]), _drain(err_r, outputs[1]))
        out_r = err_r = -1  # the readers own them now
        try:
            await asyncio.wait_for(process.wait(), limits.timeout)
            timed_out = False
        except TimeoutError:
            timed_out = True
        survivors = await _stop(process, pids, strays, readers, deadline)
    finally:
        pids.close()
        for fd in (out_r, out_w, err_r, err_w):
            if fd >= 0:
                os.close(fd)
        if readers is not None and not readers.done():
            readers.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await readers
    return _execution(outputs, process.returncode, timed_out, sandbox, survivors)


def _execution(
    outputs: tuple[_Output, _Output],
    status: int | None,
    timed_out: bool,
    sandbox: str,
    survivors: list[int],
) -> Execution:
    """What a run gives back: its output, its status, and the limit it hit, if any."""
    execution = Execution(
        stdout=outputs[0].text(),
        stderr=outputs[1].text(),
        exit_status=None if timed_out else status,
        sandbox=sandbox,
        stdout_cut=outputs[0].cut,
        stderr_cut=outputs[1].cut,
        survivors=survivors,
    )
    execution.limit = _limit_hit(execution, timed_out, status)
    return execution


async def _stop(
    process: asyncio.subprocess.Process,
    pids: _Pids,
    strays: _Strays,
    readers: asyncio.Future[Any],
    deadline: float,
) -> list[int]:
    """Kill everything the code started; read its output until it ends or the deadline
    (plus a moment) passes. Returns the processes still alive then."""
    # Children the code left behind (or a fork bomb) go with the group and the cgroup;
    # the rest are found by their marker or the pipes they hold.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    pids.close()
    killed = strays.kill(pipes=False)
    await process.wait()
    loop = asyncio.get_running_loop()
    # The output ends when the last process holding it is gone; one still holding it
    # after the kills is looked for by the pipes it holds.
    for wait in (_SETTLE, max(deadline - loop.time(), 0) + _GRACE):
        try:
            await asyncio.wait_for(asyncio.shield(readers), wait)
            break
        except TimeoutError:
            killed += strays.kill()
    if not killed:
        return []
    # A killed process goes when the kernel next schedules it: a moment on a busy machine.
    until = loop.time() + _GRACE
    while (alive := strays.find()) and loop.time() < until:
        await asyncio.sleep(0.05)
    return alive


# What Python prints when the code tried the network and the sandbox had none.
_NETWORK = ("Network is unreachable", "Temporary failure in name resolution", "[Errno -3]")


def _limit_hit(execution: Execution, timed_out: bool, status: int | None) -> str | None:
    """Which limit stopped the code, read from how it ended (None: it ended by itself)."""
    if timed_out or status in (-signal.SIGXCPU, -signal.SIGKILL):
        return "timeout"  # the wall clock, or CPU time (SIGXCPU, then SIGKILL)
    if not status:
        return None
    last = (execution.stderr.strip().splitlines() or [""])[-1]
    if "MemoryError" in last:
        return "memory"
    # Anywhere in stderr, not only its last line: the forked children of a fork bomb write
    # their tracebacks into the same stream, interleaved.
    if "BlockingIOError" in execution.stderr or "Resource temporarily unavailable" in (
        execution.stderr
    ):
        return "processes"
    if any(marker in execution.stderr for marker in _NETWORK):
        return "network"
    return None


async def run_in_new_folder(
    code: str,
    limits: Limits,
    sandbox: str,
    interpreter: Callable[[str], list[str]],
    *,
    confine: bool = False,
) -> Execution:
    """Write ``code`` to main.py in a new temporary folder, run it there, remove the folder.

    ``interpreter(folder)`` is the command before Python's flags and ``main.py``: the
    interpreter itself, or a sandbox around it that needs to know the folder.
    """
    work = tempfile.mkdtemp(prefix="harness-sandbox-")
    try:
        Path(work, "main.py").write_text(code, encoding="utf-8")
        return await run_limited(
            [*interpreter(work), *python_flags(limits), "main.py"],
            cwd=work,
            env=child_environment(work),
            limits=limits,
            sandbox=sandbox,
            confine=confine,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
