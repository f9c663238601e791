"""An agent on Google's Agent Development Kit (ADK), with the example tools.

ADK's Gemini model builds its google-genai client from the environment:
``GOOGLE_GEMINI_BASE_URL`` and ``GOOGLE_API_KEY`` (set by harness while the agent runs).
"""

from __future__ import annotations

from google.adk.agents import LlmAgent
from google.adk.runners import InMemoryRunner
from google.genai import types

from scenarios.external.agents.tools import gemini_model, get_time, get_weather


async def answer(question: str) -> str:
    """Run the agent to its final answer."""
    agent = LlmAgent(
        name="weather",
        model=gemini_model(),
        instruction="Answer with the tools.",
        tools=[get_weather, get_time],
    )
    runner = InMemoryRunner(agent=agent, app_name="harness-example")
    session = await runner.session_service.create_session(app_name="harness-example", user_id="u")
    message = types.Content(role="user", parts=[types.Part(text=question)])
    final = ""
    async for event in runner.run_async(user_id="u", session_id=session.id, new_message=message):
        if event.is_final_response() and event.content and event.content.parts:
            final = "".join(part.text or "" for part in event.content.parts)
    await runner.close()
    return final
