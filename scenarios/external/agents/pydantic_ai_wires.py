"""One pydantic-ai agent on each of its model classes, one per model API (docs/wires.md,
Conformance): the same tools and instructions over Chat Completions (OpenAIChatModel), the
Responses API (OpenAIResponsesModel), Anthropic Messages (AnthropicModel) and Gemini
(GoogleModel). Served one script, each gives the same run.

Every provider is built inside the call from the variables harness sets while the agent
runs (``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL`` and their
dummy keys). ``answer`` picks the model from ``HARNESS_WIRE`` (what a wire matrix sets),
Chat Completions when it is unset.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from pydantic_ai import Agent

from scenarios.external.agents.tools import get_time, get_weather


def _openai_chat() -> Any:
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider())


def _openai_responses() -> Any:
    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    return OpenAIResponsesModel("gpt-4o-mini", provider=OpenAIProvider())


def _anthropic() -> Any:
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    return AnthropicModel("claude-sonnet-4-6", provider=AnthropicProvider())


def _gemini() -> Any:
    from pydantic_ai.models.google import GoogleModel
    from pydantic_ai.providers.google import GoogleProvider

    return GoogleModel("gemini-2.5-flash", provider=GoogleProvider())


MODELS: dict[str, Callable[[], Any]] = {
    "openai-chat": _openai_chat,
    "openai-responses": _openai_responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
}


async def _run(wire: str, question: str) -> str:
    agent = Agent(
        MODELS[wire](), tools=[get_weather, get_time], instructions="Answer with the tools."
    )
    result = await agent.run(question)
    return result.output


async def answer(question: str) -> str:
    """The agent on the wire ``HARNESS_WIRE`` names (Chat Completions by default)."""
    return await _run(os.environ.get("HARNESS_WIRE") or "openai-chat", question)


async def openai_chat(question: str) -> str:
    """The agent on OpenAIChatModel."""
    return await _run("openai-chat", question)


async def openai_responses(question: str) -> str:
    """The agent on OpenAIResponsesModel."""
    return await _run("openai-responses", question)


async def anthropic(question: str) -> str:
    """The agent on AnthropicModel."""
    return await _run("anthropic", question)


async def gemini(question: str) -> str:
    """The agent on GoogleModel."""
    return await _run("gemini", question)
