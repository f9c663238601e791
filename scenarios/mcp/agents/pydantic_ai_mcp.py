"""An agent on pydantic-ai whose tools come from an MCP server (``MCPToolset``).

harness serves the model at ``OPENAI_BASE_URL`` and the scenario's tools at ``mcp_url``.
"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


async def answer(question: str, mcp_url: str) -> str:
    """Run the agent to its answer, its tools those of the MCP server at ``mcp_url``."""
    toolset = MCPToolset(mcp_url)
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider())
    agent = Agent(model, toolsets=[toolset], instructions="Answer with the tools.")
    async with agent:
        result = await agent.run(question)
    return result.output
