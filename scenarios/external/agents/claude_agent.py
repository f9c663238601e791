"""An agent on the Claude Agent SDK (``claude-agent-sdk``), which runs the Claude Code CLI
(bundled in the SDK's wheel) as a subprocess: the example tools as an in-process MCP server
(``create_sdk_mcp_server``), Claude Code's own tools turned off, the answer the text of the
run's last assistant message.

The CLI reads ``ANTHROPIC_BASE_URL`` and ``ANTHROPIC_API_KEY`` from the environment it
inherits, which harness sets while the agent runs. Claude Code's own state (sessions,
settings) goes to a temporary ``CLAUDE_CONFIG_DIR``, and its non-essential traffic
(telemetry, error reports, update checks) is turned off: the run talks to harness only.
"""

from __future__ import annotations

import asyncio
import tempfile
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    TextBlock,
    create_sdk_mcp_server,
    query,
    tool,
)

from scenarios.external.agents.tools import get_time, get_weather

MAX_TURNS = 10
CITY = {"city": str}


@tool("get_weather", "Current weather for a city.", CITY)
async def _weather(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": get_weather(args["city"])}]}


@tool("get_time", "Local time in a city.", CITY)
async def _time(args: dict[str, Any]) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": get_time(args["city"])}]}


# The model sees the tools as mcp__tools__get_weather and mcp__tools__get_time.
SERVER = create_sdk_mcp_server(name="tools", version="1.0.0", tools=[_weather, _time])
TOOLS = ["mcp__tools__get_weather", "mcp__tools__get_time"]


async def _answer(question: str, config_dir: str) -> str:
    options = ClaudeAgentOptions(
        tools=[],  # none of Claude Code's own tools (Bash, Read, ...)
        mcp_servers={"tools": SERVER},
        allowed_tools=TOOLS,
        max_turns=MAX_TURNS,
        setting_sources=[],
        env={
            "CLAUDE_CONFIG_DIR": config_dir,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
        },
    )
    text = ""
    async for message in query(prompt=question, options=options):
        if isinstance(message, AssistantMessage):
            said = "".join(b.text for b in message.content if isinstance(b, TextBlock))
            text = said or text
    return text


def answer(question: str) -> str:
    """Run the agent to its answer."""
    with tempfile.TemporaryDirectory(prefix="claude-config-") as config_dir:
        return asyncio.run(_answer(question, config_dir))
