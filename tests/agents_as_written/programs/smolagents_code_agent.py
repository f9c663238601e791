"""smolagents' `CodeAgent` (its guided tour's agent): the model writes Python that calls the
tools (`@tool` functions); an exception in that code is shown to the model as the step's
error. On `OpenAIServerModel` (any OpenAI-compatible server: base URL and key given, here
from the environment harness sets)."""

from __future__ import annotations

import os

from smolagents import CodeAgent, OpenAIServerModel, tool

from tests.agents_as_written.programs import toolkit


@tool
def lookup_city(city: str) -> str:
    """Look up a city's country and population.

    Args:
        city: The city's name
    """
    return toolkit.lookup_city(city)


@tool
def save_note(text: str) -> str:
    """Save a short note to the user's notes file.

    Args:
        text: The note
    """
    return toolkit.save_note(text)


def answer(question: str) -> str:
    model = OpenAIServerModel(
        model_id="gpt-4o",
        api_base=os.environ["OPENAI_BASE_URL"],
        api_key=os.environ["OPENAI_API_KEY"],
    )
    agent = CodeAgent(tools=[lookup_city, save_note], model=model, max_steps=6)
    return str(agent.run(question))
