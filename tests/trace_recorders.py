"""Record a real agent run's trace with a real instrumentation, as a production run's is.

``python trace_recorders.py KIND OUT`` runs an agent against ``harness serve`` (the model
answers from STEPS) and writes what the instrumentation traced to OUT as OTLP JSON, one
``ExportTraceServiceRequest`` per export on its own line, as a collector's file exporter
writes it. KIND: ``openai-v2`` (opentelemetry-instrumentation-openai-v2 around a plain
OpenAI SDK tool loop), ``openai-v2-no-content`` (the same, contents not captured: its
default), ``openinference`` (openinference-instrumentation-openai around the same loop),
``pydantic-ai`` (a pydantic-ai agent with its own OpenTelemetry instrumentation).

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
    if instrumentor is not None:
        instrumentor.instrument(tracer_provider=provider)
    with running_server(STEPS) as url:
        answer = _pydantic_ai(url, provider) if kind == "pydantic-ai" else _openai_loop(url)
    provider.shutdown()
    return answer


if __name__ == "__main__":
    print(record(sys.argv[1], sys.argv[2]))
