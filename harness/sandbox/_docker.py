"""The ``docker`` backend: a throw-away container through the Docker SDK.

Network disabled, a memory, process and file-size limit, a read-only root file system,
every capability dropped, no new privileges, a non-root user. The code's folder, /tmp and
/dev/shm are size-limited tmpfs of the container's own (nothing it writes reaches the
host's disk); ``main.py`` is bound read-only from a host folder removed afterwards. Needs
the ``docker`` package and an engine that answers; ``unavailable()`` says which is missing.
A container is the engine's, not harness's child: if harness is killed, it runs on until
its code ends (docs/sandbox.md).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from harness.sandbox._base import CUT, Execution, Limits, child_environment, python_flags
from harness.sandbox._folder import HostFolder

__all__ = ["DockerSandbox"]

_WORK = "/sandbox"


class DockerSandbox:
    """Runs code in a container of ``image`` ($HARNESS_SANDBOX_IMAGE, else python:3.11-slim)."""

    name = "docker"

    def __init__(self, image: str | None = None) -> None:
        self.image = image or os.environ.get("HARNESS_SANDBOX_IMAGE", "python:3.11-slim")
        self._client: Any = None

    def unavailable(self) -> str | None:
        """None when the Docker SDK is installed and an engine answers its ping."""
        try:
            import docker
        except ImportError:
            return "the docker package is not installed (pip install docker)"
        try:
            client = docker.from_env(timeout=5)
            client.ping()
        except Exception as exc:  # the SDK raises several types for "no engine"
            reason = " ".join(str(exc).split())[:200]
            return f"no Docker engine answers here ({reason})"
        self._client = client
        return None

    async def run(self, code: str, limits: Limits) -> Execution:
        """Run ``code`` in a new container, removed afterwards."""
        return await asyncio.to_thread(self._run, code, limits)

    def _container(self, folder: HostFolder, limits: Limits) -> Any:
        from docker.types import Mount, Ulimit

        room = f"size={limits.disk_mb}m,nosuid,nodev"
        os.chmod(folder.path, 0o755)  # the container's user is not the owner; it only reads
        os.chmod(os.path.join(folder.path, "main.py"), 0o644)
        return self._client.containers.run(
            self.image,
            ["python", *python_flags(limits), "main.py"],
            detach=True,
            network_disabled=True,
            mem_limit=f"{limits.memory_mb}m",
            memswap_limit=f"{limits.memory_mb}m",
            pids_limit=limits.processes,
            ulimits=[Ulimit(name="fsize", soft=limits.file_bytes, hard=limits.file_bytes)],
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            user="65534:65534",
            environment=child_environment(_WORK),
            working_dir=_WORK,
            tmpfs={_WORK: f"{room},mode=1777", "/tmp": f"{room},mode=1777"},
            shm_size=f"{limits.disk_mb}m",
            mounts=[
                Mount(
                    f"{_WORK}/main.py",
                    os.path.join(folder.path, "main.py"),
                    type="bind",
                    read_only=True,
                )
            ],
        )

    def _run(self, code: str, limits: Limits) -> Execution:
        if self._client is None and self.unavailable() is not None:
            raise RuntimeError(f"docker sandbox: {self.unavailable()}")
        folder = HostFolder(code)
        try:
            container = self._container(folder, limits)
            try:
                timed_out = False
                try:
                    status = container.wait(timeout=limits.timeout).get("StatusCode")
                except Exception:  # requests' ReadTimeout: the wall timeout
                    timed_out, status = True, None
                    container.kill()
                out = container.logs(stdout=True, stderr=False)
                err = container.logs(stdout=False, stderr=True)
            finally:
                container.remove(force=True)
        finally:
            folder.remove()
        return _execution(out, err, status, timed_out, limits.output_bytes, self.name)


def _execution(
    out: bytes, err: bytes, status: int | None, timed_out: bool, keep: int, name: str
) -> Execution:
    execution = Execution(
        stdout=_cut(out, keep),
        stderr=_cut(err, keep),
        exit_status=status,
        sandbox=name,
        stdout_cut=len(out) > keep,
        stderr_cut=len(err) > keep,
    )
    if timed_out:
        execution.limit = "timeout"
    elif status == 137:
        execution.limit = "memory"  # the kernel's OOM kill inside the memory limit
    return execution


def _cut(data: bytes, keep: int) -> str:
    text = data[:keep].decode("utf-8", errors="replace")
    return text + CUT.format(limit=keep) if len(data) > keep else text
