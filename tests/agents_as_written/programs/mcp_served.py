"""An agent whose tools come from an MCP server, written as the MCP docs' "build a client"
tutorial writes one (the `mcp` SDK's client and the Anthropic SDK): list the server's tools,
offer them to Claude, call the ones it asks for with `call_tool`, and send each result back
as a `tool_result` (`is_error` when the server said `isError`).

The server is whatever `HARNESS_MCP_URL` names: harness serves the scenario's tools there
(tests/agents_as_written/mcp-served.scenario.yaml: the tool kit's functions, `use:`)."""

from __future__ import annotations

import os

import anthropic
from mcp import Client
from mcp.types import TextContent

from tests.agents_as_written.programs import toolkit


async def answer(question: str) -> str:
    claude = anthropic.AsyncAnthropic()
    async with Client(os.environ["HARNESS_MCP_URL"], read_timeout_seconds=30) as session:
        listed = await session.list_tools()
        tools = [
            {"name": t.name, "description": t.description or "", "input_schema": t.input_schema}
            for t in listed.tools
        ]
        messages: list[dict] = [{"role": "user", "content": question}]
        while True:
            response = await claude.messages.create(
                model=toolkit.model("claude-sonnet-4-5"),
                max_tokens=1024,
                messages=messages,
                tools=tools,
            )
            if response.stop_reason != "tool_use":
                return "".join(b.text for b in response.content if b.type == "text")
            messages.append({"role": "assistant", "content": response.content})
            results = []
            for block in response.content:
                if block.type != "tool_use":
                    continue
                result = await session.call_tool(block.name, block.input)
                text = "\n".join(c.text for c in result.content if isinstance(c, TextContent))
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": block.id,
                        "content": text,
                        "is_error": result.is_error,
                    }
                )
            messages.append({"role": "user", "content": results})
