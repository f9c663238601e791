"""Serving an A2A application on uvicorn: in the foreground (``harness agent-serve``)
or in a background thread on a free port (tests, and scenarios that serve a remote
agent from another scenario file)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from harness.errors import HarnessError
from harness.llm.server.running import listening_sockets

__all__ = ["running_app", "serve_app"]


def _server(app: Any, host: str, port: int, log_level: str) -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn that reports its port once started and stops cleanly on a signal."""

        on_started: Callable[[int], None] | None = None

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started and self.on_started is not None:
                self.on_started(self.bound_port())

        def handle_exit(self, sig: int, frame: Any) -> None:
            # uvicorn re-raises the signal after shutting down (a traceback for Ctrl-C):
            # a stop is a normal exit here.
            if self.should_exit:
                self.force_exit = True
            self.should_exit = True

        def bound_port(self) -> int:
            for server in self.servers:
                for sock in server.sockets:
                    return int(sock.getsockname()[1])
            return port

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        lifespan="off",
        timeout_graceful_shutdown=5,
        access_log=log_level == "info",
    )
    return Server(config)


def _sockets(host: str, port: int) -> list[Any]:
    try:
        return listening_sockets(host, port)
    except OSError as exc:
        shown = f"[{host}]" if ":" in host else host
        raise HarnessError(f"cannot listen on {shown}:{port}: {exc.strerror or exc}") from None


def serve_app(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    log_level: str = "info",
    on_started: Callable[[int], None] | None = None,
) -> None:
    """Serve ``app`` until SIGTERM or Ctrl-C (blocking); HarnessError when the address
    cannot be listened on."""
    sockets = _sockets(host, port)
    server = _server(app, host, port, log_level)
    server.on_started = on_started
    server.run(sockets=sockets)


@contextlib.contextmanager
def running_app(app: Any, *, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve ``app`` on a free port in a background thread; yield its base URL
    (``http://127.0.0.1:PORT``), and stop it on exit."""
    sockets = _sockets(host, 0)
    server = _server(app, host, 0, "warning")
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": sockets}, name="harness-a2a", daemon=True
    )
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise HarnessError("the A2A server did not start (see the log above)")
            thread.join(0.01)
        shown = f"[{host}]" if ":" in host else host
        yield f"http://{shown}:{server.bound_port()}"
    finally:
        server.should_exit = True
        thread.join(15)
