"""Request bodies read as JSON, the history an agent sends again decoded once.

An agent sends its whole conversation with every request, so a body is the one before it
with a few items more; decoded whole, a request cost the run's length (300 rounds on
Gemini: json.loads was most of the server's time, docs/performance.md#serving-every-wire).
The reader keeps the last bodies it read, with where each item of their top-level arrays
ends; a body whose text is one of those up to the end of an item takes the entries and
items before that point from it, and decodes the rest. The value is what ``json.loads``
makes of the body: anything the reader does not follow is decoded whole, the same way.
Items are shared between the bodies that hold them: nothing may change a body read.
A ``check`` given to ``read`` sees only what was decoded for this body (its ``Fresh``
values), so a check of each request (harness.serve._bounds) costs what is new too.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["BodyReader", "Fresh"]

_DECODER = json.JSONDecoder()
_SPACE = re.compile(r"[ \t\n\r]*")
# Bodies kept: one per conversation a client has going at once, within reason.
_KEPT = 4


class _Mark(NamedTuple):
    """Where an item of a top-level array ends: the offset after it, the index of its
    entry, and how many items of that array end there."""

    end: int
    entry: int
    items: int


class Fresh(NamedTuple):
    """A value decoded for this body, not taken from an earlier one: the top-level key
    it is under (None: the whole body), its index in that key's array (None: the key's
    value itself), the value."""

    key: str | None
    at: int | None
    value: Any


class _Read(NamedTuple):
    """A body read: its text, its entries (key, value) in order (an array's value is
    the list read), the marks of its arrays' items, and what was decoded for it."""

    text: str
    entries: list[tuple[str, Any]]
    marks: list[_Mark]
    fresh: list[Fresh]


class _Off(ValueError):
    """The text is not an object of the shape the reader follows: decode it whole."""


def _space(text: str, pos: int) -> int:
    return _SPACE.match(text, pos).end()  # type: ignore[union-attr]  # (matches "" at least)


def _expect(text: str, pos: int, char: str) -> int:
    """The offset after ``char`` at ``pos`` (whitespace before it skipped)."""
    pos = _space(text, pos)
    if text[pos : pos + 1] != char:
        raise _Off
    return pos + 1


def _items(text: str, pos: int, read: _Read, array: list[Any], started: bool) -> int:
    """Read an array's items from ``pos`` (after ``[``, or after an item when
    ``started``) to its ``]``: the offset after it. Each item that ends unambiguously (an
    object, an array, a string: a number could go on) is marked."""
    entry = len(read.entries) - 1
    pos = _space(text, pos)
    if text[pos : pos + 1] == "]":
        return pos + 1
    if started:
        pos = _space(text, _expect(text, pos, ","))
    while True:
        value, pos = _DECODER.raw_decode(text, pos)
        array.append(value)
        read.fresh.append(Fresh(read.entries[entry][0], len(array) - 1, value))
        if isinstance(value, dict | list | str):
            read.marks.append(_Mark(pos, entry, len(array)))
        pos = _space(text, pos)
        if text[pos : pos + 1] == "]":
            return pos + 1
        pos = _space(text, _expect(text, pos, ","))


def _entries(text: str, pos: int, read: _Read, inside: list[Any] | None) -> None:
    """Read the top-level object's entries from ``pos``: after ``{``, or, ``inside``
    the last entry's array, after one of its items; to the end of the text."""
    if inside is not None:
        pos = _items(text, pos, read, inside, True)
    else:
        pos = _space(text, pos)
        if text[pos : pos + 1] == "}":
            return _end(text, pos + 1)
        pos = _entry(text, pos, read)
    while True:
        pos = _space(text, pos)
        if text[pos : pos + 1] == "}":
            return _end(text, pos + 1)
        pos = _entry(text, _space(text, _expect(text, pos, ",")), read)


def _entry(text: str, pos: int, read: _Read) -> int:
    """Read one ``"key": value`` at ``pos``: the offset after it."""
    if text[pos : pos + 1] != '"':
        raise _Off
    key, pos = _DECODER.raw_decode(text, pos)
    pos = _space(text, _expect(text, pos, ":"))
    if text[pos : pos + 1] == "[":
        array: list[Any] = []
        read.entries.append((key, array))
        read.fresh.append(Fresh(key, None, []))  # the key itself; its items one by one
        return _items(text, pos + 1, read, array, False)
    value, pos = _DECODER.raw_decode(text, pos)
    read.entries.append((key, value))
    read.fresh.append(Fresh(key, None, value))
    return pos


def _end(text: str, pos: int) -> None:
    """Nothing but whitespace may follow the object (else json.loads says what)."""
    if _space(text, pos) != len(text):
        raise _Off


def _shared(text: str, earlier: _Read) -> int | None:
    """The index of the last mark of ``earlier`` up to which ``text`` is its text."""
    low, high, found = 0, len(earlier.marks) - 1, None
    while low <= high:
        middle = (low + high) // 2
        end = earlier.marks[middle].end
        if text.startswith(earlier.text[:end]):
            found, low = middle, middle + 1
        else:
            high = middle - 1
    return found


class BodyReader:
    """Reads request bodies (bytes) as ``json.loads`` would, decoding only what the
    bodies it read last did not already hold."""

    def __init__(self) -> None:
        self._recent: deque[_Read] = deque(maxlen=_KEPT)

    def clear(self) -> None:
        """Forget the bodies read."""
        self._recent.clear()

    def read(self, raw: bytes, check: Callable[[list[Fresh]], None] | None = None) -> Any:
        """The body's value (ValueError or UnicodeDecodeError as json.loads raises).

        ``check``, given what was decoded for this body, may refuse it by raising: a
        body refused is not kept, so no later body takes unchecked values from it."""
        text = raw.decode(json.detect_encoding(raw), "surrogatepass")
        start = _space(text, 0)
        if text[start : start + 1] != "{":
            return _whole_checked(text, check)
        best: tuple[_Read, int] | None = None
        for earlier in self._recent:
            index = _shared(text, earlier)
            if index is not None and (
                best is None or earlier.marks[index].end > best[0].marks[best[1]].end
            ):
                best = (earlier, index)
        try:
            read = self._resumed(text, best) if best else self._whole(text, start)
        except (_Off, ValueError, IndexError):
            return _whole_checked(text, check)
        if check is not None:
            check(read.fresh)
        read.fresh.clear()  # kept bodies hold what later ones share, nothing more
        if best is not None:
            self._recent.remove(best[0])  # the conversation's body is this one now
        self._recent.appendleft(read)
        return dict(read.entries)

    @staticmethod
    def _whole(text: str, start: int) -> _Read:
        read = _Read(text, [], [], [])
        _entries(text, start + 1, read, None)
        return read

    @staticmethod
    def _resumed(text: str, best: tuple[_Read, int]) -> _Read:
        """Read ``text`` from the mark ``best`` of a body read before, taking what that
        body held before the mark."""
        earlier, index = best
        mark = earlier.marks[index]
        key, value = earlier.entries[mark.entry]
        array = value[: mark.items]
        entries = [*earlier.entries[: mark.entry], (key, array)]
        read = _Read(text, entries, earlier.marks[: index + 1], [])
        _entries(text, mark.end, read, array)
        return read


def _whole_checked(text: str, check: Callable[[list[Fresh]], None] | None) -> Any:
    """``text`` decoded whole by json.loads, all of it fresh to ``check``."""
    value = json.loads(text)
    if check is not None:
        check([Fresh(None, None, value)])
    return value
