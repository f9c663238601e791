"""The shrunk scenario as a file: the original's YAML with the shrinker's edits made to it
(ruamel.yaml's round trip keeps its comments, key order and flow style), under a header
saying what was removed."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.scalarstring import PlainScalarString, SingleQuotedScalarString
from ruamel.yaml.tokens import CommentToken
from ruamel.yaml.util import load_yaml_guess_indent

from harness._errors import HarnessError
from harness.cassettes._format import readable_yaml
from harness.scenario._yamlsource import load_yaml
from harness.shrink._draft import Edit

__all__ = ["render"]


def _yaml(text: str) -> YAML:
    """A round-trip YAML with the file's own indentation (guessed from its text)."""
    yaml = YAML()
    yaml.width = 4096  # lines stay as long as they were; new ones are not folded
    yaml.preserve_quotes = True
    yaml.brace_single_entry_mapping_in_flow_sequence = True  # [{tool: {...}}] stays so
    try:
        _, sequence, offset = load_yaml_guess_indent(text)
    except Exception:  # guessing reads the text once more; any doubt keeps the defaults
        sequence, offset = None, None
    yaml.indent(mapping=2, sequence=sequence or 4, offset=offset if offset is not None else 2)
    return yaml


def render(original: str, edits: Sequence[Edit], final: dict[str, Any], header: list[str]) -> str:
    """The original text with ``edits`` made (the scenario's only), under ``header``; the
    plain YAML of ``final`` when the round trip would not give exactly it."""
    lines = "".join(f"# {line}\n" if line else "#\n" for line in header)
    try:
        text = _edited(original, edits)
        if load_yaml(text).data == final:
            return lines + text
    except (HarnessError, ValueError, KeyError, IndexError, TypeError, AttributeError):
        pass
    # The comments could not be kept: the data, written plainly, is what matters.
    return lines + readable_yaml(final, fast=False)


def _edited(original: str, edits: Sequence[Edit]) -> str:
    yaml = _yaml(original)
    data = yaml.load(original)
    for edit in edits:
        if edit.path[0] != "scenario":
            continue  # a cassette: written whole, beside the scenario
        path = edit.path[1:]
        grandparent, parent = None, data
        for key in path[:-1]:
            grandparent, parent = parent, parent[key]
        if edit.op == "delete":
            _delete(parent, path[-1], grandparent, path[-2] if len(path) > 1 else None)
        elif path == ("name",) and "name" not in data:
            data.insert(0, "name", _node(edit.value))  # a name goes first, as files have it
        else:
            parent[path[-1]] = _node(edit.value)
    out = io.StringIO()
    yaml.dump(data, out)
    text = out.getvalue()
    # The last line's break may go with a removed last entry's comment.
    return text if text.endswith("\n") else text + "\n"


def _node(value: Any) -> Any:
    """``value`` as ruamel.yaml should write it for PyYAML (YAML 1.1, which the loader
    reads) to read it back the same: text that would read as something else is quoted."""
    if isinstance(value, dict):
        return CommentedMap((k, _node(v)) for k, v in value.items())
    if isinstance(value, list):
        return CommentedSeq(_node(v) for v in value)
    if not isinstance(value, str):
        return value
    if "\n" in value:
        return value
    try:
        same = value != "" and yaml.safe_load(value) == value
    except yaml.YAMLError:
        same = False
    # Typed, so the style of the value replaced is not carried over (a folded `>` stays).
    return PlainScalarString(value) if same else SingleQuotedScalarString(value)


def _delete(container: Any, key: Any, parent: Any, parent_key: Any) -> None:
    """Delete ``key``, and with it the comment lines written above it; the lines above
    the next entry (held by this one) go to the entry before, or above the first."""
    keys = list(container) if isinstance(container, CommentedMap) else list(range(len(container)))
    at = keys.index(key)
    if isinstance(container, CommentedMap | CommentedSeq):
        mine = _tail(container, key)
        _, above_next = _split(_token(*mine) if mine is not None else None)
        if at > 0:
            before = _tail(container, keys[at - 1])
            if before is not None:
                holder, slot = before
                eol, _ = _split(_token(holder, slot))
                _set_token(holder, slot, eol + above_next)
        elif isinstance(parent, CommentedMap) and parent_key in parent.ca.items:
            _set_above_first(parent.ca.items[parent_key], above_next)
    del container[key]


def _set_above_first(holder: list[Any], text: str) -> None:
    """The comment lines above a block collection's first entry (held by its key)."""
    tokens = holder[3] if isinstance(holder[3], list) else []
    column = tokens[0].column if tokens and isinstance(tokens[0], CommentToken) else 0
    text = text.lstrip(" ")
    holder[3] = [CommentToken(text, CommentMark(column or 0), None)] if text.strip() else None


def _tail(container: Any, key: Any) -> tuple[list[Any], int] | None:
    """Where the comment after ``container[key]`` is held: (the item's comment list, slot)."""
    value = container[key]
    if isinstance(value, CommentedMap | CommentedSeq) and len(value) and not _flow(value):
        last = list(value)[-1] if isinstance(value, CommentedMap) else len(value) - 1
        return _tail(value, last)
    if not isinstance(container, CommentedMap | CommentedSeq):
        return None
    slot = 2 if isinstance(container, CommentedMap) else 0
    items = container.ca.items.setdefault(key, [None, None, None, None])
    return items, slot


def _flow(node: Any) -> bool:
    return bool(node.fa.flow_style())


def _token(holder: list[Any], slot: int) -> str:
    token = holder[slot]
    return token.value if isinstance(token, CommentToken) else ""


def _split(text: str | None) -> tuple[str, str]:
    """A held comment's end-of-line part (its first line, when it is one) and its
    full-line part (the lines above the next entry)."""
    if not text:
        return "", ""
    if text.startswith("#"):
        first, _, rest = text.partition("\n")
        return first + "\n", rest
    return "", text.lstrip("\n")


def _set_token(holder: list[Any], slot: int, text: str) -> None:
    if not text.strip():
        holder[slot] = None
        return
    if not text.startswith("#"):
        text = "\n" + text  # no end-of-line comment: the lines start on the next line
    column = holder[slot].column if isinstance(holder[slot], CommentToken) else 0
    holder[slot] = CommentToken(text, CommentMark(column or 0), None)
