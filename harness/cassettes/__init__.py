"""vcrpy cassettes for recorded OpenAI traffic: format, matching, paths, sessions.

Imported lazily by the ``openai`` LLM source (vcrpy is only needed when a cassette is
used). The session's names are lazy too: reading a cassette file or its paths (an MCP
recording, ``harness validate``) does not import vcrpy.
"""

import importlib
from typing import Any

from harness.cassettes.format import (
    CassetteFormatError,
    LoadedInteraction,
    dump_cassette,
    load_cassette_file,
    load_cassette_text,
)
from harness.cassettes.matching import VOLATILE_FIELDS, BodyKeyer, ItemChain
from harness.cassettes.paths import default_cassette_path, resolve_cassette_path

# Imported on first use (name -> module): vcrpy, a second of a start on a loaded machine.
_LAZY = {
    "CassetteSession": "harness.cassettes.session",
    "ReplayStats": "harness.cassettes.session",
    "expected_key": "harness.cassettes.session",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'harness.cassettes' has no attribute {name!r}")
    return getattr(importlib.import_module(_LAZY[name]), name)


__all__ = [
    "VOLATILE_FIELDS",
    "BodyKeyer",
    "CassetteFormatError",
    "CassetteSession",
    "ItemChain",
    "LoadedInteraction",
    "ReplayStats",
    "default_cassette_path",
    "dump_cassette",
    "expected_key",
    "load_cassette_file",
    "load_cassette_text",
    "resolve_cassette_path",
]
