"""An agent on pydantic-ai's Google model (the Gemini API through google-genai), with
the example tools.

The provider is built inside the call from ``GOOGLE_GEMINI_BASE_URL`` /
``GOOGLE_API_KEY`` (set by harness while the agent runs).
"""

from __future__ import annotations

from pydantic_ai import Agent, UsageLimits
from pydantic_ai.models.google import GoogleModel
from pydantic_ai.providers.google import GoogleProvider

from scenarios.external.agents.tools import gemini_model, get_time, get_weather


async def answer(question: str) -> str:
    """Run the agent to its answer."""
    model = GoogleModel(gemini_model(), provider=GoogleProvider())
    agent = Agent(model, tools=[get_weather, get_time], instructions="Answer with the tools.")
    result = await agent.run(question)
    return result.output


async def answer_within_two_requests(question: str) -> str:
    """The same agent under pydantic-ai's own limit: at most two model requests."""
    model = GoogleModel(gemini_model(), provider=GoogleProvider())
    agent = Agent(model, tools=[get_weather, get_time], instructions="Answer with the tools.")
    result = await agent.run(question, usage_limits=UsageLimits(request_limit=2))
    return result.output
