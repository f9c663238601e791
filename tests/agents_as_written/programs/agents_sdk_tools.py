"""The OpenAI Agents SDK with an agent as a tool (`Agent.as_tool`), as its docs' "agents as
tools" pattern: an orchestrator calls a researcher agent for each city and saves a note
itself. Tools are `@function_tool` functions; one that raises is answered with the SDK's
default failure text (its `failure_error_function`)."""

from __future__ import annotations

from agents import Agent, Runner, function_tool

from tests.agents_as_written.programs import toolkit


@function_tool
def lookup_city(city: str) -> str:
    """Look up a city's country and population.

    Args:
        city: The city's name
    """
    return toolkit.lookup_city(city)


@function_tool
def save_note(text: str) -> str:
    """Save a short note to the user's notes file.

    Args:
        text: The note
    """
    return toolkit.save_note(text)


researcher = Agent(
    name="Researcher",
    instructions="You look cities up in the atlas and report what you found.",
    tools=[lookup_city],
)

orchestrator = Agent(
    name="Orchestrator",
    instructions=(
        "You answer questions about cities. Use research_city for each city, then save a"
        " note of the findings."
    ),
    tools=[
        researcher.as_tool(
            tool_name="research_city", tool_description="Research one city in the atlas."
        ),
        save_note,
    ],
)


def answer(question: str) -> str:
    result = Runner.run_sync(orchestrator, question)
    return str(result.final_output)
