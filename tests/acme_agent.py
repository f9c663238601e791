"""A small agent written against the made-up Acme Complete API (tests/wire_plugin_example.py)
with httpx alone, as its docs would show: it reads ``ACME_BASE_URL`` and ``ACME_API_KEY``,
sends the turns, runs the functions the model asks for and answers with the model's text.
"""

from __future__ import annotations

import os

import httpx

FUNCTIONS = [
    {
        "fn": "get_weather",
        "about": "Current weather for a city.",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
]


def get_weather(city: str) -> str:
    if city == "Atlantis":
        raise ValueError(f"no weather station in {city}")
    return f"18C, cloudy in {city}"


def answer(question: str) -> str:
    """Ask the model until it answers in text."""
    base = os.environ.get("ACME_BASE_URL", "https://api.acme.invalid")
    headers = {"x-acme-key": os.environ["ACME_API_KEY"]}
    turns = [{"speaker": "user", "say": question}]
    with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
        for _ in range(6):
            response = client.post(
                "/acme/v1/complete",
                json={"model": "acme-1", "turns": turns, "functions": FUNCTIONS},
            )
            response.raise_for_status()
            reply = response.json()["reply"]
            turns.append({"speaker": "agent", "say": reply["say"], "actions": reply["actions"]})
            if not reply["actions"]:
                return reply["say"] or ""
            for action in reply["actions"]:
                try:
                    said = get_weather(**action["input"])
                except ValueError as exc:
                    said = f"{type(exc).__name__}: {exc}"
                turns.append({"speaker": "outcome", "ref": action["ref"], "say": said})
    raise RuntimeError("no answer after 6 rounds")
