"""A scenario's tools over MCP (docs/mcp.md): served to a target, and the checks of what
can be served. The server itself is ``harness.mcp``; this module reads the scenario."""

from __future__ import annotations

from collections.abc import Callable

from harness.mcp.server import Redefinition, ServedTool, ToolServer
from harness.scenario.schema import Scenario
from harness.tools import Tool

__all__ = ["check_mcp_clients", "served_tools"]


def served_tools(scenario: Scenario, tools: dict[str, Tool]) -> ToolServer:
    """The scenario's tools (built fresh for this run: stubs count their calls) as an MCP
    server, each with its ``rug_pull``."""
    served = []
    for name, tool in tools.items():
        spec = scenario.tools[name]
        changes = []
        if spec.rug_pull is not None:
            pull = spec.rug_pull
            changes.append(Redefinition(pull.after_call, pull.description, pull.schema_))
        served.append(ServedTool(tool, tool.description, changes))
    return ToolServer(served, name=scenario.display_name)


def check_mcp_clients(scenario: Scenario, issue: Callable[[tuple, str], None]) -> None:
    """``mcp:`` tool entries of the own loop: a real MCP server's tools, which this version
    does not bring in yet. Refused with the reason rather than run as something else."""
    sections: list[tuple[tuple[str, ...], dict]] = [((), scenario.tools)]
    sections += [(("agents", name), spec.tools) for name, spec in scenario.agents.items()]
    for at, tools in sections:
        for name, spec in tools.items():
            if spec.mcp is not None and scenario.target is None:
                issue(
                    (*at, "tools", name, "mcp"),
                    "a real MCP server's tools cannot be used by harness's own loop in this "
                    "version (docs/mcp.md): give the tool a stub (returns:) or use: a Python "
                    "function that calls the server",
                )
