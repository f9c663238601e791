"""A2A: serve a harness Agent to any A2A client, and call any A2A agent as a tool.

``create_app(agent_factory)`` is the server (FastAPI + a2a-sdk, one session per
``contextId``); ``RemoteAgentTool(url)`` the client side; ``running_app(app)`` serves
an app on a free port in a background thread. a2a-sdk and FastAPI are imported when
one of them is first used, so ``import harness`` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["RemoteAgentTool", "ServerLimits", "create_app", "running_app", "serve_app"]

# Imported on first use (name -> module).
_LAZY = {
    "create_app": "harness.a2a._app",
    "RemoteAgentTool": "harness.a2a._remote",
    "running_app": "harness.a2a._running",
    "serve_app": "harness.a2a._running",
    "ServerLimits": "harness._asgi",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'harness.a2a' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
