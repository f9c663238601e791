"""``CodeExecutionTool``: a tool that runs the model's Python code in a sandbox."""

from __future__ import annotations

import logging
from typing import Any

from harness._tools import Tool, arguments_model
from harness.sandbox._base import Limits
from harness.sandbox._choice import choose, get_sandbox

__all__ = ["CodeExecutionTool", "SandboxLimitError"]

_LIMIT_TEXT = {
    "timeout": "the code ran longer than {timeout:g} s and was stopped (its processes killed)",
    "memory": "the code used more than {memory_mb} MB of memory and was stopped",
    "processes": "the code started more than {processes} processes and was stopped",
    "network": "the code tried to use the network, which the sandbox does not have",
}


log = logging.getLogger("harness.sandbox")


class SandboxLimitError(Exception):
    """The code ran into a sandbox limit (its tool result is an error)."""


class CodeExecutionTool(Tool):
    """A tool ``{code: str}`` whose result is the code's stdout, stderr and exit status.

    ``sandbox`` names a backend of ``harness.sandbox`` (``auto``: the strongest that
    works here; the result says which). Running into a limit (time, memory, processes,
    network) is an error result with a plain message, never an exception in the run.
    """

    def __init__(
        self,
        sandbox: str = "auto",
        timeout: float = 10.0,
        name: str = "execute_code",
        description: str = "Run Python code and return its standard output, standard error "
        "and exit status. Print what you want to see.",
        *,
        memory_mb: int = 512,
        output_bytes: int = 64_000,
        processes: int = 32,
        site_packages: bool = False,
        disk_mb: int = 64,
    ) -> None:
        # Resolved now: an unknown or unusable backend fails where the tool is made.
        # A fallback of `auto` to the backend that isolates nothing is said, in the log
        # now and in every result, never silent.
        self.sandbox, self.fallback = (
            choose() if sandbox == "auto" else (get_sandbox(sandbox), None)
        )
        if self.fallback:
            log.warning(self.fallback)
        self.limits = Limits(
            timeout=timeout,
            memory_mb=memory_mb,
            output_bytes=output_bytes,
            processes=processes,
            site_packages=site_packages,
            disk_mb=disk_mb,
        )
        model = arguments_model(name, {"code": (str, ...)})
        super().__init__(self._execute, name=name, description=description, model=model)

    async def _execute(self, code: str) -> dict[str, Any]:
        execution = await self.sandbox.run(code, self.limits)
        if execution.limit is not None:
            text = _LIMIT_TEXT[execution.limit].format(**vars(self.limits))
            raise SandboxLimitError(f"{text} [sandbox: {execution.sandbox}]")
        result: dict[str, Any] = {
            "stdout": execution.stdout,
            "stderr": execution.stderr,
            "exit_status": execution.exit_status,
            "sandbox": execution.sandbox,
        }
        warnings = [self.fallback] if self.fallback else []
        if execution.warning:  # logged once by the backend; said in every result
            warnings.append(execution.warning)
        if execution.survivors:
            pids = ", ".join(map(str, execution.survivors))
            warnings.append(f"processes the code started could not be stopped: {pids}")
            log.warning("sandbox %s: %s", execution.sandbox, warnings[-1])
        if warnings:
            result["warning"] = "; ".join(warnings)
        return result
