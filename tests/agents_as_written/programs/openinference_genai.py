"""google-genai's manual function-calling loop (as genai_manual), traced with
openinference-instrumentation-google-genai: the instrumentor set up once at start, an AGENT
span around the run."""

from __future__ import annotations

from google import genai
from google.genai import types
from openinference.instrumentation.google_genai import GoogleGenAIInstrumentor

from tests.agents_as_written.programs import toolkit, tracing
from tests.agents_as_written.programs.genai_manual import CONFIG, MODEL, function_responses

PROVIDER = tracing.tracer_provider()
GoogleGenAIInstrumentor().instrument(tracer_provider=PROVIDER)
tracer = PROVIDER.get_tracer(__name__)


def answer(question: str) -> str:
    client = genai.Client()
    contents: list[types.Content] = [types.Content(role="user", parts=[types.Part(text=question)])]
    with tracer.start_as_current_span(
        "atlas agent", attributes={"openinference.span.kind": "AGENT"}
    ):
        while True:
            response = client.models.generate_content(
                model=toolkit.model(MODEL), contents=contents, config=CONFIG
            )
            if not response.function_calls:
                return response.text or ""
            contents.append(response.candidates[0].content)
            contents.append(function_responses(response.function_calls))
