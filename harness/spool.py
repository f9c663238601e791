"""Scenario results kept on disk as they arrive: a session's memory does not grow with
the text of every scenario it has run (docs/running.md#large-suites).

Each result is one JSON line appended to an unnamed temporary file (gone when closed or
when the process ends); memory holds where each line is, by scenario id.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, MutableMapping

__all__ = ["ResultSpool"]


class ResultSpool(MutableMapping[str, str]):
    """Scenario id -> its ScenarioResult as JSON text, the texts on disk.

    Setting an id again (a rerun) keeps the new text; iteration is in the order ids were
    first set, as a dict's.
    """

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile("w+b")  # noqa: SIM115 -- open as long as the spool
        self._end = 0
        self._where: dict[str, tuple[int, int]] = {}

    def __setitem__(self, key: str, text: str) -> None:
        data = text.encode("utf-8")
        self._file.seek(self._end)
        self._file.write(data)
        self._file.write(b"\n")
        self._where[key] = (self._end, len(data))
        self._end += len(data) + 1

    def __getitem__(self, key: str) -> str:
        at, size = self._where[key]
        self._file.seek(at)
        return self._file.read(size).decode("utf-8")

    def __delitem__(self, key: str) -> None:
        del self._where[key]  # its line stays in the file, unread

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def close(self) -> None:
        """Remove the file (the spool is empty after)."""
        self._where.clear()
        self._file.close()
