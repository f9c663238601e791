"""The ``process`` backend: the same interpreter, isolated mode, limits, a throw-away folder.

Not a security boundary: the code runs as the same user, so it can read and write what
that user can, reach the network, and (unless harness is root) read harness's own
environment and memory. It gets no secrets through its environment, an empty working
folder that is removed afterwards, limits on CPU time, memory, file size and processes,
and, under root, no capabilities (so it cannot trace or read harness, or mount). ``auto``
takes it only where no stronger backend works, and says so. docs/sandbox.md has the table.
"""

from __future__ import annotations

import sys

from harness.sandbox.base import Execution, Limits, run_in_new_folder

__all__ = ["ProcessSandbox"]


class ProcessSandbox:
    """Runs code with ``python -I`` (and ``-S``) in a subprocess with resource limits."""

    name = "process"

    def unavailable(self) -> str | None:
        """Always available where harness runs."""
        return None

    async def run(self, code: str, limits: Limits) -> Execution:
        """Run ``code`` in a fresh temporary folder, removed afterwards."""
        return await run_in_new_folder(
            code, limits, self.name, lambda _: [sys.executable], confine=True
        )
