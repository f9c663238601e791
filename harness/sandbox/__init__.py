"""Sandboxes for code the model writes: one interface, backends by name.

``process`` (always), ``bubblewrap`` (``bwrap`` on PATH), ``docker`` (the Docker SDK
and an engine); ``auto`` picks the strongest that works on this machine.
"""

from __future__ import annotations

from collections.abc import Callable

from harness.sandbox.base import Execution, Limits, Sandbox, SandboxError
from harness.sandbox.bubblewrap import BubblewrapSandbox
from harness.sandbox.docker import DockerSandbox
from harness.sandbox.process import ProcessSandbox

__all__ = [
    "BACKENDS",
    "Execution",
    "Limits",
    "Sandbox",
    "SandboxError",
    "get_sandbox",
]

# Strongest first: the order `auto` tries them in.
BACKENDS: dict[str, Callable[[], Sandbox]] = {
    "docker": DockerSandbox,
    "bubblewrap": BubblewrapSandbox,
    "process": ProcessSandbox,
}
# One instance per backend and process: checking availability starts a probe.
_made: dict[str, Sandbox] = {}


def _instance(name: str) -> Sandbox:
    if name not in _made:
        _made[name] = BACKENDS[name]()
    return _made[name]


def get_sandbox(name: str = "auto") -> Sandbox:
    """The backend called ``name`` (or the strongest available for ``auto``).

    SandboxError when the name is unknown or the backend cannot run here, saying why.
    """
    if name == "auto":
        for candidate in BACKENDS:
            sandbox = _instance(candidate)
            if sandbox.unavailable() is None:
                return sandbox
        raise SandboxError("no sandbox backend works here")  # process always does
    if name not in BACKENDS:
        known = ", ".join(["auto", *BACKENDS])
        raise SandboxError(f"unknown sandbox {name!r}; use one of {known}")
    sandbox = _instance(name)
    reason = sandbox.unavailable()
    if reason is not None:
        raise SandboxError(f"sandbox {name!r} cannot run here: {reason}")
    return sandbox
