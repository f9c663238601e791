"""vcrpy cassettes for recorded OpenAI traffic: format, matching, paths, sessions.

Imported lazily by the ``openai`` LLM source (vcrpy is only needed when a cassette is
used). The session's names are lazy too: reading a cassette file or its paths (an MCP
recording, ``harness validate``) does not import vcrpy.
"""

import importlib
from typing import Any

from harness.cassettes._format import (
    CassetteFormatError,
    load_cassette_file,
)
from harness.cassettes._paths import default_cassette_path, resolve_cassette_path

# Imported on first use (name -> module): vcrpy, a second of a start on a loaded machine.
_LAZY = {
    "CassetteSession": "harness.cassettes._session",
    "ReplayStats": "harness.cassettes._session",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'harness.cassettes' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)


__all__ = [
    "CassetteFormatError",
    "CassetteSession",
    "ReplayStats",
    "default_cassette_path",
    "load_cassette_file",
    "resolve_cassette_path",
]
