"""langgraph-supervisor, as its README shows: two `create_react_agent` workers (a researcher
with `lookup_city`, a note keeper with `save_note`) under `create_supervisor`, on
langchain-openai's `ChatOpenAI`. A failed lookup raises `ToolException`, which the tool
turns into an error `ToolMessage` (`handle_tool_error=True`)."""

from __future__ import annotations

from langchain_core.tools import StructuredTool, ToolException
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent
from langgraph_supervisor import create_supervisor

from tests.agents_as_written.programs import toolkit


def _lookup_city(city: str) -> str:
    """Look up a city's country and population."""
    try:
        return toolkit.lookup_city(city)
    except LookupError as exc:
        raise ToolException(str(exc)) from exc


def _save_note(text: str) -> str:
    """Save a short note to the user's notes file."""
    return toolkit.save_note(text)


lookup_city = StructuredTool.from_function(_lookup_city, name="lookup_city", handle_tool_error=True)
save_note = StructuredTool.from_function(_save_note, name="save_note")


def answer(question: str) -> str:
    model = ChatOpenAI(model="gpt-4o")
    researcher = create_react_agent(
        model=model,
        tools=[lookup_city],
        name="research_expert",
        prompt="You are a researcher. Look cities up in the atlas.",
    )
    note_keeper = create_react_agent(
        model=model,
        tools=[save_note],
        name="notes_expert",
        prompt="You keep the user's notes. Save the note you are asked to save.",
    )
    workflow = create_supervisor(
        [researcher, note_keeper],
        model=model,
        prompt=(
            "You are a team supervisor managing a research expert and a notes expert. For city"
            " facts use research_expert; to save notes use notes_expert."
        ),
    )
    app = workflow.compile()
    result = app.invoke({"messages": [{"role": "user", "content": question}]})
    return result["messages"][-1].content
