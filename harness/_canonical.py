"""Canonical JSON: equal data gives equal text (stagnation signatures, match keys, caches)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["canonical_json"]

# One encoder for every call: json.dumps with options builds a new one each time.
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
)


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces (non-JSON values as their ``str``)."""
    return _CANONICAL.encode(value)
