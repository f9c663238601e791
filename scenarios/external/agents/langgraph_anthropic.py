"""The LangGraph agent of ``langgraph_agent`` on langchain-anthropic's ChatAnthropic (the
Messages API) instead of ChatOpenAI: a model node with the tools bound and a ToolNode,
looping until the model answers without calls.

The Anthropic client is built inside the call, from ``ANTHROPIC_BASE_URL`` /
``ANTHROPIC_API_KEY`` (set by harness while the agent runs).
"""

from __future__ import annotations

from typing import Any

from langchain_anthropic import ChatAnthropic
from langchain_core.messages import SystemMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from scenarios.external.agents.langgraph_agent import TOOLS


def _graph() -> Any:
    model = ChatAnthropic(model_name="claude-sonnet-4-6", max_retries=0).bind_tools(TOOLS)

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
    return str(state["messages"][-1].text)
