"""OpenTelemetry out: harness runs as traces in the GenAI semantic conventions.

``plan_trace(TracedRun, Clock)`` plans one run's spans (``invoke_agent``, ``chat``,
``execute_tool``, evaluation events) from its typed record, with no OpenTelemetry code;
``write_file`` writes planned traces as OTLP JSON (``otlp_json``), and ``send`` posts them
to a collector over OTLP/HTTP through the OpenTelemetry SDK and its OTLP exporter (the
``otel`` extra, imported when first used). The engine never imports this package; ``harness run
--otel`` and ``--otel-endpoint`` (the pytest plugin's session) call it with the results of
the session's runs. Reading traces back into scenarios is ``harness freeze --trace``
(``harness.freeze``). docs/otel.md is the user's page.
"""

from __future__ import annotations

import importlib
from typing import Any

from harness.otel._jsonfile import otlp_json, write_file
from harness.otel._spans import PlannedEvent, PlannedSpan, PlannedTrace, plan_trace
from harness.otel._traced import Clock, Evaluation, OtelError, RunFacts, TracedRun

__all__ = [
    "Clock",
    "Evaluation",
    "OtelError",
    "PlannedEvent",
    "PlannedSpan",
    "PlannedTrace",
    "RunFacts",
    "TracedRun",
    "endpoint_url",
    "otlp_json",
    "plan_trace",
    "readable_spans",
    "send",
    "write_file",
]

# Imported on first use (name -> module): they load the OpenTelemetry SDK.
_LAZY = {
    "endpoint_url": "harness.otel._collector",
    "readable_spans": "harness.otel._collector",
    "send": "harness.otel._collector",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'harness.otel' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
