"""What both APIs share on the wire: JSON answers, Server-Sent Events, and errors in
OpenAI's ``{"error": {...}}`` format (raised as ``ApiError``, answered by ``http_error``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse, StreamingResponse

from harness.llm.chunks import pieces
from harness.serve.state import Reply, ScriptState

__all__ = [
    "MODEL_ID",
    "PARSED_BODY",
    "ApiError",
    "check_reply",
    "http_error",
    "json_response",
    "pieces",
    "read_json",
    "sse",
]

MODEL_ID = "harness-script"
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


def _error_type(status: int) -> str:
    return {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        409: "conflict_error",
        422: "invalid_request_error",
        429: "rate_limit_error",
    }.get(status, "server_error" if status >= 500 else "invalid_request_error")


def _error_body(
    status: int, message: str, code: str | None = None, param: str | None = None
) -> dict[str, Any]:
    return {
        "error": {"message": message, "type": _error_type(status), "param": param, "code": code}
    }


class ApiError(HTTPException):
    """An error answer as the OpenAI API gives it: the status, and the body's message and
    code."""

    def __init__(
        self, status: int, message: str, code: str | None = None, param: str | None = None
    ) -> None:
        super().__init__(status, message)
        self.message = message
        self.code = code
        self.param = param

    def response(self) -> JSONResponse:
        """The answer: ``{"error": {message, type, param, code}}`` with the status."""
        return json_response(
            _error_body(self.status_code, self.message, self.code, self.param), self.status_code
        )


async def http_error(request: Any, exc: HTTPException) -> JSONResponse:
    """The app's handler of HTTP errors: an ApiError as raised; Starlette's own 404 and
    405 (no such route or method) in the API's format too."""
    if isinstance(exc, ApiError):
        return exc.response()
    status = exc.status_code
    message = f"{request.method} {request.url.path} is not an endpoint of harness serve"
    return json_response(_error_body(status, message), status)


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
    if reply.error is not None:
        error = reply.error.error
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
        raise ApiError(error.status, error.message)
    if reply.step is None and reply.judge:
        message = "a judge's request (x-harness-role: judge), and the script has no judge_script"
        raise ApiError(400, message, "script_exhausted")
    if reply.step is None:
        message = (
            f"script exhausted: this request holds {reply.n - 1} assistant replies and the "
            f"script has {len(state.positions)}"
        )
        raise ApiError(400, message, "script_exhausted")
