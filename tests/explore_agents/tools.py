"""The agents' own tools, and their Chat Completions schemas."""

from __future__ import annotations

WEATHER = {"Paris": "18C, cloudy", "Rome": "24C, sunny"}


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{WEATHER.get(city, '20C, clear')} in {city}"


def get_time(city: str) -> str:
    """Local time in a city."""
    return f"14:00 in {city}"


TOOLS = {"get_weather": get_weather, "get_time": get_time}
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
            },
        },
    }
    for name, fn in TOOLS.items()
]
