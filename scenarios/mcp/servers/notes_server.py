"""A small real MCP server (stdio) on the ``mcp`` SDK's ``MCPServer``: a notebook whose
notes live as long as the process. ``scenarios/mcp/own-loop-notes.scenario.yaml`` brings
its tools into harness's own loop, recorded and replayed (docs/mcp.md).

Run by hand: ``python scenarios/mcp/servers/notes_server.py`` (it speaks MCP on stdio).
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

app = MCPServer("notes")
_notes: list[str] = []


@app.tool()
def add_note(text: str) -> str:
    """Keep a note; returns its number."""
    if not text.strip():
        # A ToolError is answered as an isError result (mcp 2.3 leaves other exceptions
        # of a stdio server's tool unanswered).
        raise ToolError("a note needs some text")
    _notes.append(text)
    return f"note {len(_notes)} kept"


@app.tool()
def list_notes() -> str:
    """Every note kept, one per line."""
    return "\n".join(f"{i}. {note}" for i, note in enumerate(_notes, 1)) or "no notes"


if __name__ == "__main__":
    app.run()
