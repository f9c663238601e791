"""Planned traces as OTLP JSON: one ``ExportTraceServiceRequest`` on one line, as a
collector's file exporter writes it (and as ``harness freeze --trace`` reads it).

The encoding is the OTLP specification's JSON mapping of the protobuf messages: ids as
lowercase hex, 64-bit integers and times (unix nanoseconds) as strings, enums as numbers,
fields in the order of their numbers, fields holding their default value left out. It is
written here as text, from the planned spans, rather than through the SDK and protobuf's
JSON mapping (which writes ids as base64 and costs several times as much:
docs/performance.md); tests/test_otel_export.py checks that the text is byte for byte
what the SDK's OTLP encoder makes of the same spans, with the ids as hex.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Iterator
from importlib import metadata
from json.encoder import encode_basestring as _quoted  # json.dumps's, for a str
from pathlib import Path
from typing import Any

from harness._files import atomic_write
from harness._secrets import Scrubber
from harness.otel._spans import PlannedEvent, PlannedSpan, PlannedTrace

__all__ = [
    "SCOPE",
    "SERVICE_NAME",
    "otlp_json",
    "otlp_json_pieces",
    "scope_version",
    "write_file",
]

SERVICE_NAME = "harness"
SCOPE = "harness"
_KINDS = {"internal": 1, "client": 3}
# Span flags as the SDK's encoder sets them: "is_remote is known" (0x100), never remote.
_FLAGS = 256


@functools.cache
def scope_version() -> str:
    """The instrumentation scope's version: harness's."""
    try:
        return metadata.version("loop-harness")
    except metadata.PackageNotFoundError:
        return "0"


def _double(value: float) -> str:
    if math.isfinite(value):
        return repr(value)  # what json.dumps writes for a float
    return '"NaN"' if math.isnan(value) else ('"Infinity"' if value > 0 else '"-Infinity"')


def _value(value: Any) -> str:
    """An attribute value (``AnyValue``), as JSON text."""
    kind = type(value)  # the common cases first, exactly (a bool is an int)
    if kind is str:
        return '{"stringValue":' + _quoted(value) + "}"
    if kind is int:
        return '{"intValue":"' + str(value) + '"}'
    if isinstance(value, bool):
        return '{"boolValue":' + ("true" if value else "false") + "}"
    if isinstance(value, int):
        return '{"intValue":"' + str(int(value)) + '"}'
    if isinstance(value, float):
        return '{"doubleValue":' + _double(value) + "}"
    if isinstance(value, list | tuple):
        return '{"arrayValue":{"values":[' + ",".join(map(_value, value)) + "]}}"
    return '{"stringValue":' + _quoted(str(value)) + "}"


def _attributes(attributes: dict[str, Any]) -> str:
    return (
        "["
        + ",".join(
            '{"key":' + _quoted(key) + ',"value":' + _value(value) + "}"
            for key, value in attributes.items()
        )
        + "]"
    )


def _event(event: PlannedEvent) -> str:
    text = '{"timeUnixNano":"' + str(event.time_ns) + '","name":' + _quoted(event.name)
    if event.attributes:
        text += ',"attributes":' + _attributes(event.attributes)
    return text + "}"


def _span(trace_id: str, span: PlannedSpan) -> str:
    parts = ['{"traceId":"', trace_id, '","spanId":"', f"{span.span_id:016x}", '"']
    if span.parent_id is not None:
        parts += [',"parentSpanId":"', f"{span.parent_id:016x}", '"']
    parts += [',"name":', _quoted(span.name), ',"kind":', str(_KINDS[span.kind])]
    parts += [',"startTimeUnixNano":"', str(span.start_ns), '","endTimeUnixNano":"']
    parts += [str(span.end_ns), '"']
    if span.attributes:
        parts += [',"attributes":', _attributes(span.attributes)]
    if span.events:
        parts += [',"events":[', ",".join(map(_event, span.events)), "]"]
    if span.error:
        parts += [',"status":{"message":', _quoted(span.error), ',"code":2}']
    else:
        parts.append(',"status":{"code":2}' if span.error == "" else ',"status":{}')
    parts.append(f',"flags":{_FLAGS}}}')
    return "".join(parts)


def otlp_json(traces: Iterable[PlannedTrace]) -> str:
    """One ``ExportTraceServiceRequest`` holding every trace, as one line of OTLP JSON."""
    return "".join(otlp_json_pieces(traces))


def otlp_json_pieces(traces: Iterable[PlannedTrace]) -> Iterator[str]:
    """``otlp_json``'s text in pieces, one span at a time, as the traces come (a large
    suite's traces are never all in memory)."""
    resource = '{"attributes":' + _attributes({"service.name": SERVICE_NAME}) + "}"
    scope = '{"name":' + _quoted(SCOPE) + ',"version":' + _quoted(scope_version()) + "}"
    yield '{"resourceSpans":[{"resource":' + resource + ',"scopeSpans":[{"scope":' + scope
    yield ',"spans":['
    # Masked as results.json is, span by span (a secret is inside one of a span's JSON
    # strings, and has no character JSON escapes).
    scrub = Scrubber().text
    separator = ""
    for trace in traces:
        trace_id = f"{trace.trace_id:032x}"
        for span in trace.spans:
            yield separator + scrub(_span(trace_id, span))
            separator = ","
    yield "]}]}]}\n"


def write_file(path: Path, traces: Iterable[PlannedTrace]) -> None:
    """Write the traces to ``path`` as OTLP JSON (replacing it), as they come."""
    atomic_write(path, otlp_json_pieces(traces))
