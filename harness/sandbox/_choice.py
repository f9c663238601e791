"""Choosing a sandbox backend by name: ``get_sandbox(name)``, and ``auto`` (``choose``),
the strongest that works on this machine."""

from __future__ import annotations

from collections.abc import Callable

from harness.sandbox._base import Sandbox, SandboxError
from harness.sandbox._bubblewrap import BubblewrapSandbox
from harness.sandbox._docker import DockerSandbox
from harness.sandbox._process import ProcessSandbox

__all__ = ["BACKENDS", "choose", "get_sandbox"]

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
        return choose()[0]
    if name not in BACKENDS:
        known = ", ".join(["auto", *BACKENDS])
        raise SandboxError(f"unknown sandbox {name!r}; use one of {known}")
    sandbox = _instance(name)
    reason = sandbox.unavailable()
    if reason is not None:
        raise SandboxError(f"sandbox {name!r} cannot run here: {reason}")
    return sandbox


def choose() -> tuple[Sandbox, str | None]:
    """The strongest backend that works here; when that is ``process`` (which isolates
    nothing), also a note saying so and why each stronger one cannot run."""
    passed: list[str] = []
    for candidate in BACKENDS:
        sandbox = _instance(candidate)
        reason = sandbox.unavailable()
        if reason is None:
            if candidate != "process":
                return sandbox, None
            return sandbox, (
                "sandbox 'auto' fell back to 'process', which does not isolate the code "
                "(it can read and write what this user can, and reach the network): "
                + "; ".join(passed)
            )
        passed.append(f"{candidate}: {reason}")
    raise SandboxError("no sandbox backend works here")  # process always does
