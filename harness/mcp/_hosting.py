"""Where harness's MCP server listens: streamable HTTP on 127.0.0.1 (in a background
thread for a target's run, in the foreground for ``harness mcp-serve``) or stdio.

The SDK's streamable HTTP app runs its session manager in its lifespan, which works once
per app: every start builds a new app (docs/mcp.md). uvicorn is run here rather than
through ``harness._asgi``, whose servers run without a lifespan, and so that a
``disconnect`` fault can drop every connection at once; it is held to harness's
``ServerLimits`` all the same, and its sessions to ``SessionLimits`` (docs/mcp.md#limits).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from harness._asgi import ServerLimits, listening_sockets, scrub_server_logs, uvicorn_options
from harness._errors import HarnessError
from harness.mcp._server import ToolServer

__all__ = ["MCP_PATH", "SessionLimits", "serve_http_forever", "serve_stdio", "serving_http"]

MCP_PATH = "/mcp"


@dataclass(frozen=True)
class SessionLimits:
    """What the MCP server keeps for its clients: sessions open at once (a request that
    would open one more gets a 503), seconds a session may go without a request before
    it ends (its id then answers 404; a stream held open without requests is closed
    after as long, so that a client gone quiet lets its session end too), and bytes of
    a request body (413 beyond)."""

    max_sessions: int = 1000
    ttl: float = 1800.0
    max_body: int = 4 * 2**20


class _HeldStreams:
    """The SDK's app with each GET stream (server-to-client messages) ended after
    ``ttl`` seconds: an open stream keeps its session from ever going idle, so a client
    that holds one and sends nothing would keep its session for good. A client still
    there opens a new stream; one that is not lets its session expire."""

    def __init__(self, app: Any, ttl: float) -> None:
        self.app = app
        self.ttl = ttl

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "GET":
            await self.app(scope, receive, send)
            return
        import anyio

        started = ended = False

        async def sending(message: dict[str, Any]) -> None:
            nonlocal started, ended
            started = started or message["type"] == "http.response.start"
            ended = ended or (
                message["type"] == "http.response.body" and not message.get("more_body")
            )
            await send(message)

        with anyio.move_on_after(self.ttl):
            await self.app(scope, receive, sending)
        if started and not ended:
            await send({"type": "http.response.body", "body": b"", "more_body": False})


class _NoCancelledNoise(logging.Filter):
    """A ``disconnect`` fault stops the server with a call still open: uvicorn logs the
    cancelled application's traceback, which says nothing a user needs."""

    def filter(self, record: logging.LogRecord) -> bool:
        info = record.exc_info
        if info and info[0] is not None and issubclass(info[0], asyncio.CancelledError):
            return False
        text = str(record.msg)
        return not (text.startswith("Traceback") and text.rstrip().endswith("CancelledError"))


_quiet = _NoCancelledNoise()


def _uvicorn(
    server: ToolServer,
    host: str,
    port: int,
    log_level: str,
    sessions: SessionLimits | None = None,
    limits: ServerLimits | None = None,
) -> Any:
    import uvicorn

    errors = logging.getLogger("uvicorn.error")
    if _quiet not in errors.filters:
        errors.addFilter(_quiet)

    sessions = sessions or SessionLimits()
    app = server.build().streamable_http_app(
        streamable_http_path=MCP_PATH,
        host=host,
        session_idle_timeout=sessions.ttl,
        max_sessions=sessions.max_sessions,
        max_request_body_size=sessions.max_body,
    )
    config = uvicorn.Config(
        _HeldStreams(app, sessions.ttl),
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",
        access_log=False,
        timeout_graceful_shutdown=2,
        # Slow or surplus clients cut off, idle connections kept longer than clients
        # keep them for reuse, as every server of harness (harness._asgi.ServerLimits).
        **uvicorn_options(limits or ServerLimits()),
    )
    scrub_server_logs()
    return uvicorn.Server(config)


def _bound_port(userver: Any, default: int) -> int:
    for listener in userver.servers:
        for sock in listener.sockets:
            return int(sock.getsockname()[1])
    return default


@contextlib.contextmanager
def serving_http(
    server: ToolServer,
    *,
    host: str = "127.0.0.1",
    sessions: SessionLimits | None = None,
    limits: ServerLimits | None = None,
) -> Iterator[str]:
    """Serve ``server`` on a free port in a background thread; yield its URL
    (``http://127.0.0.1:PORT/mcp``), and stop it on exit."""
    sockets = listening_sockets(host, 0)
    userver = _uvicorn(server, host, 0, "warning", sessions, limits)

    def drop() -> None:
        # The server goes away as a crashed one would: every connection is closed.
        userver.should_exit = True
        userver.force_exit = True

    server.on_disconnect = drop
    thread = threading.Thread(
        target=userver.run, kwargs={"sockets": sockets}, name="harness-server (mcp)", daemon=True
    )
    thread.start()
    try:
        while not userver.started:
            if not thread.is_alive():
                raise HarnessError("harness's MCP server did not start (see the log above)")
            thread.join(0.01)
        yield f"http://{host}:{_bound_port(userver, 0)}{MCP_PATH}"
    finally:
        userver.should_exit = True
        userver.force_exit = True
        thread.join(15)


def serve_http_forever(
    server: ToolServer,
    host: str,
    port: int,
    on_started: Callable[[str], None] | None = None,
    sessions: SessionLimits | None = None,
) -> None:
    """Serve ``server`` on ``host:port`` until Ctrl-C or SIGTERM (blocking); ``on_started``
    gets its URL once it listens."""
    try:
        sockets = listening_sockets(host, port)
    except OSError as exc:
        raise HarnessError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    userver = _uvicorn(server, host, port, "warning", sessions)
    if on_started is not None:
        bound = sockets[0].getsockname()[1]
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{bound}{MCP_PATH}"
        startup = userver.startup

        async def announced(sockets: Any = None) -> None:
            # Said once uvicorn listens: a client told earlier may find the port closed.
            await startup(sockets)
            if userver.started:
                on_started(url)

        userver.startup = announced
    server.on_disconnect = lambda: setattr(userver, "should_exit", True)
    userver.run(sockets=sockets)


def serve_stdio(server: ToolServer) -> None:
    """Serve ``server`` on this process's stdin and stdout until the client closes them."""
    import anyio
    from mcp.server import NotificationOptions
    from mcp.server.stdio import stdio_server

    sdk = server.build()
    options = sdk.create_initialization_options(NotificationOptions(tools_changed=True))

    async def main() -> None:
        async with anyio.create_task_group() as group:

            def drop() -> None:
                group.cancel_scope.cancel()

            server.on_disconnect = drop
            async with stdio_server() as (read, write):
                await sdk.run(read, write, options)
            group.cancel_scope.cancel()

    anyio.run(main)
