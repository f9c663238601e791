"""Running an ASGI application on uvicorn, for every server harness has (``harness serve``,
``harness agent-serve``): in the foreground until a signal, or in a background thread on
a free port (tests, and scenarios that serve another scenario).

Every server cuts off slow clients (``ServerLimits``): a request's head and body must
arrive within ``request_timeout`` seconds, an answer the client stopped reading is cut
off after ``send_timeout`` seconds, and at most ``max_connections`` connections are open
at once (the ones beyond get a 503 and are closed at once). uvicorn alone keeps a
connection that sends half a request head, or never reads its answer, open forever.
"""

from __future__ import annotations

import contextlib
import logging
import resource
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from harness._errors import HarnessError
from harness._secrets import URL_SECRET_PARAMS, ScrubbingFilter, scrub_text

__all__ = [
    "SERVER_THREAD",
    "DroppedConnection",
    "ServerLimits",
    "listening_sockets",
    "replayed",
    "scrub_server_logs",
    "serve_forever",
    "serving_in_thread",
    "uvicorn_options",
]

# Where uvicorn says what its server did (it gives this logger a handler): the operator
# of `harness serve` or `harness agent-serve` sees the clients cut off there.
server_log = logging.getLogger("uvicorn.error")

# The name every server thread's name starts with.
SERVER_THREAD = "harness-server"


class DroppedConnection(Exception):
    """Raised by an app in the middle of an answer to drop the connection on purpose (a
    stream cut mid-reply): uvicorn closes it, and the server's log does not call it a
    failure."""


def _dropped_on_purpose(record: logging.LogRecord) -> bool:
    """Whether a log record is uvicorn's report of a DroppedConnection (kept out)."""
    info = record.exc_info
    pending = [info[1]] if info and info[1] is not None else []
    while pending:
        exc = pending.pop()
        if isinstance(exc, DroppedConnection):
            return False
        if isinstance(exc, BaseExceptionGroup):
            pending.extend(exc.exceptions)
        elif exc.__cause__ is not None or exc.__context__ is not None:
            pending.append(exc.__cause__ or exc.__context__)  # type: ignore[arg-type]
    return True


@dataclass(frozen=True)
class ServerLimits:
    """What a server allows its clients: seconds to send a request (its head and body,
    from the connection or the first byte of the next request on it), connections open
    at once (never more than half the process's open-file limit), seconds an idle
    kept-alive connection stays open, bytes of a request head, and seconds an answer may
    wait for a client that stopped reading it (its buffers full)."""

    request_timeout: float = 10.0
    max_connections: int = 500
    # Longer than the idle time after which clients stop reusing a connection (httpx,
    # hence the openai, anthropic, google-genai and a2a-sdk clients: 5 s; aiohttp: 15 s).
    # At uvicorn's 5 s a client could send its next request on a connection in the very
    # moment the server closed it, and get a connection error (a ReadError) for nothing.
    keep_alive: int = 20
    max_head: int = 16 * 1024
    send_timeout: float = 30.0

    def connections(self) -> int:
        """``max_connections``, within half the open-file limit (each is a file)."""
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft == resource.RLIM_INFINITY:
            return self.max_connections
        return max(1, min(self.max_connections, soft // 2))


def _without_keys(path: str) -> str:
    """A request's path and query as the access log shows it: every value of a key
    parameter (``?key=``: a Gemini client's way to send its key) masked, however its name
    is spelled or encoded, and any secret value the environment holds."""
    from urllib.parse import unquote_plus

    where, mark, query = path.partition("?")
    if mark:
        pairs = [pair.partition("=") for pair in query.split("&")]
        query = "&".join(
            f"{name}=<credentials>"
            if unquote_plus(name).lower() in URL_SECRET_PARAMS
            else name + eq + value
            for name, eq, value in pairs
        )
    return scrub_text(where + mark + query)


class _ScrubbedAccess(logging.Filter):
    """uvicorn's access lines without secrets. Its formatter reads the record's
    arguments one by one (address, method, path, version, status): the path is scrubbed
    in place."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) == 5 and isinstance(args[2], str):
            record.args = (args[0], args[1], _without_keys(args[2]), *args[3:])
        else:  # not uvicorn's usual line: masked as any other
            ScrubbingFilter().filter(record)
        return True


def scrub_server_logs() -> None:
    """Mask secrets in what uvicorn logs (after it set up its loggers: a dictConfig keeps
    the filters a logger has)."""
    for name, kind in (("uvicorn.access", _ScrubbedAccess), ("uvicorn.error", ScrubbingFilter)):
        logger = logging.getLogger(name)
        if not any(isinstance(f, kind) for f in logger.filters):
            logger.addFilter(kind())


class _Tally:
    """Connections cut off, logged at most once a minute: an attack makes one line, not
    one per connection."""

    def __init__(self, every: float = 60.0) -> None:
        self.every = every
        self.counts: Counter[str] = Counter()
        self.due = 0.0

    def add(self, what: str) -> None:
        self.counts[what] += 1
        now = time.monotonic()
        if now >= self.due:
            self.due = now + self.every
            said = "; ".join(f"{what} ({n})" for what, n in self.counts.items())
            server_log.warning(
                "cut off slow or surplus clients: %s (at most one line a minute)", said
            )
            self.counts.clear()


def _unsent(transport: Any) -> int:
    """Bytes written to ``transport`` that its client has not taken yet: in its buffer,
    and in the kernel's send queue (Linux: TIOCOUTQ) where that can be read."""
    unsent = int(transport.get_write_buffer_size())
    sock = transport.get_extra_info("socket")
    try:
        import fcntl
        import termios

        queued = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, b"\0\0\0\0")
    except (AttributeError, ImportError, OSError, ValueError):
        return unsent
    return unsent + int.from_bytes(queued, sys.byteorder, signed=True)


class _Unread:
    """What cuts off a client that stops reading its answer, mixed into uvicorn's h11
    protocol: once its buffers are full (asyncio pauses the writing), a client that takes
    none of its answer for ``send_timeout`` seconds is cut off; one that reads, however
    slowly, is not."""

    send_timeout: float
    counted: _Tally
    transport: Any
    loop: Any
    stalled: Any = None  # the deadline of an answer the client does not read
    unsent = 0  # bytes of the answer not yet taken by the client, when last looked

    def pause_writing(self) -> None:
        super().pause_writing()  # type: ignore[misc]
        if self.stalled is None:
            self.unsent = _unsent(self.transport)
            self.stalled = self.loop.call_later(self.send_timeout, self._unread)

    def resume_writing(self) -> None:
        super().resume_writing()  # type: ignore[misc]
        if self.stalled is not None:
            self.stalled.cancel()
            self.stalled = None

    def _unread(self) -> None:
        self.stalled = None
        unsent = _unsent(self.transport)
        if unsent < self.unsent:  # it took some: a slow reader, still reading
            self.unsent = unsent
            self.stalled = self.loop.call_later(self.send_timeout, self._unread)
            return
        self.counted.add(f"connections not reading their answer for {self.send_timeout:g} s closed")
        # Aborted: a close would wait for the unread answer to be sent, forever.
        self.transport.abort()


def _busy(most: int) -> bytes:
    """The 503 a connection over the limit of ``most`` is sent before it is closed."""
    body = f"the server has {most} connections open, its limit; try again later"
    return (
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"connection: close\r\ncontent-length: {len(body)}\r\n\r\n{body}"
    ).encode()


def _protocol(limits: ServerLimits) -> type:
    """uvicorn's h11 protocol with ``limits``: a deadline for each request and a cap on
    the connections open at once."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    most = limits.connections()
    refusal = _busy(most)
    tally = _Tally()
    receiving = (h11.IDLE, h11.SEND_BODY)

    class Protocol(_Unread, H11Protocol):
        # uvicorn's own limit_concurrency answers 503 only once a whole request head has
        # come, so it never frees a connection that sends nothing: the cap applies here.
        deadline: Any = None
        send_timeout = limits.send_timeout
        counted = tally

        def connection_made(self, transport: Any) -> None:
            if len(self.connections) >= most:
                self.transport = transport
                transport.write(refusal)
                transport.close()
                tally.add(f"connections over the limit of {most} refused")
                return
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state in receiving and not self.transport.is_closing():
                self._arm()
            elif self.deadline is not None:
                self.deadline.cancel()
                self.deadline = None

        def connection_lost(self, exc: Exception | None) -> None:
            for timer in (self.deadline, self.stalled):
                if timer is not None:
                    timer.cancel()
            self.deadline = self.stalled = None
            super().connection_lost(exc)

        def _arm(self) -> None:
            # From the connection, or the first byte of the next request on it.
            if self.deadline is None:
                self.deadline = self.loop.call_later(limits.request_timeout, self._expire)

        def _expire(self) -> None:
            self.deadline = None
            if self.conn.their_state in receiving and not self.transport.is_closing():
                tally.add(
                    f"connections without a whole request in {limits.request_timeout:g} s closed"
                )
                self.transport.close()

    return Protocol


def uvicorn_options(limits: ServerLimits) -> dict[str, Any]:
    """The options of ``uvicorn.Config`` that hold a server to ``limits`` (for a server
    that makes its own uvicorn: ``harness mcp-serve``)."""
    return {
        "http": _protocol(limits),
        "timeout_keep_alive": limits.keep_alive,
        "h11_max_incomplete_event_size": limits.max_head,
    }


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
    app: Any,
    host: str,
    port: int,
    log_level: str,
    on_stopping: Callable[[], None] | None,
    limits: ServerLimits | None = None,
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
        **uvicorn_options(limits or ServerLimits()),
    )
    if _dropped_on_purpose not in server_log.filters:
        server_log.addFilter(_dropped_on_purpose)
    scrub_server_logs()
    return Server(config)


def serve_forever(
    app: Any,
    host: str,
    port: int,
    *,
    log_level: str = "info",
    on_started: Callable[[int], None] | None = None,
    on_stopping: Callable[[], None] | None = None,
    limits: ServerLimits | None = None,
) -> None:
    """Serve ``app`` until SIGTERM or Ctrl-C (blocking; call it from the main thread).

    HarnessError when ``host:port`` cannot be listened on (a busy port, an unknown host).
    """
    try:
        sockets = listening_sockets(host, port)
    except OSError as exc:
        shown = f"[{host}]" if ":" in host else host
        raise HarnessError(f"cannot listen on {shown}:{port}: {exc.strerror or exc}") from None
    server = _server(app, host, port, log_level, on_stopping, limits)
    server.on_started = on_started
    server.run(sockets=sockets)


@contextlib.contextmanager
def serving_in_thread(
    app: Any,
    *,
    host: str = "127.0.0.1",
    name: str = "harness-server",
    on_stopping: Callable[[], None] | None = None,
    limits: ServerLimits | None = None,
    sockets: list[socket.socket] | None = None,
) -> Iterator[str]:
    """Serve ``app`` on a free port in a background thread (or on ``sockets``, bound
    already: their port); yield ``http://HOST:PORT``, and stop the server on exit."""
    sockets = sockets or listening_sockets(host, 0)
    server = _server(app, host, 0, "warning", on_stopping, limits)
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


def replayed(raw: bytes, receive: Any) -> Callable[[], Any]:
    """An ASGI ``receive`` for an app behind a middleware that has read the request's body
    (``raw``) already: the body first, whole, then what ``receive`` says (a disconnect)."""
    given = False

    async def replay() -> dict[str, Any]:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": raw, "more_body": False}
        return await receive()

    return replay
