"""What every served API shares: JSON answers, Server-Sent Events, and errors (raised as
``ApiError``, answered by ``http_error`` in the form of the wire the request came on)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, StreamingResponse

from harness._asgi import DroppedConnection
from harness._modelwires import error_wire
from harness.llm._scripted import OUTAGE_MESSAGE
from harness.serve._bodies import BodyReader
from harness.serve._state import Reply, ScriptState
from harness.wires import OPENAI_CHAT, Wire
from harness.wires._neutral import WireError

__all__ = [
    "PARSED_BODY",
    "ApiError",
    "check_reply",
    "cut_answer",
    "error_answer",
    "http_error",
    "json_response",
    "read_json",
    "retry_headers",
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


def cut_answer(sent: list[str], media_type: str) -> StreamingResponse:
    """An answer whose connection drops once ``sent`` went out (a `cut:` step's reply:
    the first of its stream's events, or the first part of a whole answer's text)."""

    async def stream() -> AsyncIterator[bytes]:
        for piece in sent:
            yield piece.encode("utf-8")
        raise DroppedConnection("the reply's connection was dropped on purpose (a cut: step)")

    return StreamingResponse(stream(), media_type=media_type)


def error_answer(
    path: str, error: WireError, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """``error`` answered in the form of the wire ``path`` belongs to (Anthropic's for its
    ``/v1/messages/count_tokens``: harness._modelwires.error_wire), OpenAI's for a path
    that is no model API's."""
    wire = error_wire(path) or OPENAI_CHAT
    return JSONResponse(wire.render_error(error), status_code=error.status, headers=headers)


class ApiError(HTTPException):
    """An error answer: the status, and the body's message and code (written by the wire
    of the request's path), with its headers (``retry-after``)."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(status, message, headers=headers)
        self.message = message
        self.code = code
        self.param = param

    def error(self) -> WireError:
        """The error, wire-neutral."""
        return WireError(self.status_code, self.message, self.code, self.param)


def retry_headers(seconds: float) -> dict[str, str]:
    """The headers telling a client to retry after ``seconds``: ``retry-after-ms`` (which
    the openai and anthropic SDKs prefer) and ``retry-after`` (seconds, a fraction allowed)."""
    return {"retry-after-ms": str(max(1, round(seconds * 1000))), "retry-after": f"{seconds:g}"}


async def http_error(request: Any, exc: Exception) -> JSONResponse:
    """The app's handler of HTTP errors: an ApiError as raised; Starlette's own 404 and
    405 (no such route or method) in the API's format too."""
    path = request.url.path
    if isinstance(exc, ApiError):
        return error_answer(path, exc.error(), exc.headers)
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
        body = _reader(request.app.state).read(await request.body())
    except (ValueError, UnicodeDecodeError):
        raise ApiError(400, "the request body is not JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return body


def _reader(state: Any) -> BodyReader:
    """The app's reader of request bodies (harness.serve._bodies), made on first use."""
    reader = getattr(state, "bodies", None)
    if reader is None:
        reader = state.bodies = BodyReader()
    return reader


# What a served fault that names no wait tells the client: a millisecond (docs/
# scenarios.md#llm-errors), so an SDK's retry does not sleep its own backoff.
_SHORT_WAIT = retry_headers(0.001)
_OVERLOADED = "The model is overloaded. Please try again later."


async def check_reply(state: ScriptState, reply: Reply, wire: Wire | None = None) -> None:
    """Raise the ApiError of an error step or of an exhausted script (``wire``: the
    request's, for the errors each API says its own way)."""
    failing = reply.error
    error = failing.error if failing is not None else None
    if error == "timeout":
        await _time_out(state, failing.latency if failing is not None else 0.0)
    if error == "overloaded":
        # The API's own overloaded answer (Anthropic's 529), else a 503.
        status, message = getattr(wire, "overloaded", None) or (503, _OVERLOADED)
        raise ApiError(status, message, headers=_SHORT_WAIT)
    if error == "outage":
        raise ApiError(503, OUTAGE_MESSAGE, headers=_SHORT_WAIT)
    if error is not None:
        assert not isinstance(error, str)
        wait = retry_headers(error.retry_after) if error.retry_after else None
        raise ApiError(error.status, error.message, headers=wait)
    if reply.step is None and reply.judge:
        message = "a judge's request (x-harness-role: judge), and the script has no judge_script"
        raise ApiError(400, message, "script_exhausted")
    if reply.step is None:
        message = (
            f"script exhausted: this request holds {reply.n - 1} assistant replies and the "
            f"{reply.script} has {reply.length}"
        )
        raise ApiError(400, message, "script_exhausted")


async def _time_out(state: ScriptState, seconds: float) -> None:
    """Hold the response past the client's timeout (``seconds``, else the server's max
    delay, at most that); a client still waiting then gets a 504."""
    held = min(seconds, state.max_delay) if seconds > 0 else state.max_delay
    woken = await state.hold(held)
    if woken is None:
        message = f"timeout step: the response was held for {held:g} s"
    else:
        message = (
            f"timeout step: the server is shutting down: the response was released "
            f"after {woken:.1f} s of {held:g} s"
        )
    raise ApiError(504, message, "timeout", headers=_SHORT_WAIT)
