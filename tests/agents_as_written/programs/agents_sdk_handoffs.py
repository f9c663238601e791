"""The OpenAI Agents SDK with handoffs, as its docs' triage pattern: a triage agent hands
the conversation to a researcher, who has the tools and answers."""

from __future__ import annotations

from agents import Agent, Runner

from tests.agents_as_written.programs.agents_sdk_tools import lookup_city, save_note

researcher = Agent(
    name="Researcher",
    handoff_description="Looks cities up in the atlas and keeps notes.",
    instructions="You look cities up in the atlas, save a note of the findings and answer.",
    tools=[lookup_city, save_note],
)

triage = Agent(
    name="Triage",
    instructions="Hand questions about cities to the researcher.",
    handoffs=[researcher],
)


def answer(question: str) -> str:
    result = Runner.run_sync(triage, question)
    return str(result.final_output)
