"""What every sandbox backend shares: limits, the outcome of a run, output capture."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness._errors import HarnessError
from harness.sandbox._cgroup import PidsCgroup
from harness.sandbox._child import Confinement, preexec
from harness.sandbox._folder import HostFolder

__all__ = [
    "Confinement",
    "Execution",
    "Limits",
    "Sandbox",
    "SandboxError",
    "child_environment",
    "python_flags",
    "run_in_host_folder",
    "run_limited",
]

# Marker appended to output cut at the size limit (the model must know it is cut).
CUT = "\n[... output cut at {limit} bytes ...]"


class SandboxError(HarnessError):
    """A sandbox cannot run here, or was asked for something it does not do."""


@dataclass(frozen=True)
class Limits:
    """What one execution may use. Sizes in bytes except ``memory_mb`` and ``disk_mb``."""

    timeout: float = 10.0  # wall seconds; the whole process group is killed then
    memory_mb: int = 512  # address space of the child
    output_bytes: int = 64_000  # per stream, kept; the rest is read and dropped
    file_bytes: int = 16_000_000  # largest file the code may write
    processes: int = 32  # processes and threads the code may have at once
    # Room for files, where the backend gives the code file systems of its own (its
    # folder with /tmp, and /dev/shm: each a tmpfs of this size, in memory).
    disk_mb: int = 64
    # The standard library only, by default: the installed packages (and their .pth
    # start-up work, ~40 ms here) are not the code's to use unless asked for.
    site_packages: bool = False

    def __post_init__(self) -> None:
        # A tmpfs of size 0 is unbounded, and an rlimit of 0 forbids everything.
        for name in ("memory_mb", "file_bytes", "processes", "disk_mb"):
            if getattr(self, name) < 1:
                raise SandboxError(
                    f"sandbox limit {name} must be at least 1, not {getattr(self, name)}"
                )


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
    # What the backend could not hold here (said in the tool's result), or None.
    warning: str | None = None
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
    confinement: Confinement | None = None,
    pass_fds: tuple[int, ...] = (),
) -> Execution:
    """Run ``argv`` with resource limits, a wall timeout and bounded output capture.

    ``confinement``: what the child gives up besides its limits, session, keyring and
    cgroup (child.Confinement). Every process the code started is killed when it ends or
    times out; output is read until then (plus a moment), never longer, and processes
    that could not be stopped are reported in ``Execution.survivors``.
    """
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    strays = _Strays((out_r, err_r))
    outputs = (_Output(limits.output_bytes), _Output(limits.output_bytes))
    readers = None
    pids = PidsCgroup(limits.processes)
    try:
        deadline = asyncio.get_running_loop().time() + limits.timeout
        process = await _start(
            argv, cwd, {**env, _Strays.VARIABLE: strays.marker}, (out_w, err_w), pass_fds,
            preexec(limits, pids, confinement or Confinement()),
        )  # fmt: skip
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


async def _start(
    argv: list[str],
    cwd: str,
    env: dict[str, str],
    output: tuple[int, int],
    pass_fds: tuple[int, ...],
    setup: Callable[[], None],
) -> asyncio.subprocess.Process:
    """Start the child; SandboxError when its own set-up failed before the code ran."""
    try:
        return await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=output[0],
            stderr=output[1],
            pass_fds=pass_fds,
            preexec_fn=setup,
        )
    except subprocess.SubprocessError as exc:  # raised in preexec_fn: said, not hidden
        raise SandboxError(
            f"the sandbox could not be set up for this run ({exc}): a namespace, keyring "
            "or privilege step failed in the child before the code started"
        ) from exc


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
    pids: PidsCgroup,
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
    await pids.aclose()
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


async def run_in_host_folder(
    code: str,
    limits: Limits,
    sandbox: str,
    interpreter: list[str],
    confinement: Confinement | None = None,
) -> Execution:
    """Write ``code`` to main.py in a new folder on the host, run ``interpreter`` (and
    Python's flags) on it there, and remove the folder (folder.HostFolder)."""
    folder = HostFolder(code)
    try:
        return await run_limited(
            [*interpreter, *python_flags(limits), "main.py"],
            cwd=folder.path,
            env=child_environment(folder.path),
            limits=limits,
            sandbox=sandbox,
            confinement=confinement,
        )
    finally:
        folder.remove()
