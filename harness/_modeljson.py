"""A pydantic model as JSON text (or data), with Ctrl-C kept a KeyboardInterrupt.

pydantic-core turns an exception raised inside a Python serializer (harness's results
have wrap serializers) into a ``PydanticSerializationError`` that names it only in its
text (``model_dump_json``) or as its cause (``model_dump``). A Ctrl-C landing while a
result is serialized (the signal handler raises in whatever Python code runs) would then
be a crash, pytest's INTERNALERROR and exit 3, instead of an interrupted run (130,
nothing written): ``dump_json`` and ``dump`` raise it again.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

__all__ = ["dump", "dump_json"]

# How pydantic-core names an exception a serializer raised: "Error calling function
# `name`: KeyboardInterrupt: ..." (inside "Error serializing to JSON: ...").
_INTERRUPTED = re.compile(r"Error calling function `[^`]*`: KeyboardInterrupt\b")


def _interrupted(exc: PydanticSerializationError) -> bool:
    """Whether a serializer raised KeyboardInterrupt (the cause, or named in the text)."""
    return isinstance(exc.__cause__, KeyboardInterrupt) or bool(_INTERRUPTED.search(str(exc)))


def dump_json(model: BaseModel, **options: Any) -> str:
    """``model.model_dump_json(**options)``; a Ctrl-C during it stays a KeyboardInterrupt."""
    try:
        return model.model_dump_json(**options)
    except PydanticSerializationError as exc:
        if _interrupted(exc):
            raise KeyboardInterrupt from exc
        raise


def dump(model: BaseModel, **options: Any) -> Any:
    """``model.model_dump(**options)``; a Ctrl-C during it stays a KeyboardInterrupt."""
    try:
        return model.model_dump(**options)
    except PydanticSerializationError as exc:
        if _interrupted(exc):
            raise KeyboardInterrupt from exc
        raise
