"""vcrpy cassettes for recorded OpenAI traffic: format, matching, paths, sessions.

Imported lazily by the ``openai`` LLM source (vcrpy is only needed when a cassette is
used).
"""

from harness.cassettes.format import (
    CassetteFormatError,
    LoadedInteraction,
    dump_cassette,
    load_cassette_file,
    load_cassette_text,
)
from harness.cassettes.matching import VOLATILE_FIELDS, BodyKeyer, ItemChain
from harness.cassettes.paths import default_cassette_path, resolve_cassette_path
from harness.cassettes.session import CassetteSession, ReplayStats, expected_key

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
