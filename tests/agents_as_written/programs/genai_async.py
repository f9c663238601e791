"""google-genai, async: the same manual loop on `client.aio.models.generate_content`."""

from __future__ import annotations

from google import genai
from google.genai import types

from tests.agents_as_written.programs import toolkit
from tests.agents_as_written.programs.genai_manual import CONFIG, MODEL, function_responses


async def answer(question: str) -> str:
    client = genai.Client()
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text=question)])]
    while True:
        response = await client.aio.models.generate_content(
            model=toolkit.model(MODEL), contents=contents, config=CONFIG
        )
        if not response.function_calls:
            return response.text or ""
        contents.append(response.candidates[0].content)
        contents.append(function_responses(response.function_calls))
