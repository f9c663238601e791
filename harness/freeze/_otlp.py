"""An OTLP JSON trace file read back, bounded and checked: its spans, for ``harness freeze
--trace`` (``harness.freeze._trace`` reads their model calls).

The file is ``ExportTraceServiceRequest`` objects in protobuf's JSON mapping, one per line
as a collector's file exporter writes them, or one whole (pretty-printed) object. A trace
is data from elsewhere (a collector, a colleague, an attacker): every level is checked
for its type, and anything else is a ``FreezeError`` of one line naming the file's line
and the place in the request (``resourceSpans[0].scopeSpans[1].spans[2].attributes[3]
.value: expected an object, got str 'x'``). What is read is bounded: a regular file (not
a device or a pipe) of at most ``MAX_FILE`` bytes, read a line at a time, no line longer
than ``MAX_LINE`` (a longer one is refused when that much was read, not read whole), and
values nested at most ``MAX_DEPTH`` deep.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from harness._errors import describe
from harness.freeze._recorded import FreezeError

__all__ = ["MAX_DEPTH", "MAX_FILE", "MAX_LINE", "NOT_OTLP", "Span", "read_spans"]

MAX_FILE = 256 * 2**20
MAX_LINE = 32 * 2**20
MAX_DEPTH = 64
NOT_OTLP = (
    "is not an OTLP JSON trace (an ExportTraceServiceRequest with resourceSpans, as a "
    "collector's file exporter writes it)"
)


@dataclass
class Span:
    """One span of the file: what the readers of model calls need, and where it is."""

    start: int
    scope: str
    attributes: dict[str, Any]
    trace: str = ""
    name: str = ""
    line: int = 1
    # (name, attributes) of each span event, in order.
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


class _Bad(Exception):
    """A value of the wrong kind at ``where`` (a path in the request)."""

    def __init__(self, where: str, what: str) -> None:
        super().__init__(f"{where}: {what}")


def _expected(where: str, what: str, value: Any) -> _Bad:
    return _Bad(where, f"expected {what}, got {describe(value)}")


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _expected(where, "a list", value)
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _expected(where, "an object", value)
    return value


def _string(value: Any, where: str, default: str = "") -> str:
    if value is None:
        return default
    if not isinstance(value, str):
        raise _expected(where, "a string", value)
    return value


def _integer(value: Any, where: str, what: str = "an integer") -> int:
    # protobuf's JSON mapping writes 64-bit integers as strings; some writers as numbers.
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise _expected(where, what, value)


def value_of(given: Any, where: str, depth: int = 0, root: str = "") -> Any:
    """An OTLP ``AnyValue`` as Python (checked; ``where`` names it in errors, ``root`` the
    attribute's value it is nested in)."""
    root = root or where
    if depth > MAX_DEPTH:
        raise _Bad(root, f"nested more than {MAX_DEPTH} deep")
    if given is None:
        return None
    given = _object(given, where)
    if not given:
        return None
    kind, inner = next(iter(given.items()))
    at = f"{where}.{kind}"
    if kind == "arrayValue":
        values = _list(_object(inner or {}, at).get("values"), f"{at}.values")
        return [value_of(v, f"{at}.values[{i}]", depth + 1, root) for i, v in enumerate(values)]
    if kind == "kvlistValue":
        values = _list(_object(inner or {}, at).get("values"), f"{at}.values")
        pairs = (_pair(kv, f"{at}.values[{i}]", depth + 1, root) for i, kv in enumerate(values))
        return dict(pairs)
    if kind == "intValue":
        return _integer(inner, at)
    if kind == "bytesValue":
        try:
            return base64.b64decode(_string(inner, at), validate=True)
        except (binascii.Error, ValueError):
            raise _Bad(at, f"expected base64, got {describe(inner)}") from None
    if kind == "stringValue":
        return _string(inner, at)
    if kind == "boolValue":
        if not isinstance(inner, bool):
            raise _expected(at, "true or false", inner)
        return inner
    if kind == "doubleValue":
        return _double(inner, at)
    raise _Bad(where, f"expected an AnyValue (stringValue, intValue, ...), got {kind!r}")


def _double(inner: Any, where: str) -> float:
    # protobuf's JSON mapping writes NaN and the infinities as strings.
    if isinstance(inner, (int, float)) and not isinstance(inner, bool):
        return float(inner)
    if isinstance(inner, str):
        try:
            return float(inner)
        except ValueError:
            pass
    raise _expected(where, "a number", inner)


def _pair(kv: Any, where: str, depth: int = 0, root: str = "") -> tuple[str, Any]:
    """One ``KeyValue``: its key and its value as Python."""
    kv = _object(kv, where)
    key = kv.get("key")
    if not isinstance(key, str):
        raise _expected(f"{where}.key", "a string", key)
    return key, value_of(kv.get("value"), f"{where}.value", depth, root)


def _attributes(given: Any, where: str) -> dict[str, Any]:
    return dict(_pair(kv, f"{where}[{i}]") for i, kv in enumerate(_list(given, where)))


def _start(span: dict[str, Any], where: str) -> int:
    what = "nanoseconds since the epoch (a string of digits)"
    given = span.get("startTimeUnixNano")
    if given is None:
        return 0
    start = _integer(given, f"{where}.startTimeUnixNano", what)
    if start < 0:
        raise _expected(f"{where}.startTimeUnixNano", what, given)
    return start


def _span(given: Any, where: str, scope: str, line: int) -> Span:
    span = _object(given, where)
    if span.get("traceId") is None:
        raise _Bad(f"{where}.traceId", "missing (every span has one)")
    trace = _string(span.get("traceId"), f"{where}.traceId")
    events = []
    for n, event in enumerate(_list(span.get("events"), f"{where}.events")):
        at = f"{where}.events[{n}]"
        event = _object(event, at)
        name = _string(event.get("name"), f"{at}.name")
        events.append((name, _attributes(event.get("attributes"), f"{at}.attributes")))
    return Span(
        start=_start(span, where),
        scope=scope,
        attributes=_attributes(span.get("attributes"), f"{where}.attributes"),
        trace=trace,
        name=_string(span.get("name"), f"{where}.name"),
        line=line,
        events=events,
    )


def _spans_of(request: Any, line: int) -> Iterator[Span]:
    """The spans of one ``ExportTraceServiceRequest`` (checked)."""
    if not isinstance(request, dict) or "resourceSpans" not in request:
        raise _Bad("", NOT_OTLP)
    for r, resource in enumerate(_list(request["resourceSpans"], "resourceSpans")):
        at = f"resourceSpans[{r}]"
        resource = _object(resource, at)
        for s, scoped in enumerate(_list(resource.get("scopeSpans"), f"{at}.scopeSpans")):
            where = f"{at}.scopeSpans[{s}]"
            scoped = _object(scoped, where)
            scope = _object(scoped.get("scope") or {}, f"{where}.scope")
            name = _string(scope.get("name"), f"{where}.scope.name")
            for n, span in enumerate(_list(scoped.get("spans"), f"{where}.spans")):
                yield _span(span, f"{where}.spans[{n}]", name, line)


def _parsed(text: str) -> Any:
    """``text`` as JSON, or a ValueError saying why (a nesting past the parser's depth too)."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def _lines(handle: BinaryIO, shown: str) -> Iterator[tuple[int, str]]:
    """(number, text) of each line, each at most MAX_LINE bytes (refused when that much was
    read without its end)."""
    number = 0
    while True:
        raw = handle.readline(MAX_LINE + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE:
            raise FreezeError(
                f"{shown}:{number}: the line is longer than {MAX_LINE // 2**20} MiB, more than "
                "harness reads of one export request: split the trace (a run per file)"
            )
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FreezeError(
                f"{shown}:{number}: the trace is not UTF-8 text ({exc.reason})"
            ) from None


def _requests(handle: BinaryIO, size: int, shown: str) -> Iterator[tuple[int, Any]]:
    """(line, request) of each ``ExportTraceServiceRequest`` of the file."""
    if size <= MAX_LINE:
        # Small enough to be one whole object, pretty-printed over many lines.
        whole = handle.read()
        try:
            request = _parsed(whole.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            request = None
        if isinstance(request, dict):
            yield 1, request
            return
        handle.seek(0)
    for number, text in _lines(handle, shown):
        if not text.strip():
            continue
        try:
            yield number, _parsed(text)
        except ValueError as exc:
            raise FreezeError(f"{shown}:{number}: {NOT_OTLP} ({exc})") from None


def read_spans(path: Path, shown: str) -> list[Span]:
    """Every span of the trace file at ``path`` (``shown``: how messages name it)."""
    try:
        # Non-blocking: opening a pipe would otherwise wait for a writer forever.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise FreezeError(f"cannot read trace {shown}: {exc.strerror or exc}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE:
        os.close(fd)
        why = (
            "it is not a regular file (a device, a pipe or a folder)"
            if not stat.S_ISREG(info.st_mode)
            else f"it is larger than {MAX_FILE // 2**20} MiB: split it (a run per file)"
        )
        raise FreezeError(f"cannot read trace {shown}: {why}")
    with os.fdopen(fd, "rb") as handle:
        spans: list[Span] = []
        for line, request in _requests(handle, info.st_size, shown):
            try:
                spans.extend(_spans_of(request, line))
            except _Bad as exc:
                said = str(exc).removeprefix(": ")
                raise FreezeError(f"{shown}:{line}: {said}") from None
        return spans
