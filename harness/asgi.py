"""Running an ASGI application on uvicorn, for every server harness has (``harness serve``,
``harness agent-serve``): in the foreground until a signal, or in a background thread on
a free port (tests, and scenarios that serve another scenario)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

from harness.errors import HarnessError

__all__ = ["SERVER_THREAD", "listening_sockets", "serve_forever", "serving_in_thread"]

# The name every server thread's name starts with.
SERVER_THREAD = "harness-server"


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


def _server(
    app: Any, host: str, port: int, log_level: str, on_stopping: Callable[[], None] | None
) -> Any:
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn that reports its port once started, tells the app it is stopping (held
        responses wake up), and stops cleanly on a signal."""

        on_started: Callable[[int], None] | None = None

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started and self.on_started is not None:
                self.on_started(self.bound_port())

        async def shutdown(self, sockets: Any = None) -> None:
            if on_stopping is not None:
                on_stopping()
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


def serve_forever(
    app: Any,
    host: str,
    port: int,
    *,
    log_level: str = "info",
    on_started: Callable[[int], None] | None = None,
    on_stopping: Callable[[], None] | None = None,
) -> None:
    """Serve ``app`` until SIGTERM or Ctrl-C (blocking; call it from the main thread).

    HarnessError when ``host:port`` cannot be listened on (a busy port, an unknown host).
    """
    try:
        sockets = listening_sockets(host, port)
    except OSError as exc:
        shown = f"[{host}]" if ":" in host else host
        raise HarnessError(f"cannot listen on {shown}:{port}: {exc.strerror or exc}") from None
    server = _server(app, host, port, log_level, on_stopping)
    server.on_started = on_started
    server.run(sockets=sockets)


@contextlib.contextmanager
def serving_in_thread(
    app: Any,
    *,
    host: str = "127.0.0.1",
    name: str = "harness-server",
    on_stopping: Callable[[], None] | None = None,
) -> Iterator[str]:
    """Serve ``app`` on a free port in a background thread; yield ``http://HOST:PORT``,
    and stop the server on exit."""
    sockets = listening_sockets(host, 0)
    server = _server(app, host, 0, "warning", on_stopping)
    # Named so that a server thread is told apart from the threads of a run (tests).
    thread = threading.Thread(
        target=server.run,
        kwargs={"sockets": sockets},
        name=f"{SERVER_THREAD} ({name})",
        daemon=True,
    )
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise HarnessError(f"{name} did not start (see the log above)")
            thread.join(0.01)
        shown = f"[{host}]" if ":" in host else host
        yield f"http://{shown}:{server.bound_port()}"
    finally:
        server.should_exit = True
        thread.join(15)
