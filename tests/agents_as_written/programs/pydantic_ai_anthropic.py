"""pydantic-ai on Anthropic, as its docs show: an `Agent` with `@agent.tool_plain` tools, a
failed lookup raised as `ModelRetry` (the model is told and may try again), `run_sync`."""

from __future__ import annotations

from pydantic_ai import Agent, ModelRetry

from tests.agents_as_written.programs import toolkit

agent = Agent(
    "anthropic:claude-sonnet-4-5",
    instructions="You look cities up in the atlas and keep notes for the user.",
)


@agent.tool_plain
def lookup_city(city: str) -> str:
    """Look up a city's country and population.

    Args:
        city: The city's name
    """
    try:
        return toolkit.lookup_city(city)
    except LookupError as exc:
        raise ModelRetry(str(exc)) from exc


@agent.tool_plain
def save_note(text: str) -> str:
    """Save a short note to the user's notes file.

    Args:
        text: The note
    """
    return toolkit.save_note(text)


def answer(question: str) -> str:
    return agent.run_sync(question).output
