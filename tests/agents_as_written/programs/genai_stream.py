"""google-genai, streamed: `generate_content_stream`, text printed as it comes; the model's
turn is rebuilt from the chunks' parts as they came (so the call parts keep their thought
signatures), then its calls answered as in the manual loop."""

from __future__ import annotations

from google import genai
from google.genai import types

from tests.agents_as_written.programs import toolkit
from tests.agents_as_written.programs.genai_manual import CONFIG, MODEL, function_responses


def answer(question: str) -> str:
    client = genai.Client()
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text=question)])]
    while True:
        parts: list[types.Part] = []
        text = []
        for chunk in client.models.generate_content_stream(
            model=toolkit.model(MODEL), contents=contents, config=CONFIG
        ):
            if chunk.text:
                print(chunk.text, end="", flush=True)
                text.append(chunk.text)
            if (
                chunk.candidates
                and chunk.candidates[0].content
                and chunk.candidates[0].content.parts
            ):
                parts.extend(chunk.candidates[0].content.parts)
        calls = [p.function_call for p in parts if p.function_call]
        if not calls:
            return "".join(text)
        contents.append(types.Content(role="model", parts=parts))
        contents.append(function_responses(calls))
