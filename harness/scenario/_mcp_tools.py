"""A scenario's tools over MCP (docs/mcp.md): served to a target, real MCP servers' tools
brought into the own loop (recorded and replayed), and the checks of both. The server and
the client are ``harness.mcp``'s; this module reads the scenario."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness._errors import ToolServerError
from harness._project import project_relative
from harness._tools import Tool
from harness.hookspecs import hookimpl
from harness.llm._config import LLMContext
from harness.scenario._params import SpecError
from harness.scenario._schema import Scenario

if TYPE_CHECKING:  # imported where used: loading a scenario (validate, serve) needs none
    from harness.mcp._client import MCPServers
    from harness.mcp._server import ToolServer

__all__ = [
    "ServerDown",
    "add_mcp_tools",
    "entry_path",
    "mcp_entries",
    "mcp_servers",
    "recorded_stub_results",
    "recording_path",
    "served_tools",
    "server_key",
    "tool_names",
    "unknown_server_tools",
]


def served_tools(scenario: Scenario, tools: dict[str, Tool]) -> ToolServer:
    """The scenario's tools (built fresh for this run: stubs count their calls) as an MCP
    server, each with its ``rug_pull``."""
    from harness.mcp._server import Redefinition, ServedTool, ToolServer

    served = []
    for name, tool in tools.items():
        spec = scenario.tools[name]
        changes = []
        if spec.rug_pull is not None:
            pull = spec.rug_pull
            changes.append(Redefinition(pull.after_call, pull.description, pull.schema_))
        served.append(ServedTool(tool, tool.description, changes))
    return ToolServer(served, name=scenario.display_name)


def server_key(at: tuple[str | int, ...], name: str) -> str:
    """The name an ``mcp:`` entry's server goes by in the run (its recording, messages,
    ``final.error.server``): the entry's own, or ``AGENT/NAME`` for a sub-agent's
    (``at``: ``("agents", AGENT)``), so that two agents' entries of one name never mix."""
    return f"{at[1]}/{name}" if at[:1] == ("agents",) else name


def entry_path(key: str) -> str:
    """Where the entry a server goes by ``key`` is in the scenario file (the inverse of
    ``server_key``): ``tools.NAME`` or ``agents.AGENT.tools.NAME``."""
    agent, _, name = key.rpartition("/")
    return f"agents.{agent}.tools.{name}" if agent else f"tools.{name}"


def mcp_entries(scenario: Scenario) -> list[tuple[str, Any]]:
    """Every ``mcp:`` entry of the scenario's tools and its sub-agents': (key, mcp)."""
    found = [(name, spec.mcp) for name, spec in scenario.tools.items() if spec.mcp]
    for agent, sub in scenario.agents.items():
        at = ("agents", agent)
        found += [(server_key(at, name), spec.mcp) for name, spec in sub.tools.items() if spec.mcp]
    return found


def recording_path(scenario: Scenario) -> Path:
    """Where the scenario's MCP traffic is recorded: beside its cassette, ``.mcp.yaml``."""
    from harness.cassettes._paths import resolve_cassette_path

    context = LLMContext(
        scenario_file=scenario.path,
        project_root=scenario.root,
        variant=scenario.variant,
    )
    cassette = resolve_cassette_path(scenario.llm.with_context(context))
    return cassette.with_suffix(".mcp.yaml")


def mcp_servers(scenario: Scenario, context: LLMContext) -> MCPServers | None:
    """The run's MCP servers (the ``tools:`` entries with ``mcp:``, its own and its
    sub-agents'), None when it has none; ``context``: the run's, whose record mode and
    ``disable_recording`` (its model's) its servers' recording follows."""
    from harness.mcp._client import MCPServerConfig, MCPServers
    from harness.mcp._recording import MCPRecording

    configs = []
    for name, mcp in mcp_entries(scenario):
        command = list(mcp.command) if mcp.command else None
        if command and command[0] == "python":
            # The interpreter harness runs on, whatever PATH says (docs/mcp.md).
            command[0] = sys.executable
        configs.append(
            MCPServerConfig(
                name=name,
                command=command,
                url=mcp.url,
                only=mcp.only,
                env=dict(mcp.env),
                cwd=str(scenario.root),
                timeout=mcp.timeout,
            )
        )
    if not configs:
        return None
    path = recording_path(scenario)
    record_mode, disable_recording = context.record_mode, context.disable_recording
    fresh = record_mode in ("all", "rewrite") and not disable_recording
    recording = MCPRecording(path, project_relative(path, scenario.root), fresh=fresh)
    # A scripted model records nothing: with no recording of its servers either, a
    # replay-only run talks to them, as it runs its use: tools, and writes nothing.
    unrecorded = scenario.llm.provider == "scripted" and not recording.found
    live = disable_recording or (record_mode == "none" and unrecorded)
    return MCPServers(configs, recording, record_mode, live=live)


def recorded_stub_results(scenario: Scenario) -> dict[str, list[dict[str, Any]]]:
    """Per tool of the scenario's MCP servers, the per-call results its recording holds
    (``harness freeze``'s stubs); empty without ``mcp:`` entries or a recording."""
    names = [name for name, spec in scenario.tools.items() if spec.mcp is not None]
    if not names or scenario.path is None:
        return {}
    path = recording_path(scenario)
    if not path.is_file():
        return {}
    from harness.mcp._recording import MCPRecording

    recording = MCPRecording(path, project_relative(path, scenario.root))
    results: dict[str, list[dict[str, Any]]] = {}
    for name in names:
        results.update(recording.server(name).stub_results())
    return results


class ServerDown:
    """A per-run plugin for a run whose MCP server failed before it started: the run
    ends in ``tool_error`` at once, with the server's one line, as the loop ends any run
    whose tool server fails."""

    def __init__(self, error: ToolServerError) -> None:
        self.error = error

    @hookimpl
    def harness_agent_start(self, run: Any) -> None:
        raise self.error


def tool_names(tools: dict[str, Any]) -> set[str]:
    """The names the model can call: an ``mcp:`` entry's are its ``only:`` list."""
    names = {name for name, spec in tools.items() if spec.mcp is None}
    for spec in tools.values():
        names.update(spec.mcp.only or [] if spec.mcp is not None else [])
    return names


def unknown_server_tools(tools: dict[str, Any]) -> bool:
    """Whether an ``mcp:`` entry brings tools whose names only its server knows."""
    return any(spec.mcp is not None and spec.mcp.only is None for spec in tools.values())


def add_mcp_tools(
    tools: dict[str, Tool],
    name: str,
    mcp: MCPServers | None,
    at: tuple[str | int, ...],
    specs: dict[str, Any],
) -> None:
    """The listed tools of ``tools:`` entry ``name``'s MCP server (none when not running);
    ``at``: where the entry is (a sub-agent's, or the scenario's own)."""
    key = server_key(at, name)
    if mcp is None or key not in mcp.servers:
        return
    for tool in mcp.tools(key):
        if tool.name in tools or (tool.name in specs and tool.name != name):
            raise SpecError(
                ("mcp",),
                f"the server's tool {tool.name!r} has the name of another tool of this "
                "scenario; rename that one, or leave this one out with only: [...]",
            )
        tools[tool.name] = tool
