"""google-genai chats (`client.chats.create`): the chat keeps the history; each reply's
function calls are answered with `chat.send_message([Part.from_function_response(...)])`."""

from __future__ import annotations

from google import genai

from tests.agents_as_written.programs import toolkit
from tests.agents_as_written.programs.genai_manual import CONFIG, MODEL, function_responses


def answer(question: str) -> str:
    client = genai.Client()
    chat = client.chats.create(model=toolkit.model(MODEL), config=CONFIG)
    response = chat.send_message(question)
    while response.function_calls:
        response = chat.send_message(function_responses(response.function_calls).parts)
    return response.text or ""
