"""Harness's MCP server: a scenario's tools served through the official ``mcp`` SDK's
low-level ``Server`` (docs/mcp.md), every call observed at the boundary.

The low-level server, not ``MCPServer``: a stub's error text must reach the client as
given (``MCPServer`` prefixes "Error executing tool NAME"), and the faults need exact
control of the answer (a JSON-RPC error with the scenario's code, a dropped connection, a
call never answered, a definition that changes and a ``notifications/tools/list_changed``
sent on the call's own response stream, which every client receives in both protocol eras).

Each call runs the scenario's ``Tool`` as the own loop would (its arguments validated, on
a fresh simulated clock, its value turned into text by ``harness._toolplan.tool_outcome``)
and is reported to an observer as a ``ServedCall``.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness import simclock
from harness._errors import AbortRun
from harness._messages import ToolCall, clean_text
from harness._toolplan import tool_outcome
from harness._tools import Tool, ToolArgumentsError, ToolFault

__all__ = ["CallObserver", "Redefinition", "ServedCall", "ServedTool", "ToolServer"]

log = logging.getLogger("harness")

# JSON-RPC's "invalid params": what MCP answers for a tool it does not have.
INVALID_PARAMS = -32602


@dataclass(frozen=True)
class Redefinition:
    """A served tool's new definition after its ``after_call``-th call (a "rug pull")."""

    after_call: int
    description: str | None = None
    parameters: dict[str, Any] | None = None


@dataclass
class ServedTool:
    """One tool as served: the scenario's Tool, the description the client is shown, and
    the definitions it changes to."""

    tool: Tool
    description: str
    changes: list[Redefinition] = field(default_factory=list)
    calls: int = 0

    def definition(self) -> dict[str, Any]:
        """``{name, description, inputSchema}`` as ``tools/list`` sends it now."""
        return {
            "name": self.tool.name,
            "description": self.description,
            "inputSchema": self.tool.parameters,
        }


@dataclass(frozen=True)
class ServedCall:
    """One call as harness's server answered it."""

    tool: str
    arguments: dict[str, Any]
    content: str  # the text the client got (an isError text, a JSON-RPC error's message)
    result: Any  # what the tool-call record keeps
    status: str  # ok | error | invalid | unknown_tool
    is_error: bool
    seconds: float = 0.0  # simulated
    code: int | None = None  # a JSON-RPC error's code
    fault: str | None = None  # disconnect | hang
    abort: str | None = None  # a scenario bug (a template failed): the run ends in error


class CallObserver(Protocol):
    """What sees the served calls (``harness.external.Observation`` for a target)."""

    def mcp_call(self, call: ServedCall) -> None:
        """A call was answered (or, for a fault, given up on)."""

    def mcp_list_changed(self, tools: list[str]) -> None:
        """The tool list changed and the client was told."""


class _Silent:
    def mcp_call(self, call: ServedCall) -> None:
        log.info("mcp call %s %s -> %s", call.tool, call.arguments, call.status)

    def mcp_list_changed(self, tools: list[str]) -> None:
        log.info("mcp tool list changed: %s", ", ".join(tools))


class ToolServer:
    """The scenario's tools as an ``mcp`` low-level ``Server``; ``build()`` makes a fresh
    SDK server (a streamable HTTP app starts once)."""

    def __init__(
        self,
        tools: list[ServedTool],
        *,
        name: str = "harness",
        observer: CallObserver | None = None,
        on_disconnect: Callable[[], None] | None = None,
    ) -> None:
        self.tools = {served.tool.name: served for served in tools}
        self.name = name
        self.observer: CallObserver = observer or _Silent()
        # How the hosting transport drops the connection for a `disconnect` fault.
        self.on_disconnect = on_disconnect

    def build(self) -> Any:
        """A new ``mcp.server.Server`` answering ``tools/list`` and ``tools/call``."""
        from mcp.server import Server

        return Server(
            self.name,
            version="1",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        from mcp import types

        return types.ListToolsResult(
            tools=[types.Tool.model_validate(t.definition()) for t in self.tools.values()]
        )

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        from mcp import types
        from mcp.shared.exceptions import MCPError

        name, arguments = params.name, dict(params.arguments or {})
        served = self.tools.get(name)
        if served is None:
            known = ", ".join(sorted(self.tools)) or "none"
            message = f"Unknown tool {name!r}. Available tools: {known}"
            self.observer.mcp_call(
                ServedCall(name, arguments, message, message, "unknown_tool", True)
            )
            raise MCPError(code=INVALID_PARAMS, message=message)
        served.calls += 1
        call = await self._run(served.tool, arguments)
        if call.fault is not None:
            self.observer.mcp_call(call)
            await self._fault(call.fault)
        self.observer.mcp_call(call)
        if call.code is not None:
            raise MCPError(code=call.code, message=call.content)
        await self._maybe_change(served, ctx)
        text = types.TextContent(type="text", text=call.content)
        return types.CallToolResult(content=[text], is_error=call.is_error)

    async def _run(self, tool: Tool, arguments: dict[str, Any]) -> ServedCall:
        """The call run as the own loop runs one: validated, on a fresh simulated clock."""
        name = tool.name
        try:
            kwargs = tool.validate(ToolCall(id="mcp", name=name, arguments=arguments))
        except ToolArgumentsError as exc:
            text = f"Invalid arguments for {name}: {exc}"
            return ServedCall(name, arguments, text, text, "invalid", True)
        clock = simclock.start_call()
        try:
            if tool.is_async:
                value = await tool.fn(**kwargs)
            else:
                value = await asyncio.to_thread(tool.fn, **kwargs)
        except ToolFault as fault:
            text = clean_text(fault.message)
            if fault.kind in ("disconnect", "hang"):
                shown = f"{fault.kind}: {text}" if text else fault.kind
                return ServedCall(name, arguments, shown, shown, "error", True, fault=fault.kind)
            return ServedCall(name, arguments, text, text, "error", True, clock.seconds, fault.code)
        except AbortRun as exc:
            text = clean_text(str(exc))
            return ServedCall(name, arguments, text, text, "error", True, clock.seconds, abort=text)
        except Exception as exc:  # a tool failure: an isError result, as the model would see it
            text = clean_text(f"{type(exc).__name__}: {exc}")
            return ServedCall(name, arguments, text, text, "error", True, clock.seconds)
        outcome = tool_outcome(value, clock.seconds)
        is_error = outcome.status != "ok"
        return ServedCall(
            name,
            arguments,
            outcome.content,
            outcome.result,
            outcome.status,
            is_error,
            clock.seconds,
        )

    async def _fault(self, kind: str) -> None:
        """Never answer: ``disconnect`` drops the connection first, ``hang`` waits until the
        client gives up (it cancels the call) or the server stops."""
        if kind == "disconnect" and self.on_disconnect is not None:
            self.on_disconnect()
        await asyncio.Event().wait()

    async def _maybe_change(self, served: ServedTool, ctx: Any) -> None:
        """After the call that a redefinition names: change the tool, tell the client on
        this call's own response stream (every client receives that one)."""
        from mcp import types

        change = next((c for c in served.changes if c.after_call == served.calls), None)
        if change is None:
            return
        if change.description is not None:
            served.description = change.description
        if change.parameters is not None:
            served.tool.parameters = change.parameters
            served.tool._schema = None
        await ctx.session.send_notification(
            types.ToolListChangedNotification(), related_request_id=ctx.request_id
        )
        self.observer.mcp_list_changed(sorted(self.tools))


def definitions_text(server: ToolServer) -> str:
    """The served definitions as JSON (what ``tools/list`` answers), for people."""
    return json.dumps([t.definition() for t in server.tools.values()], indent=2)
