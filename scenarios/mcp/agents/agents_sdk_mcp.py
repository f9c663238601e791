"""An agent on the OpenAI Agents SDK whose tools come from an MCP server
(``MCPServerStreamableHttp``), its model on Chat Completions."""

from __future__ import annotations

import os

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI


async def answer(question: str) -> str:
    """Run the agent to its answer; the MCP server is at ``HARNESS_MCP_URL``."""
    set_tracing_disabled(True)  # spans would go to OpenAI
    client = AsyncOpenAI(max_retries=0)  # OPENAI_BASE_URL / OPENAI_API_KEY: set by harness
    server = MCPServerStreamableHttp(
        params={"url": os.environ["HARNESS_MCP_URL"]}, name="tools", cache_tools_list=False
    )
    async with server:
        agent = Agent(
            name="assistant",
            instructions="Answer with the tools.",
            model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client),
            mcp_servers=[server],
        )
        result = await Runner.run(agent, question)
    return str(result.final_output)
