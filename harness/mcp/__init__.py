"""MCP (docs/mcp.md): a scenario's tools served over MCP, and MCP servers' tools brought
into harness's own loop, recorded and replayed."""

import importlib
from typing import Any

__all__ = ["SessionLimits", "serving_http"]

# Imported on first use (name -> module): the MCP SDK loads only for a run that uses it.
_LAZY = {"SessionLimits": "harness.mcp._hosting", "serving_http": "harness.mcp._hosting"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'harness.mcp' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
