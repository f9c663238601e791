"""One model address for the process's ``python:`` targets
(docs/external.md#clients-built-when-the-module-is-imported).

A python target's module is imported once per process, when its scenario file loads, and a
client it builds at module level (pydantic-ai's ``Agent("anthropic:...")``, ``OpenAI()``,
``genai.Client()``) reads its base URL and key then, once. So harness imports the module
with the served environment in place, pointing at this address, and serves every run of a
python target here, one run at a time: such a client reaches each run's model. The address
is one port on 127.0.0.1, bound when first asked for and served from the first run on, for
the life of the process (a forked process gets its own).

Between runs nobody is served here: a request then (a client built for an earlier run, in
another process, or in a run that did not get the address) is answered 421 with a line
saying how to build the client instead. A run that finds the address taken by another run
(``--harness-concurrency``) is served on a port of its own, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

from harness._asgi import listening_sockets, serving_in_thread
from harness.serve._app import find_state
from harness.serve._http import error_answer
from harness.wires._neutral import WireError

__all__ = ["ADDRESS", "NOBODY_SERVED", "TargetAddress"]

NOBODY_SERVED = (
    "no harness run is served at this address now: this client was built for another run "
    "(when its module was imported, in another process, or for a run served elsewhere "
    "under --harness-concurrency); build it inside the target function, or take base_url "
    "(docs/external.md#clients-built-when-the-module-is-imported)"
)

# How long the end of a run waits for its requests still being answered (a server of its
# own would wait as long before it stops).
_GRACE = 5.0


class TargetAddress:
    """The process's one address for python targets: an ASGI app answering with the app
    of the run being served (``serving``), 421 when there is none."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._sockets: list[socket.socket] | None = None
        self._port = 0
        self._server: Any = None  # the server's context, entered once
        self._loop: asyncio.AbstractEventLoop | None = None
        self._current: Any = None
        # Requests being answered, by app (id): a run's end waits for its own.
        self._active: dict[int, int] = {}
        os.register_at_fork(after_in_child=self._forget)

    def url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, the port bound on first use."""
        with self._lock:
            if self._sockets is None:
                self._sockets = listening_sockets("127.0.0.1", 0)
                self._port = int(self._sockets[0].getsockname()[1])
            return f"http://127.0.0.1:{self._port}/v1"

    @contextlib.contextmanager
    def serving(self, app: Any) -> Iterator[str | None]:
        """Serve ``app`` here while the context lasts; yield the URL, or None when another
        run holds the address (the caller serves ``app`` elsewhere)."""
        url = self.url()
        with self._lock:
            taken = self._current is not None
            if not taken:
                if self._server is None:
                    server = serving_in_thread(self, name="python targets", sockets=self._sockets)
                    server.__enter__()  # left running for the process's life
                    self._server = server
                self._current = app
        if taken:
            yield None
            return
        try:
            yield url
        finally:
            self._release(app)

    def _release(self, app: Any) -> None:
        """Stop serving ``app``: wake its held answers, wait for its requests to end."""
        state = find_state(app)
        with self._lock:
            self._current = None
            if state is not None and self._loop is not None:
                # The held answers (error: timeout) wake on the server's own loop.
                with contextlib.suppress(RuntimeError):
                    self._loop.call_soon_threadsafe(state.stopping)
            deadline = time.monotonic() + _GRACE
            while self._active.get(id(app)) and time.monotonic() < deadline:
                self._lock.wait(deadline - time.monotonic())
            self._active.pop(id(app), None)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """The ASGI entry point: the current run's app, or 421."""
        if scope["type"] != "http":
            return
        self._loop = asyncio.get_running_loop()
        with self._lock:
            app = self._current
            if app is not None:
                self._active[id(app)] = self._active.get(id(app), 0) + 1
        if app is None:
            answer = error_answer(scope.get("path", ""), WireError(421, NOBODY_SERVED))
            await answer(scope, receive, send)
            return
        try:
            await app(scope, receive, send)
        finally:
            with self._lock:
                if self._active.get(id(app)):
                    self._active[id(app)] -= 1
                    self._lock.notify_all()

    def _forget(self) -> None:
        """In a forked child: the parent's socket and server are not this process's."""
        for sock in self._sockets or []:
            sock.close()
        self._lock = threading.Condition()
        self._sockets = self._server = self._loop = self._current = None
        self._port, self._active = 0, {}


# The process's address.
ADDRESS = TargetAddress()
