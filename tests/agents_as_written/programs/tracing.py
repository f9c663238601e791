"""OpenTelemetry set up as OpenInference's docs show (a `TracerProvider` with a span
processor, the instrumentor given that provider), with the exporter a user gets from an
OpenTelemetry Collector's `file` exporter: one OTLP JSON `ExportTraceServiceRequest` a
line, written to `AAW_TRACE_FILE` (nothing is written when it is not set)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult


class OTLPJsonFileExporter(SpanExporter):
    """Spans as OTLP JSON lines, as the Collector's file exporter writes them."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        path = os.environ.get("AAW_TRACE_FILE")
        if path:
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(MessageToDict(encode_spans(spans))) + "\n")
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def tracer_provider() -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(OTLPJsonFileExporter()))
    return provider
