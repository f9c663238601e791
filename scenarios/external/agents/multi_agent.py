"""Agents that hold several conversations with the model at once: an Agents SDK
coordinator with two agents as tools (``Agent.as_tool``), and a LangGraph supervisor
with two workers (a StateGraph whose workers are subgraphs sharing its messages, as
LangGraph's supervisor pattern builds them). Each agent has its own instructions, which
the scenarios' ``llm.conversations`` match. Tracing is off: it would send spans to OpenAI.
"""

from __future__ import annotations

from typing import Any, Literal

from scenarios.external.agents import tools

RESEARCHER = "You research facts with the tools."
WRITER = "You write one short sentence from the facts given."
COORDINATOR = "You coordinate a researcher and a writer."


async def coordinate(question: str) -> str:
    """An Agents SDK coordinator calling a researcher and a writer as tools."""
    from agents import (
        Agent,
        OpenAIChatCompletionsModel,
        Runner,
        function_tool,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    model = OpenAIChatCompletionsModel(
        model="gpt-4o-mini", openai_client=AsyncOpenAI(max_retries=0)
    )
    researcher = Agent(
        name="researcher",
        instructions=RESEARCHER,
        model=model,
        tools=[function_tool(tools.get_weather)],
    )
    writer = Agent(name="writer", instructions=WRITER, model=model)
    coordinator = Agent(
        name="coordinator",
        instructions=COORDINATOR,
        model=model,
        tools=[
            researcher.as_tool(tool_name="research", tool_description="Finds facts."),
            writer.as_tool(tool_name="write", tool_description="Writes the answer."),
        ],
    )
    result = await Runner.run(coordinator, question)
    return str(result.final_output)


def _supervisor_graph() -> Any:
    from langchain_core.messages import SystemMessage, ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition
    from langgraph.types import Command

    def worker(instructions: str, worker_tools: list[Any]) -> Any:
        model = ChatOpenAI(model="gpt-4o-mini", max_retries=0)
        bound = model.bind_tools(worker_tools) if worker_tools else model

        async def call_model(state: MessagesState) -> dict[str, Any]:
            messages = [SystemMessage(instructions), *state["messages"]]
            return {"messages": [await bound.ainvoke(messages)]}

        graph = StateGraph(MessagesState)
        graph.add_node("model", call_model)
        graph.add_edge(START, "model")
        if worker_tools:
            graph.add_node("tools", ToolNode(worker_tools))
            graph.add_conditional_edges("model", tools_condition)
            graph.add_edge("tools", "model")
        return graph.compile()

    @tool
    def transfer_to_researcher() -> str:
        """Ask the researcher."""
        return "transferred"

    @tool
    def transfer_to_writer() -> str:
        """Ask the writer."""
        return "transferred"

    supervisor_model = ChatOpenAI(model="gpt-4o-mini", max_retries=0).bind_tools(
        [transfer_to_researcher, transfer_to_writer]
    )

    async def supervisor(
        state: MessagesState,
    ) -> Command[Literal["researcher", "writer", "__end__"]]:
        reply = await supervisor_model.ainvoke([SystemMessage(COORDINATOR), *state["messages"]])
        if not reply.tool_calls:
            return Command(goto=END, update={"messages": [reply]})
        call = reply.tool_calls[0]
        done = ToolMessage("transferred", tool_call_id=call["id"], name=call["name"])
        goto = call["name"].removeprefix("transfer_to_")
        return Command(goto=goto, update={"messages": [reply, done]})

    graph = StateGraph(MessagesState)
    graph.add_node("supervisor", supervisor)
    graph.add_node("researcher", worker(RESEARCHER, [tool(tools.get_weather)]))
    graph.add_node("writer", worker(WRITER, []))
    graph.add_edge(START, "supervisor")
    graph.add_edge("researcher", "supervisor")
    graph.add_edge("writer", "supervisor")
    return graph.compile()


async def supervise(question: str) -> str:
    """A LangGraph supervisor handing the question to a researcher, then a writer."""
    state = await _supervisor_graph().ainvoke({"messages": [("user", question)]})
    return str(state["messages"][-1].content)
