"""Hints for schema errors whose cause is the file's indentation, not its words.

A key indented one level too little is read as a sibling of the mapping it was meant
for (``final:`` under the top level instead of under ``expect:``): the schema then says
"unknown key" or "expected a mapping", true but not what the person needs to hear.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel

__all__ = ["dedent_hint"]

Path_ = tuple[str | int, ...]


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation can hold directly (through unions, Annotated)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _models(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _models(arg)]
    return []


def _keys_of(annotation: Any) -> set[str]:
    """The keys a mapping of this annotation accepts (empty when it is not a model)."""
    keys: set[str] = set()
    for model in _models(annotation):
        for name, field in model.model_fields.items():
            keys.add(field.alias or name)
    return keys


def _annotation_at(root: type[BaseModel], path: Path_) -> Any:
    """The annotation of the value at ``path`` (None when the path leaves the schema)."""
    annotation: Any = root
    for part in path:
        models = _models(annotation)
        if models and isinstance(part, str):
            fields = {f.alias or n: f for m in models for n, f in m.model_fields.items()}
            if part not in fields:
                return None
            annotation = fields[part].annotation
            continue
        origin = typing.get_origin(annotation)
        args = typing.get_args(annotation)
        if origin is dict and len(args) == 2 and isinstance(part, str):
            annotation = args[1]
        elif origin is list and args and isinstance(part, int):
            annotation = args[0]
        else:
            return None
    return annotation


def _shown(part: str | int) -> str:
    return "the top level" if part == "" else repr(part)


def dedent_hint(root: type[BaseModel], data: Any, path: Path_) -> str | None:
    """If the key at ``path`` belongs to the mapping just above it, say so."""
    if not path or not isinstance(path[-1], str):
        return None
    key, parent_path = path[-1], path[:-1]
    parent: Any = data
    for part in parent_path:
        try:
            parent = parent[part]
        except (KeyError, IndexError, TypeError):
            return None
    if not isinstance(parent, dict) or key not in parent:
        return None
    keys = list(parent)
    index = keys.index(key)
    if index == 0:
        return None
    before = keys[index - 1]
    if not isinstance(parent[before], dict | type(None)):
        return None
    if key not in _keys_of(_annotation_at(root, (*parent_path, before))):
        return None
    where = _shown(parent_path[-1]) if parent_path else "the top level"
    return (
        f"{key!r} is read as a key of {where} (by its indentation); if it belongs to "
        f"{before!r} above, indent it under {before!r}"
    )
