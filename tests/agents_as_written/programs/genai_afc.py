"""google-genai with automatic function calling, as Google's docs show it first: plain
Python functions as `tools`; the SDK calls them, and a function that raises is sent back as
`{"error": ...}`."""

from __future__ import annotations

from google import genai
from google.genai import types

from tests.agents_as_written.programs import toolkit
from tests.agents_as_written.programs.genai_manual import MODEL


def lookup_city(city: str) -> str:
    """Look up a city's country and population.

    Args:
        city: The city's name
    """
    return toolkit.lookup_city(city)


def save_note(text: str) -> str:
    """Save a short note to the user's notes file.

    Args:
        text: The note
    """
    return toolkit.save_note(text)


def answer(question: str) -> str:
    client = genai.Client()
    response = client.models.generate_content(
        model=toolkit.model(MODEL),
        contents=question,
        config=types.GenerateContentConfig(tools=[lookup_city, save_note]),
    )
    return response.text or ""
