"""The ``docker`` backend: a throw-away container through the Docker SDK.

Network disabled, a memory and process limit, a read-only root file system with a
writable working folder and /tmp, every capability dropped, a non-root user. Needs the
``docker`` package and an engine that answers; ``unavailable()`` says which is missing.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from harness.sandbox.base import CUT, Execution, Limits, child_environment, python_flags

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

    def _run(self, code: str, limits: Limits) -> Execution:
        if self._client is None and self.unavailable() is not None:
            raise RuntimeError(f"docker sandbox: {self.unavailable()}")
        work = tempfile.mkdtemp(prefix="harness-sandbox-")
        os.chmod(work, 0o777)  # the container's user is not the owner
        Path(work, "main.py").write_text(code, encoding="utf-8")
        container = self._client.containers.run(
            self.image,
            ["python", *python_flags(limits), "main.py"],
            detach=True,
            network_disabled=True,
            mem_limit=f"{limits.memory_mb}m",
            pids_limit=limits.processes,
            read_only=True,
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            user="65534:65534",
            environment=child_environment(_WORK),
            working_dir=_WORK,
            volumes={work: {"bind": _WORK, "mode": "rw"}},
            tmpfs={"/tmp": "size=64m"},
        )
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
            shutil.rmtree(work, ignore_errors=True)
        keep = limits.output_bytes
        execution = Execution(
            stdout=_cut(out, keep),
            stderr=_cut(err, keep),
            exit_status=status,
            sandbox=self.name,
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
