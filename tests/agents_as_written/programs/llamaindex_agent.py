"""LlamaIndex's `FunctionAgent` (its agents docs' starting point) on llama-index-llms-google-genai:
plain functions as tools, `await agent.run(user_msg=...)`. A tool that raises is reported to
the model as LlamaIndex's error output. (llama-index-llms-anthropic 0.12.3 fails with
anthropic 2.x before its first request: "TypeError: Cannot instantiate typing.Union".)"""

from __future__ import annotations

from llama_index.core.agent.workflow import FunctionAgent
from llama_index.llms.google_genai import GoogleGenAI

from tests.agents_as_written.programs import toolkit


def lookup_city(city: str) -> str:
    """Look up a city's country and population."""
    return toolkit.lookup_city(city)


def save_note(text: str) -> str:
    """Save a short note to the user's notes file."""
    return toolkit.save_note(text)


async def answer(question: str) -> str:
    agent = FunctionAgent(
        tools=[lookup_city, save_note],
        llm=GoogleGenAI(model="gemini-2.5-flash"),
        system_prompt="You look cities up in the atlas and keep notes for the user.",
    )
    response = await agent.run(user_msg=question)
    return str(response)
