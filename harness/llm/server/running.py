"""Running the application on uvicorn: in the foreground (``serve``) or in a background
thread for tests (``running_server``, ``running_app``)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from harness.errors import HarnessError
from harness.llm.script import ScriptStep, parse_step
from harness.llm.server.app import create_app, find_state
from harness.llm.server.state import DEFAULT_MAX_DELAY

__all__ = [
    "DEFAULT_PORT",
    "listening_sockets",
    "running_app",
    "running_server",
    "serve",
    "serve_app",
]

DEFAULT_PORT = 8000


def _server(app: Any, host: str, port: int, log_level: str) -> Any:
    import uvicorn

    state = find_state(app)

    class Server(uvicorn.Server):
        """uvicorn, waking held responses at shutdown and exiting cleanly on a signal."""

        on_started: Any = None

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started and self.on_started is not None:
                self.on_started(self.bound_port())

        async def shutdown(self, sockets: Any = None) -> None:
            if state is not None:
                state.stopping()
            await super().shutdown(sockets)

        def handle_exit(self, sig: int, frame: Any) -> None:
            # uvicorn re-raises the signal after shutting down, which turns Ctrl-C
            # into a traceback and SIGTERM into a kill: a stop is a normal exit here.
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


def listening_sockets(host: str, port: int) -> list[socket.socket]:
    """Bound sockets for ``host:port``, one per address the host resolves to.

    Bound here rather than by uvicorn, which logs a failure and exits with status 3
    (an internal error in harness's terms): a busy port or an unknown host is bad input,
    an OSError for the caller to report. Options as asyncio's own ``create_server``.
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    bound: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            bound.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(bound) > 1:
                # Port 0: every address on the port the first one got.
                address = (address[0], bound[0].getsockname()[1], *address[2:])
            sock.bind(address)
    except OSError:
        for sock in bound:
            sock.close()
        raise
    return bound


def serve(
    steps: Sequence[ScriptStep],
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    max_delay: float = DEFAULT_MAX_DELAY,
    *,
    log_level: str = "info",
    on_started: Any = None,
    judge_steps: Sequence[ScriptStep] = (),
) -> None:
    """Serve ``steps`` until SIGTERM or Ctrl-C (blocking; call it from the main thread).

    HarnessError when ``host:port`` cannot be listened on (a busy port, an unknown host).
    """
    serve_app(
        create_app(steps, max_delay, judge_steps),
        host,
        port,
        log_level=log_level,
        on_started=on_started,
    )


def serve_app(
    app: Any,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    *,
    log_level: str = "info",
    on_started: Any = None,
) -> None:
    """Serve any ASGI ``app`` like ``serve`` (a cassette, say): blocking, until a signal."""
    try:
        sockets = listening_sockets(host, port)
    except OSError as exc:
        shown = f"[{host}]" if ":" in host else host
        raise HarnessError(f"cannot listen on {shown}:{port}: {exc.strerror or exc}") from None
    server = _server(app, host, port, log_level)
    server.on_started = on_started
    server.run(sockets=sockets)


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
def running_app(app: Any, *, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve an app made by ``create_app`` (possibly wrapped) like ``running_server``."""
    sockets = listening_sockets(host, 0)
    server = _server(app, host, 0, "warning")
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": sockets}, name="harness-serve", daemon=True
    )
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("harness serve did not start (see the log above)")
            thread.join(0.01)
        yield f"http://{host}:{server.bound_port()}/v1"
    finally:
        server.should_exit = True
        thread.join(15)
