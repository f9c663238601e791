"""Framework agents, each written the way its docs show, with a common bug planted, and
the same agent with it fixed:

- pydantic-ai: its OpenAI model given a client made with ``max_retries=0`` (the docs'
  custom-client example): a 429 ends the run.
- the OpenAI Agents SDK: ``Runner.run`` unguarded, as in its quickstart: a call of a tool
  the agent does not have raises ``ModelBehaviorError`` out of the agent.
- LangGraph: ``ChatOpenAI(max_retries=0)`` in the model node of the tool-calling loop its
  docs build: a 5xx ends the graph.

The fixed agents keep the SDK's default retries and answer in words when the framework
raises its documented errors.
"""

from __future__ import annotations

from typing import Any

from explore_agents import tools

INSTRUCTIONS = "Answer with the tools."


# -- pydantic-ai -----------------------------------------------------------------------------


def _pydantic_agent(client: Any | None) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(openai_client=client) if client is not None else OpenAIProvider()
    model = OpenAIChatModel("gpt-4o-mini", provider=provider)
    return Agent(model, tools=[tools.get_weather, tools.get_time], instructions=INSTRUCTIONS)


async def pydantic_ai_no_retries(question: str) -> str:
    """pydantic-ai with an OpenAI client that never retries."""
    from openai import AsyncOpenAI

    result = await _pydantic_agent(AsyncOpenAI(max_retries=0)).run(question)
    return result.output


async def pydantic_ai_fixed(question: str) -> str:
    """pydantic-ai with the provider's own client (the SDK's retries), its model errors
    answered in words."""
    from pydantic_ai.exceptions import ModelHTTPError, UnexpectedModelBehavior

    try:
        result = await _pydantic_agent(None).run(question)
    except (ModelHTTPError, UnexpectedModelBehavior) as exc:
        return f"The model is unavailable ({type(exc).__name__})."
    return result.output


# -- the OpenAI Agents SDK ---------------------------------------------------------------------


def _agents_sdk_agent() -> Any:
    from agents import Agent, OpenAIChatCompletionsModel, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=AsyncOpenAI())
    return Agent(
        name="weather",
        instructions=INSTRUCTIONS,
        model=model,
        tools=[function_tool(tools.get_weather), function_tool(tools.get_time)],
    )


async def agents_sdk_unguarded(question: str) -> str:
    """``Runner.run`` as the quickstart calls it."""
    from agents import Runner

    result = await Runner.run(_agents_sdk_agent(), question)
    return str(result.final_output)


async def agents_sdk_fixed(question: str) -> str:
    """``Runner.run`` with the SDK's documented exceptions answered in words."""
    from agents import Runner
    from agents.exceptions import AgentsException
    from openai import APIError

    try:
        result = await Runner.run(_agents_sdk_agent(), question)
    except (AgentsException, APIError) as exc:
        return f"The agent could not finish ({type(exc).__name__})."
    return str(result.final_output)


# -- LangGraph -------------------------------------------------------------------------------


def _graph(max_retries: int) -> Any:
    from langchain_core.messages import SystemMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    graph_tools = [tool(tools.get_weather), tool(tools.get_time)]
    model = ChatOpenAI(model="gpt-4o-mini", max_retries=max_retries).bind_tools(graph_tools)

    async def call_model(state: MessagesState) -> dict[str, Any]:
        return {
            "messages": [await model.ainvoke([SystemMessage(INSTRUCTIONS), *state["messages"]])]
        }

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(graph_tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()


async def langgraph_no_retries(question: str) -> str:
    """The graph's model made with max_retries=0."""
    state = await _graph(0).ainvoke({"messages": [("user", question)]})
    return str(state["messages"][-1].content)


async def langgraph_fixed(question: str) -> str:
    """The graph's model with the SDK's retries, a model that stays down answered in words."""
    from openai import APIError

    try:
        state = await _graph(2).ainvoke({"messages": [("user", question)]})
    except APIError as exc:
        return f"The model is unavailable ({type(exc).__name__})."
    return str(state["messages"][-1].content)
