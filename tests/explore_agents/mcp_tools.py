"""An agent on the official ``mcp`` SDK's client and the raw openai SDK: it lists the
server's tools (harness serves the scenario's at HARNESS_MCP_URL), offers them to the
model, and calls the ones asked for, until the model answers.

Planted bug (``unguarded``): ``session.call_tool`` unguarded, as the SDK's client example
calls it: a JSON-RPC error answer raises ``MCPError`` out of the agent. ``answer`` sends
the error back to the model as the tool's result.
"""

from __future__ import annotations

import json
import os
from typing import Any

from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import TextContent
from openai import AsyncOpenAI


def _openai_tool(tool: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": tool.input_schema,
        },
    }


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


async def _call(mcp: Any, name: str, arguments: dict, guarded: bool) -> str:
    if not guarded:
        result = await mcp.call_tool(name, arguments)
    else:
        try:
            result = await mcp.call_tool(name, arguments)
        except MCPError as exc:
            return f"ERROR: the tool failed: {exc}"
    return f"ERROR: {_text(result)}" if result.is_error else _text(result)


async def _agent(question: str, guarded: bool) -> str:
    openai = AsyncOpenAI()
    messages: list[Any] = [{"role": "user", "content": question}]
    async with Client(os.environ["HARNESS_MCP_URL"], read_timeout_seconds=10) as mcp:
        for _ in range(8):
            tools = [_openai_tool(t) for t in (await mcp.list_tools()).tools]
            reply = await openai.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=tools
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                arguments = json.loads(call.function.arguments or "{}")
                content = await _call(mcp, call.function.name, arguments, guarded)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    return "gave up after eight model calls"


async def unguarded(question: str) -> str:
    """call_tool unguarded."""
    return await _agent(question, guarded=False)


async def answer(question: str) -> str:
    """call_tool's MCP errors sent back to the model."""
    return await _agent(question, guarded=True)
