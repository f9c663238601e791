"""The example agents' own tools: plain functions, the same for every client."""

from __future__ import annotations

import json
import os

_WEATHER = {"Paris": "18C, cloudy", "Rome": "24C, sunny", "Oslo": "7C, rain"}


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{_WEATHER.get(city, '20C, clear')} in {city}"


def get_time(city: str) -> str:
    """Local time in a city."""
    return f"14:00 in {city}"


FUNCTIONS = {"get_weather": get_weather, "get_time": get_time}

# The Chat Completions form of the tools, for the raw-SDK agents.
SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": fn.__doc__,
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }
    for name, fn in FUNCTIONS.items()
]


def run_tool(name: str, arguments: str) -> str:
    """Run one tool call as the model sent it (an unknown tool or bad JSON is an error text)."""
    fn = FUNCTIONS.get(name)
    if fn is None:
        return f"error: no tool {name!r}"
    try:
        return fn(**json.loads(arguments or "{}"))
    except (ValueError, TypeError) as exc:
        return f"error: {exc}"


def gemini_model() -> str:
    """The Gemini model the Gemini agents ask for: ``HARNESS_EXAMPLE_GEMINI_MODEL``, else
    gemini-2.5-flash (a Gemini 3 model checks that its calls' thought signatures come
    back). Not ``GEMINI_...``: harness keeps the user's Gemini settings from a target."""
    return os.environ.get("HARNESS_EXAMPLE_GEMINI_MODEL", "gemini-2.5-flash")
