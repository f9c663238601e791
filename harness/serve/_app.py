"""The Starlette application: routes, the script state, and the error handlers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route

from harness._modelwires import counted_paths, wires
from harness.llm._config import ConversationRule
from harness.llm._script import ScriptStep
from harness.serve._answer import count_endpoint, endpoint
from harness.serve._conversations import ConversationLimits
from harness.serve._http import ApiError, http_error
from harness.serve._models import model, models
from harness.serve._state import DEFAULT_MAX_DELAY, ScriptState

__all__ = ["create_app", "find_state"]


async def reset(request: Any) -> Any:
    """POST /v1/reset: forget the attempt counts (204)."""
    request.app.state.script.reset()
    return Response(status_code=204)


def create_app(
    steps: Sequence[ScriptStep],
    max_delay: float = DEFAULT_MAX_DELAY,
    judge_steps: Sequence[ScriptStep] = (),
    conversations: Sequence[ConversationRule] = (),
    draws: str = "",
    limits: ConversationLimits | None = None,
) -> Any:
    """The Starlette application answering from ``steps`` (and a judge's requests from
    ``judge_steps``, the conversations ``conversations`` match from their scripts; the
    stochastic steps drawn with ``draws``, harness.llm._script.draw_material), keeping
    conversations within ``limits``."""
    app = Starlette(
        routes=[
            *(
                Route(path, endpoint(wire), methods=["POST"])
                for wire in wires()
                for path in wire.paths
            ),
            # Where a wire counts a request's input tokens (Anthropic's count_tokens).
            *(
                Route(path, count_endpoint(wire), methods=["POST"])
                for path, wire in counted_paths()
            ),
            *(
                route
                for root in ("/v1", "/v1beta")
                for route in (
                    Route(f"{root}/models", models, methods=["GET"]),
                    Route(f"{root}/models/{{model_id:path}}", model, methods=["GET"]),
                )
            ),
            Route("/v1/reset", reset, methods=["POST"]),
        ],
        # Starlette looks a status up before a class: an ApiError with status 404 or
        # 405 (an error step's) reaches the same handler, which answers it as raised.
        exception_handlers={404: http_error, 405: http_error, ApiError: http_error},
    )
    app.state.script = ScriptState(steps, max_delay, judge_steps, conversations, draws, limits)
    return app


def find_state(app: Any) -> ScriptState | None:
    """The ScriptState of an app made by create_app, through middleware wrappers."""
    for _ in range(20):
        state = getattr(getattr(app, "state", None), "script", None)
        if isinstance(state, ScriptState):
            return state
        app = getattr(app, "app", None)
        if app is None:
            break
    return None
