"""An agent on LangGraph: a model node (langchain-openai's ChatOpenAI, tools bound) and
LangGraph's ToolNode, looping until the model answers without calls.

The graph is the tool-calling loop LangGraph's docs build by hand (its prebuilt
``create_react_agent`` moved to the ``langchain`` package in LangGraph 1.0). The OpenAI
client is built inside the call, from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` (set by
harness while the agent runs).
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from scenarios.external.agents import tools

TOOLS = [tool(tools.get_weather), tool(tools.get_time)]


def _graph() -> Any:
    model = ChatOpenAI(model="gpt-4o-mini", max_retries=0).bind_tools(TOOLS)

    async def call_model(state: MessagesState) -> dict[str, Any]:
        system = SystemMessage("Answer with the tools.")
        return {"messages": [await model.ainvoke([system, *state["messages"]])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", call_model)
    graph.add_node("tools", ToolNode(TOOLS))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()


async def answer(question: str) -> str:
    """Run the graph to its answer."""
    state = await _graph().ainvoke({"messages": [("user", question)]})
    return str(state["messages"][-1].content)


async def answer_within_three_steps(question: str) -> str:
    """The same graph under LangGraph's own limit: at most three steps (model, tools,
    model), then GraphRecursionError."""
    state = await _graph().ainvoke(
        {"messages": [("user", question)]}, config={"recursion_limit": 3}
    )
    return str(state["messages"][-1].content)
