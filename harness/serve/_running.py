"""Running the application on uvicorn: in the foreground (``serve``) or in a background
thread for tests (``running_server``, ``running_app``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from harness._asgi import ServerLimits, serve_forever, serving_in_thread
from harness.llm._config import ConversationRule
from harness.llm._script import ScriptStep, parse_step
from harness.serve._app import create_app, find_state
from harness.serve._bounds import BodyLimits, BoundedApp
from harness.serve._conversations import ConversationLimits
from harness.serve._state import DEFAULT_MAX_DELAY

__all__ = [
    "DEFAULT_PORT",
    "running_app",
    "running_server",
    "serve",
    "serve_app",
]

DEFAULT_PORT = 8000


def serve(
    steps: Sequence[ScriptStep],
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    max_delay: float = DEFAULT_MAX_DELAY,
    *,
    log_level: str = "info",
    on_started: Any = None,
    judge_steps: Sequence[ScriptStep] = (),
    conversations: Sequence[ConversationRule] = (),
    draws: str = "",
    bounds: BodyLimits | None = None,
    limits: ConversationLimits | None = None,
) -> None:
    """Serve ``steps`` (and ``conversations``, a scenario's ``llm.conversations``) until
    SIGTERM or Ctrl-C (blocking; call it from the main thread).

    HarnessError when ``host:port`` cannot be listened on (a busy port, an unknown host).
    """
    serve_app(
        create_app(steps, max_delay, judge_steps, conversations, draws, limits),
        host,
        port,
        log_level=log_level,
        on_started=on_started,
        bounds=bounds,
    )


def serve_app(
    app: Any,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    log_level: str = "info",
    on_started: Any = None,
    limits: ServerLimits | None = None,
    bounds: BodyLimits | None = None,
) -> None:
    """Serve any ASGI ``app`` like ``serve`` (a cassette, say): blocking, until a signal.
    Its requests are bounded by ``bounds`` (harness.serve._bounds)."""
    state = find_state(app)
    serve_forever(
        BoundedApp(app, bounds),
        host,
        port,
        log_level=log_level,
        on_started=on_started,
        limits=limits,
        # Held responses (error: timeout steps) wake up when the server stops.
        on_stopping=state.stopping if state is not None else None,
    )


@contextlib.contextmanager
def running_server(
    steps: Sequence[ScriptStep | dict[str, Any]],
    *,
    max_delay: float = DEFAULT_MAX_DELAY,
    host: str = "127.0.0.1",
    judge_steps: Sequence[ScriptStep | dict[str, Any]] = (),
) -> Iterator[str]:
    """Serve ``steps`` on a free port in a background thread; yield the base URL (``.../v1``)."""
    parsed = [parse_step(index, s) for index, s in enumerate(steps)]
    judged = [parse_step(index, s) for index, s in enumerate(judge_steps)]
    with running_app(create_app(parsed, max_delay, judged), host=host) as url:
        yield url


@contextlib.contextmanager
def running_app(
    app: Any,
    *,
    host: str = "127.0.0.1",
    limits: ServerLimits | None = None,
    bounds: BodyLimits | None = None,
) -> Iterator[str]:
    """Serve an app made by ``create_app`` (possibly wrapped) like ``running_server``,
    its requests bounded by ``bounds`` (harness.serve._bounds)."""
    state = find_state(app)
    stopping = state.stopping if state is not None else None
    with serving_in_thread(
        BoundedApp(app, bounds),
        host=host,
        name="harness serve",
        on_stopping=stopping,
        limits=limits,
    ) as url:
        yield f"{url}/v1"
