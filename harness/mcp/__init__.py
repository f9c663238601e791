"""MCP (docs/mcp.md): a scenario's tools served over MCP, and MCP servers' tools brought
into harness's own loop, recorded and replayed."""
