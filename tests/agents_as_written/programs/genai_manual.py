"""google-genai, the manual function-calling loop of Google's function-calling docs (sync):
tools declared as `FunctionDeclaration`s, automatic calling off, each `function_call` of the
reply answered by a `Part.from_function_response` (`{"result": ...}`, or `{"error": ...}` for
a failed call, as google-genai's types say), the model's content appended as it came (its
thought signatures kept)."""

from __future__ import annotations

from google import genai
from google.genai import types

from tests.agents_as_written.programs import toolkit

DECLARATIONS = [
    types.FunctionDeclaration(
        name="lookup_city",
        description=toolkit.LOOKUP_DOC,
        parameters_json_schema=toolkit.LOOKUP_SCHEMA,
    ),
    types.FunctionDeclaration(
        name="save_note", description=toolkit.NOTE_DOC, parameters_json_schema=toolkit.NOTE_SCHEMA
    ),
]
CONFIG = types.GenerateContentConfig(
    tools=[types.Tool(function_declarations=DECLARATIONS)],
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)
MODEL = "gemini-2.5-flash"


def function_responses(calls: list[types.FunctionCall]) -> types.Content:
    """The user turn answering one reply's calls, in their order."""
    parts = []
    for call in calls:
        text, failed = toolkit.run(call.name or "", dict(call.args or {}))
        response = {"error": text} if failed else {"result": text}
        parts.append(types.Part.from_function_response(name=call.name or "", response=response))
    return types.Content(role="user", parts=parts)


def answer(question: str) -> str:
    client = genai.Client()
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text=question)])]
    while True:
        response = client.models.generate_content(
            model=toolkit.model(MODEL), contents=contents, config=CONFIG
        )
        if not response.function_calls:
            return response.text or ""
        contents.append(response.candidates[0].content)
        contents.append(function_responses(response.function_calls))
