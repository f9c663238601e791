"""A scenario's tools over MCP (docs/mcp.md): served to a target, and the checks of what
can be served. The server itself is ``harness.mcp``; this module reads the scenario."""

from __future__ import annotations

from harness.mcp.server import Redefinition, ServedTool, ToolServer
from harness.scenario.schema import Scenario
from harness.tools import Tool

__all__ = ["served_tools"]


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
