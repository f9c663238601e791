"""YAML that remembers where each value came from, so errors can name the line."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import yaml

from harness.errors import ScenarioError

__all__ = ["Located", "load_yaml"]

Path_ = tuple[str | int, ...]

# Deeply nested input (a fuzzer's, or an alias bomb) must end in a clear error, not a
# RecursionError or minutes of work.
_MAX_DEPTH = 60
_MAX_NODES = 200_000


@dataclass
class Located:
    """Parsed YAML data plus the line of every mapping key and sequence item."""

    data: Any
    lines: dict[Path_, int] = field(default_factory=dict)
    file: str = "<string>"

    def line_of(self, path: Path_) -> int | None:
        """The line of ``path``, or of its nearest ancestor present in the file."""
        path = tuple(path)
        while path:
            line = self.lines.get(path)
            if line is not None:
                return line
            path = path[:-1]
        return self.lines.get(())

    def error(self, path: Path_, message: str) -> ScenarioError:
        """A ScenarioError pointing at ``path``."""
        return ScenarioError.single(self.file, self.line_of(path), dotted(path), message)


def dotted(path: Path_) -> str:
    """``("llm", "script", 2, "tool_calls")`` -> ``llm.script.2.tool_calls``."""
    return ".".join(_shown_key(part) for part in path)


def _shown_key(part: str | int) -> str:
    # Odd keys (empty, spaces, control characters, dots) are quoted so the path stays
    # one readable line.
    text = str(part)
    if text and text.isprintable() and text.strip() == text and "." not in text:
        return text
    return repr(text)


def _loader_class() -> Any:
    """libyaml's parser when PyYAML has it (its wheels do): the pure-Python one is ~10x
    slower, and collecting a large suite is mostly parsing YAML.

    The C module survives a re-import of ``yaml`` (pytester's module snapshots do that)
    and keeps the node classes of the first import, which the resolver of the new one
    does not recognise; then the pure-Python parser is the correct one.
    """
    native = sys.modules.get("yaml._yaml")
    if (
        hasattr(yaml, "CSafeLoader")
        and getattr(native, "ScalarNode", None) is yaml.nodes.ScalarNode
    ):
        return yaml.CSafeLoader
    return yaml.SafeLoader


class _Builder:
    def __init__(self, loader: Any, file: str) -> None:
        self.loader = loader
        self.file = file
        self.lines: dict[Path_, int] = {}
        self.count = 0

    def fail(self, node: yaml.Node, path: Path_, message: str) -> ScenarioError:
        return ScenarioError.single(self.file, node.start_mark.line + 1, dotted(path), message)

    def build(self, node: yaml.Node, path: Path_, depth: int = 0) -> Any:
        self.count += 1
        if depth > _MAX_DEPTH or self.count > _MAX_NODES:
            raise self.fail(node, path, "the document is nested too deeply or is too large")
        # Node kinds by their `id`, not isinstance: libyaml's parser keeps the node classes
        # of the first `import yaml`, which a re-import (pytester's module snapshots) replaces.
        if node.id == "mapping":
            self.loader.flatten_mapping(node)  # YAML merge keys (<<)
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if key_node.id != "scalar":
                    raise self.fail(key_node, path, "mapping keys must be plain scalars")
                key = self.loader.construct_object(key_node)
                if not isinstance(key, str):
                    # YAML reads `on: x` or `1: x` as bool/int keys; scenario keys are names.
                    key = str(key).lower() if isinstance(key, bool) else str(key)
                if key in out:
                    raise self.fail(
                        key_node, (*path, key), f"duplicate key {key!r} (the later one would win)"
                    )
                self.lines[(*path, key)] = key_node.start_mark.line + 1
                out[key] = self.build(value_node, (*path, key), depth + 1)
            return out
        if node.id == "sequence":
            items = []
            for index, item in enumerate(node.value):
                self.lines[(*path, index)] = item.start_mark.line + 1
                items.append(self.build(item, (*path, index), depth + 1))
            return items
        return self.loader.construct_object(node, deep=True)


def load_yaml(text: str, file: str = "<string>") -> Located:
    """Parse one YAML document, keeping the line of every key and item.

    Raises ScenarioError (with the line) for syntax errors, unsupported tags, duplicate
    keys and empty documents.
    """
    try:
        loader = _loader_class()(text)
    except yaml.reader.ReaderError as exc:  # the reader rejects control characters up front
        line = text[: exc.position].count("\n") + 1
        raise ScenarioError.single(
            file, line, "", f"character #x{exc.character:04x} is not allowed in YAML ({exc.reason})"
        ) from None
    try:
        try:
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark else None
            problem = " ".join(p for p in (exc.context, exc.problem) if p)
            raise ScenarioError.single(file, line, "", f"YAML syntax error: {problem}") from None
        except yaml.YAMLError as exc:
            raise ScenarioError.single(file, None, "", f"YAML syntax error: {exc}") from None
        if node is None:
            raise ScenarioError.single(file, 1, "", "the file is empty; a scenario is a mapping")
        builder = _Builder(loader, file)
        builder.lines[()] = node.start_mark.line + 1
        try:
            data = builder.build(node, ())
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            raise ScenarioError.single(
                file, mark.line + 1 if mark else None, "", f"YAML error: {exc.problem or exc}"
            ) from None
        except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
            raise ScenarioError.single(file, None, "", f"YAML error: {exc}") from None
        return Located(data, builder.lines, file)
    finally:
        loader.dispose()
