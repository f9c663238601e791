"""``@tool``: schema from type hints, description from the docstring, validation, the registry."""

from __future__ import annotations

import asyncio
from typing import Literal

import pytest

from harness import Agent, HarnessError, Tool, tool
from harness._messages import ToolCall
from harness._tools import ToolArgumentsError, toolset
from harness.llm import ScriptedLLM


@tool
def add(a: int, b: int = 2) -> int:
    """Add two integers.

    Longer explanation.
    """
    return a + b


@tool
async def get_weather(city: str, units: Literal["C", "F"] = "F", days: list[int] | None = None):
    """Current weather for a city."""
    return f"72{units} in {city}"


def test_tool_on_a_sync_function():
    assert isinstance(add, Tool)
    assert add.name == "add"
    assert add.is_async is False
    assert add(1, 2) == 3  # still callable as before
    assert add.openai_schema() == {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.\n\nLonger explanation.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "default": 2}},
                "required": ["a"],
                "additionalProperties": False,
            },
        },
    }


def test_tool_on_an_async_function():
    assert get_weather.is_async is True
    assert asyncio.run(get_weather("SF")) == "72F in SF"
    function = get_weather.openai_schema()["function"]
    assert function["description"] == "Current weather for a city."
    parameters = function["parameters"]
    assert parameters["required"] == ["city"]
    assert parameters["properties"]["city"] == {"type": "string"}
    assert parameters["properties"]["units"] == {
        "enum": ["C", "F"],
        "type": "string",
        "default": "F",
    }
    assert parameters["properties"]["days"]["anyOf"] == [
        {"type": "array", "items": {"type": "integer"}},
        {"type": "null"},
    ]


def test_tool_with_a_name_and_description():
    @tool(name="lookup_city", description="Find a city.")
    def find(query: str) -> str:
        """Ignored docstring."""
        return query

    assert find.name == "lookup_city"
    assert find.openai_schema()["function"]["description"] == "Find a city."


def test_tool_without_a_docstring_has_no_description():
    @tool
    def bare(x: int) -> int:
        return x

    assert "description" not in bare.openai_schema()["function"]


def test_args_and_kwargs_cannot_be_tool_parameters():
    def vague(*args, **kwargs):
        """Takes anything."""

    with pytest.raises(HarnessError, match=r"\*args and \*\*kwargs"):
        tool(vague)


def test_validate_gives_keyword_arguments_with_defaults_and_coercion():
    call = ToolCall(id="1", name="add", arguments={"a": "3"})

    assert add.validate(call) == {"a": 3, "b": 2}


def test_validate_collects_every_problem():
    call = ToolCall(id="1", name="add", arguments={"b": "x", "c": 1})

    with pytest.raises(ToolArgumentsError) as info:
        add.validate(call)
    assert sorted(e["type"] for e in info.value.errors) == [
        "extra_forbidden",
        "int_parsing",
        "missing",
    ]
    assert "https://errors.pydantic.dev" not in str(info.value)


def test_validate_reads_raw_json_arguments():
    assert add.validate(ToolCall(id="1", name="add", raw_arguments='{"a": 1}')) == {"a": 1, "b": 2}
    with pytest.raises(ToolArgumentsError, match="Invalid JSON"):
        add.validate(ToolCall(id="1", name="add", raw_arguments='{"a": '))


def test_a_parameter_named_like_a_model_attribute_works():
    @tool
    def search(json: str, schema: int = 0) -> str:
        """Parameters that would shadow pydantic's BaseModel attributes."""
        return f"{json}:{schema}"

    script = [{"tool_calls": [{"search": {"json": "q", "schema": 2}}]}, {"content": "ok"}]
    result = Agent(llm=script, tools=[search]).run("?")

    assert result.tool_calls[0].result == "q:2"


def test_duplicate_tool_names_are_a_clear_error():
    @tool(name="add")
    def other_add(x: int) -> int:
        """Another add."""
        return x

    with pytest.raises(HarnessError, match=r"duplicate tool name 'add'") as info:
        Agent(llm=[], tools=[add, other_add])
    assert "@tool(name=...)" in str(info.value)


def test_a_plain_function_is_a_tool_too():
    def shout(text: str) -> str:
        """Upper-case."""
        return text.upper()

    tools = toolset([shout])

    assert tools["shout"].openai_schema()["function"]["description"] == "Upper-case."


def test_something_not_callable_is_not_a_tool():
    with pytest.raises(HarnessError, match="not a tool"):
        toolset([42])


def test_the_model_is_sent_every_tool_schema():
    schemas = []

    class Recording(ScriptedLLM):
        async def complete(self, request):
            schemas.append(request.tool_schemas)
            return await super().complete(request)

    Agent(llm=Recording([{"content": "hi"}]), tools=[add, get_weather]).run("?")

    assert schemas == [[add.openai_schema(), get_weather.openai_schema()]]
