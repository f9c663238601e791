"""Microsoft Agent Framework, as its Python README's "agent with tools" shows: an `Agent` on
`OpenAIChatClient` (the Responses API; it reads OPENAI_API_KEY and OPENAI_BASE_URL) with
plain typed functions as tools. A function that raises is sent back to the model as the
framework's error result."""

from __future__ import annotations

from typing import Annotated

from agent_framework import Agent
from agent_framework.openai import OpenAIChatClient
from pydantic import Field

from tests.agents_as_written.programs import toolkit


def lookup_city(city: Annotated[str, Field(description="The city's name")]) -> str:
    """Look up a city's country and population."""
    return toolkit.lookup_city(city)


def save_note(text: Annotated[str, Field(description="The note")]) -> str:
    """Save a short note to the user's notes file."""
    return toolkit.save_note(text)


async def answer(question: str) -> str:
    agent = Agent(
        client=OpenAIChatClient(model="gpt-4o"),
        instructions="You look cities up in the atlas and keep notes for the user.",
        tools=[lookup_city, save_note],
    )
    result = await agent.run(question)
    return result.text
