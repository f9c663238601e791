"""External agents (DESIGN section 10): any agent that speaks the OpenAI API, run as a
scenario's ``target``.

harness serves the scenario's model (script or cassette) on 127.0.0.1 with its own
server, observes every request and answer at that boundary, and rebuilds the run from
them (each API's bodies read by its wire, ``harness.wires``). Modules: ``observe`` (the
observed run), ``middleware`` (the ASGI observer in front of the served app), ``cassette``
(a cassette served over HTTP, and the recording proxy), ``targets`` (the built-in ``python`` and
``command`` kinds, and the frameworks' limit exceptions), ``runner`` (one target run).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# Imported on first use: plugin discovery imports ``targets`` (a built-in plugin) for
# every run, and the server, vcrpy and YAML must not load with it.
_WHERE = {
    "CassetteApp": "cassette",
    "Observation": "observe",
    "DEFAULT_TIMEOUT": "runner",
    "DUMMY_API_KEY": "runner",
    "TargetSpec": "runner",
    "run_target": "runner",
    "TargetCall": "targets",
    "TargetError": "targets",
    "TargetExit": "targets",
}

__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'harness.external' has no attribute {name!r}")
    return getattr(import_module(f"harness.external.{module}"), name)
