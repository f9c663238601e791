"""An agent on pydantic-ai's AnthropicModel (the Messages API), with the example tools.

The Anthropic client is built inside the call, from ``ANTHROPIC_BASE_URL`` /
``ANTHROPIC_API_KEY`` (set by harness while the agent runs). pydantic-ai streams its
Anthropic requests even in a plain ``run``, so this exercises the streamed
``/v1/messages``.
"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.providers.anthropic import AnthropicProvider

from scenarios.external.agents.tools import get_time, get_weather


def _agent() -> Agent:
    model = AnthropicModel("claude-sonnet-4-6", provider=AnthropicProvider())
    return Agent(model, tools=[get_weather, get_time], instructions="Answer with the tools.")


async def answer(question: str) -> str:
    """Run the agent to its answer."""
    result = await _agent().run(question)
    return result.output
