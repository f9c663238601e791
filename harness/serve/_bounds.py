"""What a served model API takes in one request (docs/wires.md#limits): a body of at most
``max_body`` bytes, refused before it is read whole; JSON nested at most ``max_depth``
deep; text that is Unicode (no lone UTF-16 surrogate, which a JavaScript client sends
when it cuts an emoji in two, and which the vendors' APIs refuse too); and at most
``max_pending`` bytes of bodies held at once by all requests together.

``BoundedApp`` wraps the app every served model (``harness serve``, ``serve
--cassette``, an external target's run) is answered by, outermost, so that nothing
behind it (the observer, the recording proxy, a wire) sees a request past these bounds.
A refusal is a 413, 400 or 503 in the form of the request's wire, never a 500.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness._asgi import replayed
from harness.serve._bodies import BodyReader, Fresh
from harness.serve._http import PARSED_BODY, error_answer
from harness.wires._neutral import WireError

__all__ = ["DEFAULT_MAX_BODY", "DEFAULT_MAX_DEPTH", "BodyLimits", "BoundedApp", "json_problem"]

# The largest request the vendors document: Anthropic's Messages API takes 32 MB.
DEFAULT_MAX_BODY = 32 * 2**20
# Far deeper than any request a model API is sent (a tool's schema nests a few levels),
# far below where Python's own recursion limit would stop the code that reads it.
DEFAULT_MAX_DEPTH = 100

_BODY_METHODS = ("POST", "PUT", "PATCH")


@dataclass(frozen=True)
class BodyLimits:
    """What one request body may be (bytes, JSON depth) and the bytes of bodies all
    requests may hold at once (``max_pending``, default four bodies at the limit)."""

    max_body: int = DEFAULT_MAX_BODY
    max_depth: int = DEFAULT_MAX_DEPTH
    max_pending: int | None = None

    def pending(self) -> int:
        """``max_pending``, or four bodies at the limit."""
        return self.max_pending if self.max_pending is not None else 4 * self.max_body


def _depth_or_surrogate(start: tuple[Any, int, Any, Any], max_depth: int) -> str | None:
    """What is wrong with a parsed JSON value: nested past ``max_depth``, or a string or
    key holding a lone surrogate, and where. Iterative: a value nested as deep as the
    parser allowed does not reach the recursion limit here."""
    # Each entry: (value, depth, the entry of its container, its key or index there);
    # ``start`` is the value's own, its container's chain naming where it is.
    stack: list[tuple[Any, int, Any, Any]] = [start]
    while stack:
        entry = stack.pop()
        item, depth = entry[0], entry[1]
        if isinstance(item, dict | list) and depth > max_depth:
            return f"its JSON is nested deeper than {max_depth} levels (at {_place(entry)})"
        if isinstance(item, dict):
            for key, inner in item.items():
                if not _unicode(key):
                    return _surrogate(key, _place(entry))
                stack.append((inner, depth + 1, entry, key))
        elif isinstance(item, list):
            stack.extend((inner, depth + 1, entry, n) for n, inner in enumerate(item))
        elif isinstance(item, str) and not _unicode(item):
            return _surrogate(item, _place(entry))
    return None


def _place(entry: tuple[Any, int, Any, Any]) -> str:
    """Where an entry of ``_depth_or_surrogate`` is (``messages[0].content``), cut short."""
    steps: list[str] = []
    while entry[2] is not None:
        key = entry[3]
        steps.append(f"[{key}]" if isinstance(key, int) else "." + ascii(key)[1:-1][:40])
        entry = entry[2]
    text = "".join(reversed(steps)).lstrip(".") or "the top"
    return text if len(text) <= 120 else "..." + text[-117:]


def _unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _surrogate(text: str, where: str) -> str:
    lone = next(c for c in text if "\ud800" <= c <= "\udfff")
    return (
        f"it holds a lone UTF-16 surrogate ({ascii(lone)[1:-1]}, half of a character cut in "
        f"two) at {where}: not Unicode text; send whole characters"
    )


class _Refused(ValueError):
    """A body whose JSON no model API takes (its message says why and where)."""


def _checker(max_depth: int) -> Callable[[list[Fresh]], None]:
    """The check of what was decoded for a body: ``_Refused`` past ``max_depth`` or at a
    lone surrogate. Only the new part of a conversation's body is decoded, and checked:
    what it shares with the body before it was checked with that one."""

    def check(fresh: list[Fresh]) -> None:
        top: tuple[Any, int, Any, Any] = (None, 1, None, None)
        for key, index, value in fresh:
            entry: tuple[Any, int, Any, Any]
            if key is not None and index is None and not _unicode(key):
                raise _Refused(_surrogate(key, _place((None, 2, top, key))))
            if key is None:
                entry = (value, 1, None, None)
            elif index is None:
                entry = (value, 2, top, key)
            else:
                entry = (value, 3, (None, 2, top, key), index)
            problem = _depth_or_surrogate(entry, max_depth)
            if problem is not None:
                raise _Refused(problem)

    return check


def json_problem(
    raw: bytes, max_depth: int = DEFAULT_MAX_DEPTH, reader: BodyReader | None = None
) -> tuple[str | None, Any]:
    """(what makes ``raw`` a JSON body no model API takes, None if nothing; the parsed
    value, None when it is not JSON at all: the app says so in its own words).
    ``reader`` (a server's, kept between requests) decodes only what is new."""
    try:
        value = (reader or BodyReader()).read(raw, _checker(max_depth))
    except RecursionError:
        return f"its JSON is nested deeper than {max_depth} levels", None
    except _Refused as refused:
        return str(refused), None
    except ValueError:  # not JSON, or not UTF-8 (UnicodeDecodeError is a ValueError)
        return None, None
    return None, value


class BoundedApp:
    """``app`` behind ``limits``: every request body read up to its bound, JSON checked,
    and handed on (parsed, under ``PARSED_BODY``) or refused in its wire's form."""

    def __init__(self, app: Any, limits: BodyLimits | None = None) -> None:
        # `app` by that name: harness.serve.find_state walks wrappers through it.
        self.app = app
        self.limits = limits or BodyLimits()
        self.held = 0  # bytes of the bodies requests hold now
        # A conversation's bodies repeat its history: each read decodes and checks what
        # is new (harness.serve._bodies), not the whole history again.
        self.bodies = BodyReader()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """The ASGI entry point."""
        if scope.get("type") != "http" or scope.get("method") not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        try:
            refusal = await self._read(scope, receive, chunks)
            raw = b"".join(chunks)
            if refusal is None and raw:
                problem, value = json_problem(raw, self.limits.max_depth, self.bodies)
                if problem is not None:
                    message = f"the request body is refused: {problem}"
                    refusal = WireError(400, message, "invalid_json")
                elif isinstance(value, dict):
                    scope = {**scope, PARSED_BODY: value}
            if refusal is not None:
                await _refuse(scope, send, refusal)
                return
            await self.app(scope, replayed(raw, receive), send)
        finally:
            self.held -= sum(map(len, chunks))

    async def _read(self, scope: dict[str, Any], receive: Any, chunks: list[bytes]) -> Any:
        """Read the body into ``chunks`` (counted in ``held`` while there); a refusal
        (WireError) when it is too large or the server holds too much, else None.

        A body over the limit is not kept (``chunks`` is emptied): the rest of it is
        read and thrown away, up to four times the limit, so that a client still sending
        gets its 413 rather than a reset connection; then the connection is closed."""
        limit = self.limits.max_body
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        refusal: WireError | None = None
        if declared.isdigit() and int(declared) > limit:
            refusal = _too_large(int(declared), limit)
        read, more = 0, True
        while more and read <= 4 * limit:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            more = bool(message.get("more_body"))
            read += len(chunk)
            if refusal is None and read > limit:
                refusal = _too_large(read, limit)
            elif refusal is None and self.held + len(chunk) > self.limits.pending():
                refusal = _busy(self.held, self.limits.pending())
            if refusal is not None:
                self.held -= sum(map(len, chunks))
                chunks.clear()
                continue
            chunks.append(chunk)
            self.held += len(chunk)
        return refusal


def _busy(held: int, most: int) -> WireError:
    return WireError(
        503,
        f"the server holds {held} bytes of request bodies, its limit of {most}: try again later",
        "overloaded",
    )


def _too_large(size: int, limit: int) -> WireError:
    return WireError(
        413,
        f"the request body is {size} bytes or more; this server takes at most {limit} "
        "(harness serve --max-body)",
        "request_too_large",
    )


async def _refuse(scope: dict[str, Any], send: Any, error: WireError) -> None:
    """``error`` in the wire's form, the connection closed after it (a refused body may
    still be on its way)."""
    answer = error_answer(scope.get("path", ""), error)
    answer.headers["connection"] = "close"
    if error.status == 503:
        answer.headers["retry-after"] = "1"

    async def nothing() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    await answer(scope, nothing, send)
