"""``remote:`` tools in scenario files: an A2A agent at a URL, or another scenario file
that harness serves as an A2A agent on 127.0.0.1 (``remote: {scenario: FILE}``).

A served scenario starts when its tool is first called and is served for as long as
the process runs (harness.scenario._serving keeps one server per file): every parent
run talks to it in a context of its own, where the served scenario's script starts
from its first step, so sharing the server changes no result.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from harness._errors import HarnessError
from harness.a2a._remote import RemoteAgentTool
from harness.scenario._params import SpecError
from harness.scenario._schema import Scenario
from harness.scenario._tool_schema import ToolSpec

__all__ = ["Serve", "remote_tool"]

# Serves a scenario file as an A2A agent; returns its base URL.
Serve = Callable[[Path], str]


def _not_served(path: Path) -> str:
    raise HarnessError(
        f"{path}: this scenario's tools were built to be checked, not run; run the scenario "
        "with harness run (or harness.run_scenario) to serve it"
    )


def remote_tool(
    name: str, spec: ToolSpec, scenario: Scenario, serve: Serve | None
) -> RemoteAgentTool:
    """The RemoteAgentTool of one ``tools:`` entry with ``remote:``; no I/O here."""
    remote = spec.remote_spec
    assert remote is not None
    if remote.url is not None:
        return RemoteAgentTool(
            remote.url, name=name, description=spec.description, timeout=remote.timeout
        )
    assert remote.scenario is not None
    path = scenario.resolve(remote.scenario).resolve()
    if not path.is_file():
        raise SpecError(
            ("remote", "scenario"),
            f"no scenario file {remote.scenario!r} (looked for {path}); the path is relative "
            "to this scenario's folder",
        )
    start = serve or _not_served
    return RemoteAgentTool(
        lambda: start(path), name=name, description=spec.description, timeout=remote.timeout
    )
