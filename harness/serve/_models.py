"""``GET .../models`` and ``GET .../models/{id}``: the model's metadata, as each API gives
it, for clients that ask before they call
(docs/recording.md#harness-serve-a-scenarios-model-over-http).

LlamaIndex's ``GoogleGenAI`` reads the model's token limits at construction
(``client.models.get``), some agents list the models to check theirs exists: any model a
client names is served, with the limits of a current model of its vendor. OpenAI,
Anthropic and Gemini (google-genai 3.x) share the ``/v1/models`` paths; the request's
headers say which API asks (Anthropic's SDK always sends ``anthropic-version``, google-genai
``x-goog-api-client`` or Gemini's key header: ``harness._modelwires.vendor_of``), and
``/v1beta/models`` is Gemini's alone; each vendor's wire writes its answers
(``render_model``, ``render_models``).
"""

from __future__ import annotations

from typing import Any

from harness._modelwires import vendor_for, vendor_of, wires
from harness.serve._http import json_response
from harness.wires import OPENAI_CHAT
from harness.wires._anthropic_serving import LIMITS as ANTHROPIC_LIMITS
from harness.wires._gemini_serving import LIMITS as GEMINI_LIMITS
from harness.wires._neutral import MODEL_ID

__all__ = ["ANTHROPIC_LIMITS", "GEMINI_LIMITS", "model", "models"]


def _wire(request: Any) -> Any:
    """The wire that describes models as the API whose client sent ``request`` does: the
    first of its vendor's (as the recording proxy tells it: harness._modelwires.vendor_of)
    that has ``render_model``, else Chat Completions."""
    vendor = vendor_of(request.url.path, request.headers)
    return next(
        (w for w in wires() if vendor_for(w) is vendor and hasattr(w, "render_model")),
        OPENAI_CHAT,
    )


async def models(request: Any) -> Any:
    """GET /v1/models, /v1beta/models: one model, ``harness-script``, in the asking API's
    list."""
    return json_response(_wire(request).render_models(MODEL_ID))


async def model(request: Any) -> Any:
    """GET /v1/models/{id}, /v1beta/models/{id}: any model a client names (serve answers
    as whatever model it is named)."""
    return json_response(_wire(request).render_model(request.path_params["model_id"]))
