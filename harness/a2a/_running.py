"""Serving an A2A application on uvicorn (harness._asgi): in the foreground (``harness
agent-serve``) or in a background thread on a free port (tests, and scenarios that serve a
remote agent from another scenario file)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from harness._asgi import ServerLimits, serve_forever, serving_in_thread

__all__ = ["running_app", "serve_app"]


def serve_app(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    log_level: str = "info",
    on_started: Callable[[int], None] | None = None,
    limits: ServerLimits | None = None,
) -> None:
    """Serve ``app`` until SIGTERM or Ctrl-C (blocking); HarnessError when the address
    cannot be listened on. ``limits``: what slow clients are allowed (harness._asgi)."""
    serve_forever(app, host, port, log_level=log_level, on_started=on_started, limits=limits)


@contextlib.contextmanager
def running_app(
    app: Any, *, host: str = "127.0.0.1", limits: ServerLimits | None = None
) -> Iterator[str]:
    """Serve ``app`` on a free port in a background thread; yield its base URL
    (``http://127.0.0.1:PORT``), and stop it on exit."""
    with serving_in_thread(app, host=host, name="the A2A server", limits=limits) as url:
        yield url
