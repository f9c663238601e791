"""Planned traces sent to a collector over OTLP/HTTP, through the OpenTelemetry SDK.

The spans are the SDK's ``ReadableSpan``s made with the planned ids and times (what a
tracer hands its exporters), sent by the SDK's OTLP/HTTP exporter (protobuf). Needs the
``otel`` extra: ``pip install 'loop-harness[otel]'``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import islice
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from harness._secrets import Scrubber, scrub_text
from harness.otel._jsonfile import SCOPE, SERVICE_NAME, scope_version
from harness.otel._spans import PlannedTrace
from harness.otel._traced import OtelError

__all__ = ["endpoint_url", "readable_spans", "send"]

_INSTALL = "pip install 'loop-harness[otel]'"
# The exporter's logger: its reasons for a failed export are read from it.
_EXPORTER_LOGGERS = ("opentelemetry.exporter.otlp.proto.http", "opentelemetry.exporter.otlp.common")


def _sdk() -> Any:
    """The SDK's modules, or an OtelError saying how to install them."""
    try:
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        from opentelemetry.sdk import trace as sdk_trace
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
    except ImportError as exc:
        raise OtelError(
            f"OpenTelemetry export needs the SDK and its OTLP exporter ({exc.name} is not "
            f"installed): {_INSTALL}"
        ) from None
    return (
        encode_spans,
        sdk_trace,
        Resource,
        InstrumentationScope,
        (SpanContext, SpanKind, Status, StatusCode, TraceFlags),
    )


def readable_spans(traces: Sequence[PlannedTrace]) -> list[Any]:
    """The SDK's spans of the planned traces, in order (a trace's root first), with
    secrets masked as in every output harness writes."""
    _, sdk_trace, resource_type, scope_type, otel = _sdk()
    span_context, span_kind, status_type, status_code, trace_flags = otel
    resource = resource_type({"service.name": SERVICE_NAME})
    scope = scope_type(SCOPE, scope_version())
    scrubber = Scrubber()
    sampled = trace_flags(trace_flags.SAMPLED)
    kinds = {"internal": span_kind.INTERNAL, "client": span_kind.CLIENT}
    spans = []
    for trace in traces:
        for planned in trace.spans:
            context = span_context(trace.trace_id, planned.span_id, False, sampled)
            parent = (
                span_context(trace.trace_id, planned.parent_id, False, sampled)
                if planned.parent_id is not None
                else None
            )
            events = [
                sdk_trace.Event(event.name, scrubber.value(event.attributes), event.time_ns)
                for event in planned.events
            ]
            status = (
                status_type(status_code.ERROR, scrubber.text(planned.error))
                if planned.error is not None
                else status_type(status_code.UNSET)
            )
            spans.append(
                sdk_trace.ReadableSpan(
                    name=planned.name,
                    context=context,
                    parent=parent,
                    resource=resource,
                    attributes=scrubber.value(planned.attributes),
                    events=events,
                    kind=kinds[planned.kind],
                    status=status,
                    start_time=planned.start_ns,
                    end_time=planned.end_ns,
                    instrumentation_scope=scope,
                )
            )
    return spans


def endpoint_url(given: str) -> str:
    """The URL spans are posted to: ``given``, with ``/v1/traces`` when it names no path
    (``http://localhost:4318`` is a collector's base, as OTEL_EXPORTER_OTLP_ENDPOINT is)."""
    parts = urlsplit(given)
    if parts.path in ("", "/"):
        parts = parts._replace(path="/v1/traces")
    return urlunsplit(parts)


class _Reasons(logging.Handler):
    """Keeps what the exporter logs while it sends, to say why an export failed."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def _reasons() -> Iterator[_Reasons]:
    handler = _Reasons()
    loggers = [logging.getLogger(name) for name in _EXPORTER_LOGGERS]
    saved = [(logger.propagate, logger.level) for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.propagate = False  # said once, in harness's line, not on stderr as well
        if logger.level == logging.NOTSET or logger.level > logging.WARNING:
            logger.setLevel(logging.WARNING)
    try:
        yield handler
    finally:
        for logger, (propagate, level) in zip(loggers, saved, strict=True):
            logger.removeHandler(handler)
            logger.propagate = propagate
            logger.setLevel(level)


def _session() -> Any:
    """A requests session (what the exporter sends with) that keeps the first error a
    request raised: when the time runs out before a retry, the exporter logs no reason,
    and a retry past the deadline fails for that alone (the first error says why)."""
    import requests

    class Remembering(requests.Session):
        failure: BaseException | None = None

        def request(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return super().request(*args, **kwargs)
            except Exception as exc:
                if self.failure is None:
                    self.failure = exc
                raise

    return Remembering()


def _why(lines: list[str], failure: BaseException | None) -> str:
    """The exporter's reason for a failed export: its last line, and the error it met."""
    if not lines and failure is None:
        return "the exporter gave no reason"
    why = lines[-1] if lines else "the export failed"
    if failure is not None:
        why += f" ({failure})"
    else:
        retried = next((line for line in lines if line.startswith("Transient error")), None)
        if retried is not None and retried != why:
            why += f" ({retried.split(' encountered')[0]})"
    return why[:500]


# Traces sent in one request: a large suite's spans are never all in memory, and a request
# holds some hundreds of spans, about what the SDK's BatchSpanProcessor sends (512).
BATCH = 100


def send(endpoint: str, traces: Iterable[PlannedTrace], *, timeout: float | None = None) -> None:
    """Send the traces to a collector over OTLP/HTTP (protobuf), with the SDK's exporter,
    ``BATCH`` traces a request; the first request that fails stops the sending (the
    error says how many runs' traces went before it).

    Headers, and the time the exporter retries for (``timeout``; default 10 s), come from
    ``OTEL_EXPORTER_OTLP_HEADERS`` / ``..._TRACES_HEADERS`` and ``..._TRACES_TIMEOUT`` as for
    any OpenTelemetry exporter. An export that fails is an OtelError with the exporter's
    reason.
    """
    _sdk()
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import SpanExportResult
    except ImportError as exc:
        raise OtelError(
            f"--otel-endpoint needs the OTLP/HTTP exporter ({exc.name}): {_INSTALL}"
        ) from None
    url = endpoint_url(endpoint)
    session = _session()
    exporter = OTLPSpanExporter(endpoint=url, timeout=timeout, session=session)
    result = SpanExportResult.SUCCESS
    remaining = iter(traces)
    sent = 0
    try:
        with _reasons() as reasons:
            while result is SpanExportResult.SUCCESS and (batch := list(islice(remaining, BATCH))):
                # A batch's reasons are its own (an earlier batch may have retried and won).
                reasons.lines.clear()
                session.failure = None
                try:
                    result = exporter.export(readable_spans(batch))
                except ValueError:
                    # The SDK's retries can give requests a deadline already past (a
                    # retry's wait ending at it on a busy machine): urllib3 refuses the
                    # timeout, and the export has failed.
                    result = SpanExportResult.FAILURE
                sent += len(batch) if result is SpanExportResult.SUCCESS else 0
    finally:
        exporter.shutdown()
    if result is not SpanExportResult.SUCCESS:
        why = _why(reasons.lines, session.failure)
        before = f" (after {sent} run(s)' traces were sent)" if sent else ""
        raise OtelError(scrub_text(f"spans not sent to {url}{before}: {why}"))
