"""Agents on the OpenAI Agents SDK: its Chat Completions model and its Responses model
(streamed), with the example tools. Tracing is off: it would send spans to OpenAI.
"""

from __future__ import annotations

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from scenarios.external.agents import tools

set_tracing_disabled(True)

get_weather = function_tool(tools.get_weather)
get_time = function_tool(tools.get_time)


def _agent(model: object) -> Agent:
    return Agent(
        name="weather",
        instructions="Answer with the tools.",
        model=model,
        tools=[get_weather, get_time],
    )


async def answer_chat(question: str) -> str:
    """Chat Completions model, not streamed."""
    client = AsyncOpenAI(max_retries=0)
    agent = _agent(OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client))
    result = await Runner.run(agent, question)
    return str(result.final_output)


async def answer_responses_streamed(question: str) -> str:
    """Responses model, streamed."""
    client = AsyncOpenAI(max_retries=0)
    agent = _agent(OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client))
    result = Runner.run_streamed(agent, question)
    async for _event in result.stream_events():
        pass
    return str(result.final_output)


async def answer_within_three_turns(question: str) -> str:
    """Chat Completions model under the SDK's own limit: at most three turns."""
    client = AsyncOpenAI(max_retries=0)
    agent = _agent(OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client))
    result = await Runner.run(agent, question, max_turns=3)
    return str(result.final_output)
