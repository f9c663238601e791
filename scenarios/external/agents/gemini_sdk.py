"""Agents written on the raw ``google-genai`` SDK: a loop of ``generate_content`` requests
that runs the functions the model calls until it answers in text. Sync and streamed.

The client is built inside the call with the SDK's defaults, so it reaches whatever
``GOOGLE_GEMINI_BASE_URL`` says (harness sets it, and ``GEMINI_API_KEY``, while the agent
runs). It is kept in a variable for the whole loop: a client nobody holds is closed by
the garbage collector in the middle of its request.
"""

from __future__ import annotations

from google import genai
from google.genai import types

from scenarios.external.agents.tools import FUNCTIONS, SCHEMAS, gemini_model

MAX_ROUNDS = 10

TOOLS = [
    types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name=schema["function"]["name"],
                description=schema["function"]["description"],
                parameters_json_schema=schema["function"]["parameters"],
            )
            for schema in SCHEMAS
        ]
    )
]
# The agent runs the functions itself (the SDK would otherwise call Python functions
# given as tools on its own).
CONFIG = types.GenerateContentConfig(
    tools=TOOLS,
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)


def _responses(calls: list[types.FunctionCall]) -> types.Content:
    """A user turn answering every call of the model's turn, by name and id."""
    parts = []
    for call in calls:
        fn = FUNCTIONS.get(call.name or "")
        try:
            result = {"result": fn(**(call.args or {}))} if fn else {"error": "no such tool"}
        except TypeError as exc:
            result = {"error": str(exc)}
        response = types.FunctionResponse(id=call.id, name=call.name, response=result)
        parts.append(types.Part(function_response=response))
    return types.Content(role="user", parts=parts)


def answer(question: str) -> str:
    """The sync agent."""
    client = genai.Client()
    contents = [types.Content(role="user", parts=[types.Part(text=question)])]
    for _ in range(MAX_ROUNDS):
        reply = client.models.generate_content(
            model=gemini_model(), contents=contents, config=CONFIG
        )
        turn = reply.candidates[0].content
        contents.append(turn)
        if not reply.function_calls:
            return reply.text or ""
        contents.append(_responses(reply.function_calls))
    raise RuntimeError(f"no answer after {MAX_ROUNDS} rounds")


def answer_streaming(question: str) -> str:
    """The streaming agent: the model turn is put together from the stream's chunks."""
    client = genai.Client()
    contents = [types.Content(role="user", parts=[types.Part(text=question)])]
    for _ in range(MAX_ROUNDS):
        text: list[str] = []
        calls: list[types.Part] = []
        stream = client.models.generate_content_stream(
            model=gemini_model(), contents=contents, config=CONFIG
        )
        for chunk in stream:
            text.append(chunk.text or "")
            content = chunk.candidates[0].content if chunk.candidates else None
            if content is not None:
                # The call parts as they came: a thinking model's thought_signature is
                # on them, and Gemini 3 refuses a call sent back without it.
                calls += [part for part in content.parts or [] if part.function_call]
        parts = [types.Part(text="".join(text))] if "".join(text) else []
        contents.append(types.Content(role="model", parts=parts + calls))
        if not calls:
            return "".join(text)
        contents.append(_responses([p.function_call for p in calls]))
    raise RuntimeError(f"no answer after {MAX_ROUNDS} rounds")


def answer_with_retries(question: str) -> str:
    """The sync agent with google-genai's own retries on 429 and 503 (it has none by
    default), waiting a hundredth of a second between attempts."""
    retries = types.HttpRetryOptions(
        attempts=3, initial_delay=0.01, max_delay=0.01, http_status_codes=[429, 503]
    )
    client = genai.Client(http_options=types.HttpOptions(retry_options=retries))
    contents = [types.Content(role="user", parts=[types.Part(text=question)])]
    for _ in range(MAX_ROUNDS):
        reply = client.models.generate_content(
            model=gemini_model(), contents=contents, config=CONFIG
        )
        contents.append(reply.candidates[0].content)
        if not reply.function_calls:
            return reply.text or ""
        contents.append(_responses(reply.function_calls))
    raise RuntimeError(f"no answer after {MAX_ROUNDS} rounds")
