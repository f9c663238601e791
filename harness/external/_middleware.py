"""An ASGI middleware in front of the served application: it shows each model request and
its answer to an ``Observation``, and answers a request itself when harness stops the run.

It wraps the existing server (``harness.serve.create_app``) or the cassette app
unchanged: the request body is read once and handed on, the answer's bytes are passed
through as they are sent (streams stay streams) and read when the answer is complete, or
when the client went away in the middle of it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from harness._asgi import replayed
from harness._modelwires import wire_for
from harness.external._observe import Observation, Refusal
from harness.serve._http import PARSED_BODY
from harness.wires import Wire
from harness.wires._neutral import WireError

__all__ = ["TRACES_INGEST", "ObservingApp"]

# Where the Agents SDK uploads its traces (docs/external.md#the-targets-environment).
TRACES_INGEST = "/v1/traces/ingest"


async def _read_body(receive: Any) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return b"".join(chunks)


def _error_body(wire: Wire, status: int, message: str) -> bytes:
    return json.dumps(wire.render_error(WireError(status, message))).encode()


class ObservingApp:
    """``app`` with every model request and answer observed by ``observation``."""

    def __init__(
        self,
        app: Any,
        observation: Observation,
        only: str | None = None,
        request_cap: int | None = None,
    ) -> None:
        # `app` by that name: harness.serve.find_state walks wrappers through it.
        self.app = app
        self.observation = observation
        # The one wire answered (a matrix combination's), by name; None: every wire.
        self.only = only
        # expect.max_requests_per_call: past it the run is stopped (``halted`` says why).
        # The requests since the model's last reply are counted as harness._checks does.
        self.request_cap = request_cap
        self.halted: str | None = None
        self._since_reply = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """The ASGI entry point."""
        if scope.get("type") == "http" and scope.get("path") == TRACES_INGEST:
            # An Agents SDK pointed at harness uploads its traces here: accepted, unread.
            await _read_body(receive)
            await _answer(send, 200, b"{}")
            return
        wire = wire_for(scope.get("path", "")) if scope.get("type") == "http" else None
        if wire is None or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        raw = await _read_body(receive)
        if self.only is not None and wire.name != self.only:
            # The combination tests the agent on one wire: a request on another would
            # make its run the same as another combination's.
            message = (
                f"this run serves the {self.only} wire only (matrix wire: {self.only}), "
                f"not {wire.label} at {scope.get('path')}: configure the agent from "
                "HARNESS_WIRE (docs/wires.md)"
            )
            await _answer(send, 400, _error_body(wire, 400, message))
            return
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        if isinstance(body, dict):
            # Parsed once: the server reads it from the scope (see PARSED_BODY).
            scope = {**scope, PARSED_BODY: body}
        try:
            asked = body if isinstance(body, dict) else {}
            model = wire.model(asked, scope.get("path", ""))
            call = self.observation.request(wire, asked, model)
        except Refusal as refusal:
            error = _error_body(wire, refusal.status, refusal.message)
            await _answer(send, refusal.status, error)
            return
        self._since_reply += 1
        if self.request_cap is not None and self._since_reply > self.request_cap:
            self.halted = (
                f"stopped by harness: {self._since_reply} requests for one reply of the model "
                f"(expect.max_requests_per_call: {self.request_cap}): a retry storm"
            )
            self.observation.response(wire, call, 400, _error_body(wire, 400, self.halted))
            await _answer(send, 400, _error_body(wire, 400, self.halted))
            return
        await self._pass(scope, receive, send, raw, wire, call)

    async def _pass(
        self, scope: Any, receive: Any, send: Any, raw: bytes, wire: Wire, call: int
    ) -> None:
        status = 500
        chunks: list[bytes] = []
        done = started = False

        async def capture(message: dict[str, Any]) -> None:
            nonlocal status, done, started
            if message["type"] == "http.response.start":
                status, started = int(message["status"]), True
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
                if not message.get("more_body") and not done:
                    done = True
                    if status < 400:
                        self._since_reply = 0
                    self.observation.response(wire, call, status, b"".join(chunks))
            await send(message)

        async def watch() -> None:
            nonlocal done
            # The body was read: what comes now is the client closing the connection.
            message = await receive()
            if message.get("type") == "http.disconnect" and not started and not done:
                # Before any answer (a held `error: timeout` step): the client's timeout.
                done = True
                self.observation.gave_up(wire, call)

        watcher = asyncio.ensure_future(watch())
        try:
            await self.app(scope, replayed(raw, receive), capture)
        finally:
            watcher.cancel()
            if not done:
                # The client left (or the app failed) before the answer was complete:
                # what was sent is still what the target saw.
                done = True
                self.observation.response(wire, call, status, b"".join(chunks))


async def _answer(send: Any, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
