"""Planned traces as OTLP JSON: one ``ExportTraceServiceRequest`` on one line, as a
collector's file exporter writes it (and as ``harness freeze --trace`` reads it).

The encoding is the OTLP specification's JSON mapping of the protobuf messages: ids as
lowercase hex, 64-bit integers and times (unix nanoseconds) as strings, enums as numbers,
fields in the order of their numbers, fields holding their default value left out. It is
written here, from the planned spans, rather than through the SDK and protobuf's JSON
mapping (which writes ids as base64 and costs ten times as much: docs/performance.md);
tests/test_otel_export.py checks that the text is byte for byte what the SDK's OTLP
encoder makes of the same spans, with the ids as hex.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from harness.files import atomic_write
from harness.otel.spans import PlannedEvent, PlannedSpan, PlannedTrace
from harness.secrets import scrub_text

__all__ = ["SCOPE", "SERVICE_NAME", "otlp_json", "scope_version", "write_file"]

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


def _value(value: Any) -> dict[str, Any]:
    """An attribute value (``AnyValue``)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        if math.isfinite(value):
            return {"doubleValue": value}
        return {
            "doubleValue": "NaN"
            if math.isnan(value)
            else ("Infinity" if value > 0 else "-Infinity")
        }
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_value(item) for item in value]}}
    return {"stringValue": str(value)}


def _attributes(attributes: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": _value(value)} for key, value in attributes.items()]


def _event(event: PlannedEvent) -> dict[str, Any]:
    data: dict[str, Any] = {"timeUnixNano": str(event.time_ns), "name": event.name}
    if event.attributes:
        data["attributes"] = _attributes(event.attributes)
    return data


def _span(trace_id: str, span: PlannedSpan) -> dict[str, Any]:
    data: dict[str, Any] = {"traceId": trace_id, "spanId": f"{span.span_id:016x}"}
    if span.parent_id is not None:
        data["parentSpanId"] = f"{span.parent_id:016x}"
    data["name"] = span.name
    data["kind"] = _KINDS[span.kind]
    data["startTimeUnixNano"] = str(span.start_ns)
    data["endTimeUnixNano"] = str(span.end_ns)
    if span.attributes:
        data["attributes"] = _attributes(span.attributes)
    if span.events:
        data["events"] = [_event(event) for event in span.events]
    data["status"] = {"message": span.error, "code": 2} if span.error is not None else {}
    if span.error == "":
        data["status"] = {"code": 2}
    data["flags"] = _FLAGS
    return data


def otlp_json(traces: Sequence[PlannedTrace]) -> str:
    """One ``ExportTraceServiceRequest`` holding every trace, as one line of OTLP JSON."""
    spans = [_span(f"{trace.trace_id:032x}", span) for trace in traces for span in trace.spans]
    request = {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes({"service.name": SERVICE_NAME})},
                "scopeSpans": [
                    {"scope": {"name": SCOPE, "version": scope_version()}, "spans": spans}
                ],
            }
        ]
    }
    text = json.dumps(request, ensure_ascii=False, separators=(",", ":"))
    # Masked as results.json is, on the whole text (a secret has no character JSON escapes).
    return scrub_text(text) + "\n"


def write_file(path: Path, traces: Sequence[PlannedTrace]) -> None:
    """Write the traces to ``path`` as OTLP JSON (replacing it)."""
    atomic_write(path, otlp_json(traces))
