"""Record a real agent run's trace with a real instrumentation, as a production run's is.

``python trace_recorders.py KIND OUT`` runs an agent against ``harness serve`` (the model
answers from STEPS) and writes what the instrumentation traced to OUT as OTLP JSON, one
``ExportTraceServiceRequest`` per export on its own line, as a collector's file exporter
writes it. KIND: ``openai-v2`` (opentelemetry-instrumentation-openai-v2 around a plain
OpenAI SDK tool loop), ``openai-v2-no-content`` (the same, contents not captured: its
default), ``openinference`` (openinference-instrumentation-openai around the same loop),
``pydantic-ai`` (a pydantic-ai agent with its own OpenTelemetry instrumentation),
``openinference-anthropic`` (openinference-instrumentation-anthropic around the Anthropic
SDK's tool loop), ``openinference-google-genai`` (openinference-instrumentation-google-genai
around google-genai's manual function calling).

A process of its own per recording: instrumentations patch the SDK for the process, and
the GenAI semantic-convention opt-in is read once per process.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any

STEPS: list[dict[str, Any]] = [
    {
        "tool_calls": [
            {"id": "call_p", "name": "get_weather", "arguments": {"city": "Paris"}},
            {"id": "call_l", "name": "get_weather", "arguments": {"city": "London"}},
        ]
    },
    {"tool_calls": [{"id": "call_t", "name": "get_time", "arguments": {"city": "Paris"}}]},
    {"content": "Paris: 20C at noon; London: 14C."},
]
WEATHER = {"Paris": "20C", "London": "14C"}
SYSTEM = "You answer weather questions briefly."
QUESTION = "Weather in Paris and London, and the time in Paris?"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "The time in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
]


def get_weather(city: str) -> str:
    """The weather in a city."""
    return WEATHER[city]


def get_time(city: str) -> str:
    """The time in a city."""
    return f"12:00 in {city}"


class FileExporter:
    """A span exporter writing each batch as one line of OTLP JSON (a collector's file
    exporter's format)."""

    def __init__(self, path: str) -> None:
        self.path = path

    def export(self, spans: Sequence[Any]) -> Any:
        from google.protobuf import json_format
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk.trace.export import SpanExportResult

        line = json.dumps(json_format.MessageToDict(encode_spans(spans)))
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(line + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _openai_loop(url: str) -> str:
    import openai

    client = openai.OpenAI(base_url=url, api_key="sk-test")
    tools = {"get_weather": get_weather, "get_time": get_time}
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
    ]
    while True:
        reply = (
            client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
            .choices[0]
            .message
        )
        messages.append(reply.model_dump(exclude_none=True))
        if not reply.tool_calls:
            return reply.content or ""
        for call in reply.tool_calls:
            result = tools[call.function.name](**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def _anthropic_loop(url: str) -> str:
    """The Anthropic SDK's tool loop, as its docs show it (``tool_use`` blocks answered by
    ``tool_result`` blocks until the model answers in text)."""
    import anthropic

    client = anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="sk-ant-test")
    tools = [
        {
            "name": t["function"]["name"],
            "description": t["function"]["description"],
            "input_schema": t["function"]["parameters"],
        }
        for t in TOOLS
    ]
    functions = {"get_weather": get_weather, "get_time": get_time}
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    while True:
        reply = client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=1024,
            system=SYSTEM,
            messages=messages,
            tools=tools,  # type: ignore[arg-type]
        )
        messages.append({"role": "assistant", "content": reply.content})
        if reply.stop_reason != "tool_use":
            return "".join(b.text for b in reply.content if b.type == "text")
        results = [
            {
                "type": "tool_result",
                "tool_use_id": block.id,
                "content": functions[block.name](**block.input),
            }
            for block in reply.content
            if block.type == "tool_use"
        ]
        messages.append({"role": "user", "content": results})


def _genai_loop(url: str, ids: bool = True) -> str:
    """google-genai's manual function calling, as its docs show it (the model turn sent
    back, a ``function_response`` part per call: with the call's id, or without one, by
    name only, as Google's function-calling page writes it)."""
    from google import genai
    from google.genai import types

    client = genai.Client(
        api_key="AIza-test", http_options=types.HttpOptions(base_url=url.removesuffix("/v1"))
    )
    declarations = [
        types.FunctionDeclaration(
            name=t["function"]["name"],
            description=t["function"]["description"],
            parameters_json_schema=t["function"]["parameters"],
        )
        for t in TOOLS
    ]
    config = types.GenerateContentConfig(
        system_instruction=SYSTEM,
        tools=[types.Tool(function_declarations=declarations)],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    functions = {"get_weather": get_weather, "get_time": get_time}
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=QUESTION)])]
    while True:
        reply = client.models.generate_content(
            model="gemini-2.5-flash", contents=contents, config=config
        )
        contents.append(reply.candidates[0].content)  # type: ignore[index]
        if not reply.function_calls:
            return reply.text or ""
        parts = [
            types.Part(
                function_response=types.FunctionResponse(
                    id=call.id if ids else None,
                    name=call.name,
                    response={"result": functions[call.name or ""](**(call.args or {}))},
                )
            )
            for call in reply.function_calls
        ]
        contents.append(types.Content(role="user", parts=parts))


def _pydantic_ai(url: str, provider: Any) -> str:
    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=url, api_key="x"))
    agent = Agent(model, system_prompt=SYSTEM)
    agent.instrument = InstrumentationSettings(tracer_provider=provider)
    agent.tool_plain(get_weather)
    agent.tool_plain(get_time)
    return agent.run_sync(QUESTION).output


def record(kind: str, out: str) -> str:
    """Run the agent under the instrumentation; the agent's answer."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from harness.serve import running_server

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(FileExporter(out)))  # type: ignore[arg-type]
    instrumentor: Any = None
    if kind.startswith("openai-v2"):
        if kind == "openai-v2":
            os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "span_only"
            os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = "gen_ai_latest_experimental"
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        instrumentor = OpenAIInstrumentor()
    elif kind == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor as Inference

        instrumentor = Inference()
    elif kind == "openinference-anthropic":
        from openinference.instrumentation.anthropic import AnthropicInstrumentor

        instrumentor = AnthropicInstrumentor()
    elif kind.startswith("openinference-google-genai"):
        from openinference.instrumentation.google_genai import GoogleGenAIInstrumentor

        instrumentor = GoogleGenAIInstrumentor()
    if instrumentor is not None:
        instrumentor.instrument(tracer_provider=provider)
    agents = {
        "pydantic-ai": lambda url: _pydantic_ai(url, provider),
        "openinference-anthropic": _anthropic_loop,
        "openinference-google-genai": _genai_loop,
        "openinference-google-genai-by-name": lambda url: _genai_loop(url, ids=False),
    }
    with running_server(STEPS) as url:
        answer = agents.get(kind, _openai_loop)(url)
    provider.shutdown()
    return answer


if __name__ == "__main__":
    print(record(sys.argv[1], sys.argv[2]))
