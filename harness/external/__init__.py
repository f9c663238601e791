"""External agents (docs/external.md): any agent that talks to its model over the OpenAI
(Chat Completions, Responses), Anthropic Messages or Gemini API, run as a scenario's
``target``.

harness serves the scenario's model (script or cassette) on 127.0.0.1 with its own
server, observes every request and answer at that boundary, and rebuilds the run from
them (each API's bodies read by its wire, ``harness.wires``). Modules: ``observe`` (the
observed run), ``middleware`` (the ASGI observer in front of the served app), ``cassette``
(a cassette served over HTTP, and the recording proxy), ``targets`` (the built-in ``python`` and
``command`` kinds, and the frameworks' limit exceptions), ``runner`` (one target run).
"""

from __future__ import annotations

import importlib
from typing import Any

# Imported on first use (name -> module): plugin discovery imports ``targets`` (a built-in
# plugin) for every run, and the server, vcrpy and YAML must not load with it.
_LAZY = {
    "CassetteApp": "harness.external._cassette",
    "Observation": "harness.external._observe",
    "DEFAULT_TIMEOUT": "harness.external._runner",
    "DUMMY_API_KEY": "harness.external._runner",
    "TargetSpec": "harness.external._runner",
    "run_target": "harness.external._runner",
    "TargetCall": "harness.external._targets",
    "TargetError": "harness.external._targets",
    "TargetExit": "harness.external._targets",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'harness.external' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)
