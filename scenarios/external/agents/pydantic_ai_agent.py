"""An agent on pydantic-ai (its OpenAI Chat Completions model), with the example tools.

The OpenAI client is built inside the call, from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY``
(set by harness while the agent runs).
"""

from __future__ import annotations

from pydantic_ai import Agent, UsageLimits
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from scenarios.external.agents.tools import get_time, get_weather


def _agent() -> Agent:
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider())
    return Agent(model, tools=[get_weather, get_time], instructions="Answer with the tools.")


async def answer(question: str) -> str:
    """Run the agent to its answer."""
    result = await _agent().run(question)
    return result.output


async def answer_within_two_requests(question: str) -> str:
    """The same agent under pydantic-ai's own limit: at most two model requests."""
    result = await _agent().run(question, usage_limits=UsageLimits(request_limit=2))
    return result.output
