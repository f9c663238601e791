"""The openai SDK's Chat Completions tool loop (OpenAI's function-calling guide), traced with
openinference-instrumentation-openai: the instrumentor set up once at start, an AGENT span
around the run. A failed tool's message says so in its content (`{"error": ...}`): Chat
Completions has no failure flag."""

from __future__ import annotations

import json

import openai
from openinference.instrumentation.openai import OpenAIInstrumentor

from tests.agents_as_written.programs import toolkit, tracing

PROVIDER = tracing.tracer_provider()
OpenAIInstrumentor().instrument(tracer_provider=PROVIDER)
tracer = PROVIDER.get_tracer(__name__)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_city",
            "description": toolkit.LOOKUP_DOC,
            "parameters": toolkit.LOOKUP_SCHEMA,
        },
    },
    {
        "type": "function",
        "function": {
            "name": "save_note",
            "description": toolkit.NOTE_DOC,
            "parameters": toolkit.NOTE_SCHEMA,
        },
    },
]


def answer(question: str) -> str:
    client = openai.OpenAI()
    messages: list = [{"role": "user", "content": question}]
    with tracer.start_as_current_span(
        "atlas agent", attributes={"openinference.span.kind": "AGENT"}
    ):
        while True:
            completion = client.chat.completions.create(
                model="gpt-4o", messages=messages, tools=TOOLS
            )
            message = completion.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            messages.append(message)
            for call in message.tool_calls:
                text, failed = toolkit.run(call.function.name, json.loads(call.function.arguments))
                content = json.dumps({"error": text}) if failed else text
                messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
