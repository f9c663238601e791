"""YAML that remembers where each value came from, so errors can name the line."""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass, field
from typing import Any

import yaml

from harness._errors import ScenarioError

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
    # Literal block scalars (``key: |``): the line of their first line of text, so that a
    # line inside the text (a template's error, say) maps to a line of the file.
    literal_blocks: dict[Path_, int] = field(default_factory=dict)
    # Paths whose node came from another file (``extends:``, a cases file): that file's
    # name. Any other node is in ``file``.
    files: dict[Path_, str] = field(default_factory=dict)
    # Booleans as the file spelled them (`yes`, `on`, `True`): a message about one quotes it.
    spelled: dict[Path_, str] = field(default_factory=dict)

    def line_of(self, path: Path_) -> int | None:
        """The line of ``path``, or of its nearest ancestor present in the file."""
        path = tuple(path)
        while path:
            line = self.lines.get(path)
            if line is not None:
                return line
            path = path[:-1]
        return self.lines.get(())

    def file_of(self, path: Path_) -> str:
        """The file ``path`` (or its nearest ancestor present) was written in."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.files.get(path, self.file)
            path = path[:-1]
        return self.file

    def where(self, path: Path_) -> tuple[str, int | None]:
        """The file and line of ``path``: where a problem with it is shown."""
        return self.file_of(path), self.line_of(path)

    def text_line(self, path: Path_, line_in_text: int) -> int | None:
        """The file line of line ``line_in_text`` (1-based) of the string at ``path``.

        Exact for literal blocks (``|``), whose lines are the file's; other scalars fold
        or escape their line breaks, so their key's line is the best answer.
        """
        first = self.literal_blocks.get(tuple(path))
        if first is not None:
            return first + max(line_in_text, 1) - 1
        return self.line_of(path)

    def error(self, path: Path_, message: str) -> ScenarioError:
        """A ScenarioError pointing at ``path``."""
        return ScenarioError.single(*self.where(path), dotted(path), message)


def dotted(path: Path_) -> str:
    """``("llm", "script", 2, "tool_calls")`` -> ``llm.script.2.tool_calls``."""
    return ".".join(_shown_key(part) for part in path)


def _shown_key(part: str | int) -> str:
    # Odd keys (empty, spaces, control characters, dots, a leading quote) are quoted so
    # the path stays one readable, unambiguous line.
    text = str(part)
    if (
        text
        and text.isprintable()
        and text.strip() == text
        and "." not in text
        and text[0] not in "'\""
    ):
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


# The tags YAML gives a mapping and a sequence that carry none.
_IMPLICIT = {"mapping": "tag:yaml.org,2002:map", "sequence": "tag:yaml.org,2002:seq"}


class _Builder:
    def __init__(self, loader: Any, file: str) -> None:
        self.loader = loader
        self.file = file
        self.lines: dict[Path_, int] = {}
        self.literal_blocks: dict[Path_, int] = {}
        self.spelled: dict[Path_, str] = {}
        self.count = 0

    def fail(self, node: yaml.Node, path: Path_, message: str) -> ScenarioError:
        return ScenarioError.single(self.file, node.start_mark.line + 1, dotted(path), message)

    def construct(self, node: yaml.Node, path: Path_) -> Any:
        try:
            return self.loader.construct_object(node, deep=True)
        except yaml.MarkedYAMLError:
            raise
        except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
            # Say, `date: 2024-02-30`: a timestamp that is no date.
            raise self.fail(node, path, f"YAML error: {node.value!r}: {exc}") from None

    # Any, not yaml.Node: a node's kind is read by its `id`, which PyYAML's stubs declare
    # on the subclasses only, and its class may be another import's (see build).
    def check_tag(self, node: Any, path: Path_) -> None:
        """Refuse a tag written in the file: a value is read as written.

        PyYAML's safe loader refuses unknown tags on scalars but keeps a tagged mapping or
        sequence as a plain one, silently. A node's tag is the one its kind and text would
        resolve to unless the file gave another, so a different tag was written (a tag
        that changes nothing, ``!!str abc``, is harmless and passes unnoticed).
        """
        if node.id == "scalar":
            plain = node.style in (None, "")
            implicit = self.loader.resolve(yaml.ScalarNode, node.value, (plain, not plain))
        else:
            implicit = _IMPLICIT[node.id]
        if node.tag == implicit:
            return
        tag = node.tag.replace("tag:yaml.org,2002:", "!!", 1)
        hint = (
            f"; to make it text, quote it: {json.dumps(node.value)}" if node.id == "scalar" else ""
        )
        raise self.fail(
            node,
            path,
            f"a YAML tag ({tag}) is not allowed in a scenario file: remove it (values are "
            f"read as written){hint}",
        )

    def build(self, node: Any, path: Path_, depth: int = 0) -> Any:
        self.count += 1
        if depth > _MAX_DEPTH or self.count > _MAX_NODES:
            raise self.fail(node, path, "the document is nested too deeply or is too large")
        self.check_tag(node, path)
        # Node kinds by their `id`, not isinstance: libyaml's parser keeps the node classes
        # of the first `import yaml`, which a re-import (pytester's module snapshots) replaces.
        if node.id == "mapping":
            self.loader.flatten_mapping(node)  # YAML merge keys (<<)
            out: dict[str, Any] = {}
            for key_node, value_node in node.value:
                if key_node.id != "scalar":
                    raise self.fail(key_node, path, "mapping keys must be plain scalars")
                self.check_tag(key_node, path)
                key = self.construct(key_node, path)
                if not isinstance(key, str):
                    # Keys are names, kept as written: YAML 1.1 would read `on:` as True and
                    # `1.0:` as a float, silently renaming an argument or a tool.
                    key = key_node.value
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
        value = self.construct(node, path)
        if isinstance(value, float) and not math.isfinite(value):
            # json.dumps would write Infinity/NaN (not JSON) and a simulated clock at
            # infinity ends no run: every number in a scenario is finite.
            raise self.fail(
                node, path, f"{node.value} is not a finite number; numbers in a scenario are finite"
            )
        if node.id == "scalar" and node.style == "|":
            self.literal_blocks[path] = node.start_mark.line + 2
        if isinstance(value, bool):
            self.spelled[path] = node.value
        return value


# What YAML counts as line breaks (its marks count lines by them).
_BREAKS = re.compile("\r\n|[\r\n\x85\u2028\u2029]")


def _position_line(text: str, position: int) -> int:
    return len(_BREAKS.findall(text, 0, position)) + 1


def _mark_of(exc: yaml.MarkedYAMLError) -> Any:
    """Where to point: where the problem is, or where an unclosed quote was opened."""
    if "quoted scalar" in str(exc.context or "") and exc.context_mark is not None:
        return exc.context_mark
    return exc.problem_mark or exc.context_mark


def _syntax_message(text: str, exc: yaml.MarkedYAMLError) -> str:
    mark = _mark_of(exc)
    problem = " ".join(p for p in (exc.context, exc.problem) if p)
    if mark is None:
        return f"YAML syntax error: {problem}"
    lines = _BREAKS.split(text)
    row = lines[mark.line] if mark.line < len(lines) else ""
    where = f"YAML syntax error at column {mark.column + 1}"
    if row[mark.column : mark.column + 1] == "\t" or "tab" in str(exc.problem):
        return (
            f"{where}: a tab character; YAML indents with spaces only: replace the tab with spaces"
        )
    hint = _syntax_hint(lines, mark, exc)
    return f"{where}: {problem}" + (f"; {hint}" if hint else "")


def _syntax_hint(lines: list[str], mark: Any, exc: yaml.MarkedYAMLError) -> str | None:
    """What a person most likely meant, for the mistakes PyYAML words for parsers."""
    row = lines[mark.line] if mark.line < len(lines) else ""
    problem = str(exc.problem or "")
    if problem.startswith("mapping values are not allowed"):
        key, sep, value = row.strip().removeprefix("- ").partition(": ")
        if sep and (": " in value or value.endswith(":")):
            return (
                f"a value containing ': ' must be quoted: write {key}: "
                f"{json.dumps(value.strip(), ensure_ascii=False)}"
            )
        above = mark.line - 1
        while above >= 0 and not lines[above].strip():
            above -= 1
        if above >= 0:
            return (
                f"this line is indented more than line {above + 1} above it, so YAML reads "
                "it as the rest of that line's value; give keys of one mapping the same "
                "indentation"
            )
    if problem.startswith(("did not find expected key", "expected <block end>")):
        # A line indented under one whose value is complete (`final: {contains: x}` or
        # `input: hi`): YAML finds no key where the deeper indentation says one must be.
        above = mark.line - 1
        while above >= 0 and not lines[above].strip():
            above -= 1
        indent = len(row) - len(row.lstrip(" "))
        if above >= 0 and indent > len(lines[above]) - len(lines[above].lstrip(" ")):
            return (
                f"this line is indented more than line {above + 1} above it, whose value is "
                "complete; give keys of one mapping the same indentation (indent it under "
                "the key it belongs to, or not at all)"
            )
    context = exc.context_mark
    if "quoted scalar" in str(exc.context or "") and context is not None:
        return (
            f"the quoted string that starts at line {context.line + 1}, column "
            f"{context.column + 1} is never closed: add the closing quote"
        )
    return None


def _reader_error(file: str, text: str, exc: yaml.reader.ReaderError) -> ScenarioError:
    # The reader rejects control characters; its position counts characters.
    return ScenarioError.single(
        file,
        _position_line(text, exc.position),
        "",
        f"character #x{exc.character:04x} is not allowed in YAML ({exc.reason}); "
        "remove it or write it as an escape in a double-quoted string",
    )


def load_yaml(text: str, file: str = "<string>") -> Located:
    """Parse one YAML document, keeping the line of every key and item.

    Raises ScenarioError (with the line) for syntax errors, unsupported tags, duplicate
    keys and empty documents.
    """
    try:
        loader = _loader_class()(text)
    except yaml.reader.ReaderError as exc:  # the pure-Python reader checks up front
        raise _reader_error(file, text, exc) from None
    try:
        try:
            node = loader.get_single_node()
        except yaml.reader.ReaderError as exc:  # libyaml's reader checks as it goes
            raise _reader_error(file, text, exc) from None
        except yaml.MarkedYAMLError as exc:
            mark = _mark_of(exc)
            # At the end of the stream the mark is past the last line: name the last one.
            line = min(mark.line + 1, _position_line(text, len(text))) if mark else None
            raise ScenarioError.single(file, line, "", _syntax_message(text, exc)) from None
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
        return Located(data, builder.lines, file, builder.literal_blocks, spelled=builder.spelled)
    finally:
        loader.dispose()
