"""A small real MCP server (stdio) on the `mcp` SDK's `MCPServer`: the tool kit's tools, a
lookup that fails raising `ToolError` (an `isError` result, as the SDK's docs say to report
a tool's failure). tests/agents_as_written/mcp-own-loop.scenario.yaml brings it into
harness's own loop; `AAW_TOOL_LOG` (given by the scenario's `env:`) is where calls are logged.

Run by hand: `python tests/agents_as_written/servers/atlas_server.py` (MCP on stdio)."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the project root

from tests.agents_as_written.programs import toolkit

app = MCPServer("atlas")


@app.tool()
def lookup_city(city: str) -> str:
    """Look up a city's country and population."""
    try:
        return toolkit.lookup_city(city)
    except LookupError as exc:
        raise ToolError(str(exc)) from exc


@app.tool()
def save_note(text: str) -> str:
    """Save a short note to the user's notes file."""
    return toolkit.save_note(text)


if __name__ == "__main__":
    app.run()
