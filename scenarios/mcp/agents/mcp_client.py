"""An agent written on the official ``mcp`` SDK's own client (``mcp.Client``) and the raw
openai SDK: it lists the server's tools, offers them to the model, and calls the ones the
model asks for, until the model answers.

harness serves the model at ``OPENAI_BASE_URL`` and the scenario's tools at
``HARNESS_MCP_URL``. A ``list_changed`` notification makes it list the tools again.
"""

from __future__ import annotations

import json
import os
from typing import Any

from mcp import Client
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


async def answer(question: str) -> str:
    """Run the agent to its answer (at most eight model calls)."""
    openai = AsyncOpenAI(max_retries=0)
    messages: list[Any] = [
        {"role": "system", "content": "Answer with the tools."},
        {"role": "user", "content": question},
    ]
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
                result = await mcp.call_tool(
                    call.function.name, json.loads(call.function.arguments or "{}")
                )
                text = _text(result)
                content = f"ERROR: {text}" if result.is_error else text
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    return "gave up after eight model calls"
