"""What every served API shares: JSON answers, Server-Sent Events, and errors (raised as
``ApiError``, answered by ``http_error`` in the form of the wire the request came on)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, StreamingResponse

from harness.serve.state import Reply, ScriptState
from harness.wires import OPENAI_CHAT, wire_for
from harness.wires.neutral import WireError

__all__ = [
    "PARSED_BODY",
    "ApiError",
    "check_reply",
    "error_answer",
    "http_error",
    "json_response",
    "read_json",
    "sse",
]

# The ASGI scope key under which a middleware hands on the request's parsed JSON body.
PARSED_BODY = "harness.parsed_body"


def json_response(body: Any, status: int = 200) -> JSONResponse:
    """``body`` as a JSON answer."""
    return JSONResponse(body, status_code=status)


def sse(events: Iterator[str]) -> StreamingResponse:
    """A stream of Server-Sent Events, each already in its ``data: ...\\n\\n`` form."""

    async def stream() -> AsyncIterator[bytes]:
        for event in events:
            yield event.encode("utf-8")

    return StreamingResponse(
        stream(), media_type="text/event-stream", headers={"cache-control": "no-cache"}
    )


def error_answer(path: str, error: WireError) -> JSONResponse:
    """``error`` answered in the form of the wire ``path`` belongs to (OpenAI's for a path
    that is no model API's)."""
    wire = wire_for(path) or OPENAI_CHAT
    return json_response(wire.render_error(error), error.status)


class ApiError(HTTPException):
    """An error answer: the status, and the body's message and code (written by the wire
    of the request's path)."""

    def __init__(
        self, status: int, message: str, code: str | None = None, param: str | None = None
    ) -> None:
        super().__init__(status, message)
        self.message = message
        self.code = code
        self.param = param

    def error(self) -> WireError:
        """The error, wire-neutral."""
        return WireError(self.status_code, self.message, self.code, self.param)


async def http_error(request: Any, exc: Exception) -> JSONResponse:
    """The app's handler of HTTP errors: an ApiError as raised; Starlette's own 404 and
    405 (no such route or method) in the API's format too."""
    path = request.url.path
    if isinstance(exc, ApiError):
        return error_answer(path, exc.error())
    if not isinstance(exc, HTTPException):  # registered for HTTP errors only
        raise exc
    message = f"{request.method} {path} is not an endpoint of harness serve"
    return error_answer(path, WireError(exc.status_code, message))


async def read_json(request: Any) -> dict[str, Any]:
    """The request's JSON object body (ApiError 400 for anything else)."""
    # A middleware that already parsed the body (harness.external's observer) leaves it
    # here: a long conversation's body is not parsed twice.
    parsed = request.scope.get(PARSED_BODY)
    if isinstance(parsed, dict):
        return parsed
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "the request body is not JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return body


async def check_reply(state: ScriptState, reply: Reply) -> None:
    """Raise the ApiError of an error step or of an exhausted script."""
    error = reply.error.error if reply.error is not None else None
    if error == "timeout":
        # Hold the response past the client's timeout; a client still waiting
        # after max_delay gets a 504.
        woken = await state.hold(state.max_delay)
        if woken is None:
            message = f"timeout step: the response was held for {state.max_delay:g} s"
        else:
            message = (
                f"timeout step: the server is shutting down: the response was released "
                f"after {woken:.1f} s of {state.max_delay:g} s"
            )
        raise ApiError(504, message, "timeout")
    if error is not None:
        raise ApiError(error.status, error.message)
    if reply.step is None and reply.judge:
        message = "a judge's request (x-harness-role: judge), and the script has no judge_script"
        raise ApiError(400, message, "script_exhausted")
    if reply.step is None:
        message = (
            f"script exhausted: this request holds {reply.n - 1} assistant replies and the "
            f"{reply.script} has {reply.length}"
        )
        raise ApiError(400, message, "script_exhausted")
