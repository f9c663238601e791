"""What every sandbox backend shares: limits, the outcome of a run, output capture."""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
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


def _preexec(limits: Limits, pids: _Pids) -> Any:
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

    return limit


async def _read(stream: asyncio.StreamReader, keep: int) -> tuple[bytes, bool]:
    """Read to the end, keeping the first ``keep`` bytes (an endless print cannot fill memory)."""
    kept = bytearray()
    cut = False
    while chunk := await stream.read(65536):
        room = keep - len(kept)
        if room > 0:
            kept += chunk[:room]
        if len(chunk) > room:
            cut = True
    return bytes(kept), cut


def _text(data: bytes, cut: bool, limit: int) -> str:
    text = data.decode("utf-8", errors="replace")
    return text + CUT.format(limit=limit) if cut else text


async def run_limited(
    argv: list[str], *, cwd: str, env: dict[str, str], limits: Limits, sandbox: str
) -> Execution:
    """Run ``argv`` with resource limits, a wall timeout and bounded output capture."""
    pids = _Pids(limits.processes)
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            preexec_fn=_preexec(limits, pids),
        )
        readers = asyncio.gather(
            _read(process.stdout, limits.output_bytes),  # type: ignore[arg-type]
            _read(process.stderr, limits.output_bytes),  # type: ignore[arg-type]
        )
        timed_out = False
        try:
            await asyncio.wait_for(process.wait(), limits.timeout)
        except TimeoutError:
            timed_out = True
        # Children the code left behind (or a fork bomb) go with the group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        pids.close()
        await process.wait()
        (out, out_cut), (err, err_cut) = await readers
    finally:
        pids.close()
    status = process.returncode
    execution = Execution(
        stdout=_text(out, out_cut, limits.output_bytes),
        stderr=_text(err, err_cut, limits.output_bytes),
        exit_status=None if timed_out else status,
        sandbox=sandbox,
        stdout_cut=out_cut,
        stderr_cut=err_cut,
    )
    execution.limit = _limit_hit(execution, timed_out, status)
    return execution


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
    code: str, limits: Limits, sandbox: str, interpreter: Callable[[str], list[str]]
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
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
