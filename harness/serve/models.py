"""``GET .../models`` and ``GET .../models/{id}``: the model's metadata, as each API gives
it, for clients that ask before they call
(docs/recording.md#harness-serve-a-scenarios-model-over-http).

LlamaIndex's ``GoogleGenAI`` reads the model's token limits at construction
(``client.models.get``), some agents list the models to check theirs exists: any model a
client names is served, with the limits of a current model of its vendor. OpenAI,
Anthropic and Gemini (google-genai 3.x) share the ``/v1/models`` paths; the request's
headers say which API asks (Anthropic's SDK always sends ``anthropic-version``, google-genai
``x-goog-api-client`` or Gemini's key header: ``harness.wires.vendor_of``), and
``/v1beta/models`` is Gemini's alone.
"""

from __future__ import annotations

from typing import Any

from harness.serve.http import json_response
from harness.wires import vendor_of
from harness.wires.neutral import MODEL_ID

__all__ = ["ANTHROPIC_LIMITS", "GEMINI_LIMITS", "model", "models"]

# What a served model says it takes: Gemini 2.5 Flash's limits, Claude Sonnet 4.5's.
GEMINI_LIMITS = {"inputTokenLimit": 1_048_576, "outputTokenLimit": 65_536}
ANTHROPIC_LIMITS = {"max_input_tokens": 200_000, "max_tokens": 64_000}


def _api(request: Any) -> str:
    """``openai``, ``anthropic`` or ``gemini``: the API whose client sent ``request`` (as
    the recording proxy tells it: harness.wires.vendor_of)."""
    return vendor_of(request.url.path, request.headers)


def _openai(name: str) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": 0, "owned_by": "harness"}


def _anthropic(name: str) -> dict[str, Any]:
    # Every field the SDK's ModelInfo requires, the release date unknown (the epoch, as
    # the API says it then).
    return {
        "type": "model",
        "id": name,
        "display_name": name,
        "created_at": "1970-01-01T00:00:00Z",
        "lifecycle": "active",
        **ANTHROPIC_LIMITS,
    }


def _gemini(name: str) -> dict[str, Any]:
    short = name.removeprefix("models/")
    return {
        "name": f"models/{short}",
        "version": "001",
        "displayName": short,
        "description": "served by harness from a scenario's script",
        **GEMINI_LIMITS,
        "supportedGenerationMethods": ["generateContent", "countTokens"],
        "temperature": 1.0,
        "maxTemperature": 2.0,
        "topP": 0.95,
        "topK": 64,
        "thinking": True,
    }


async def models(request: Any) -> Any:
    """GET /v1/models, /v1beta/models: one model, ``harness-script``, in the asking API's
    list."""
    api = _api(request)
    if api == "anthropic":
        info = _anthropic(MODEL_ID)
        return json_response(
            {"data": [info], "has_more": False, "first_id": MODEL_ID, "last_id": MODEL_ID}
        )
    if api == "gemini":
        return json_response({"models": [_gemini(MODEL_ID)]})
    return json_response({"object": "list", "data": [_openai(MODEL_ID)]})


async def model(request: Any) -> Any:
    """GET /v1/models/{id}, /v1beta/models/{id}: any model a client names (serve answers
    as whatever model it is named)."""
    name = request.path_params["model_id"]
    shape = {"anthropic": _anthropic, "gemini": _gemini}.get(_api(request), _openai)
    return json_response(shape(name))
