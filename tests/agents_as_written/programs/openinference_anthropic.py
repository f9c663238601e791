"""The Anthropic SDK's tool-use loop (as anthropic_sync), traced with
openinference-instrumentation-anthropic: the instrumentor set up once at start, an AGENT
span around the run."""

from __future__ import annotations

import anthropic
from openinference.instrumentation.anthropic import AnthropicInstrumentor

from tests.agents_as_written.programs import toolkit, tracing
from tests.agents_as_written.programs.anthropic_sync import TOOLS, tool_results

PROVIDER = tracing.tracer_provider()
AnthropicInstrumentor().instrument(tracer_provider=PROVIDER)
tracer = PROVIDER.get_tracer(__name__)


def answer(question: str) -> str:
    client = anthropic.Anthropic()
    messages: list[dict] = [{"role": "user", "content": question}]
    with tracer.start_as_current_span(
        "atlas agent", attributes={"openinference.span.kind": "AGENT"}
    ):
        while True:
            response = client.messages.create(
                model=toolkit.model("claude-sonnet-4-5"),
                max_tokens=1024,
                tools=TOOLS,
                messages=messages,
            )
            if response.stop_reason != "tool_use":
                return "".join(b.text for b in response.content if b.type == "text")
            messages.append({"role": "assistant", "content": response.content})
            messages.append({"role": "user", "content": tool_results(response.content)})
