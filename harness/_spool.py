"""Scenario results kept on disk: a session's (or a merge's) memory does not grow with
the text of every scenario it has run (docs/running.md#large-suites).

``Blobs`` keeps bytes in an unnamed temporary file (gone when closed, dropped, or when the
process ends); memory holds where each is. ``ResultSpool`` holds each result there as
JSON text, by scenario id (a session's items keep their packed scenarios in another).
``ScenarioList`` is results.json's ``scenarios`` read from a spool in order, one entry
parsed at a time: a reader that goes through it once holds one scenario at a time.
"""

from __future__ import annotations

import os
import tempfile
import threading
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator, MutableMapping, Sequence
from typing import TYPE_CHECKING, TypeVar, overload

from pydantic import BaseModel
from pydantic_core import from_json, to_json

from harness._modeljson import dump_json

if TYPE_CHECKING:
    from harness._results import ScenarioResult

# A model of a few of a scenario entry's fields (ScenarioList.read_as).
_Light = TypeVar("_Light", bound=BaseModel)

__all__ = ["Blobs", "ResultSpool", "ScenarioList", "read_as"]

# results.json's indent of a scenario entry's own text.
_INDENT = 2


class Blobs:
    """Bytes on disk: ``put`` returns where they are, ``get`` reads them back.

    Reads and writes take a lock (a run started ahead by --harness-concurrency reads from
    its own thread).

    Processes forked from the one that made the blobs, one after another (the parts of
    ``harness run --chunk-size``), share their file: each puts after what the others put,
    and what one pickles comes back by the file's number, as the maker's own Blobs.
    """

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile("w+b")  # noqa: SIM115 -- open as long as the blobs
        self._lock = threading.Lock()
        _LIVE[self._file.fileno()] = self

    def __reduce__(self) -> tuple[Callable[[int], Blobs], tuple[int]]:
        with self._lock:
            self._file.flush()  # for the process that reads them back
            return (_shared, (self._file.fileno(),))

    def put(self, data: bytes) -> tuple[int, int]:
        """Keep ``data``; its (offset, size), for ``get``."""
        with self._lock:
            at = self._file.seek(0, os.SEEK_END)  # after what any process sharing it put
            self._file.write(data)
        return (at, len(data))

    def get(self, where: tuple[int, int]) -> bytes:
        """The bytes ``put`` kept at ``where``."""
        at, size = where
        with self._lock:
            self._file.seek(at)
            return self._file.read(size)

    def close(self) -> None:
        """Remove the file."""
        self._file.close()


# The blobs made in this process, by their file's number (Blobs.__reduce__).
_LIVE: weakref.WeakValueDictionary[int, Blobs] = weakref.WeakValueDictionary()


def _shared(fileno: int) -> Blobs:
    """The Blobs of this process that a forked child pickled."""
    blobs = _LIVE.get(fileno)
    if blobs is None:
        raise ValueError("blobs come back only to the process that made them, forked")
    return blobs


class ResultSpool(MutableMapping[str, str]):
    """Scenario id -> its ScenarioResult as JSON text, the texts on disk.

    Setting an id again (a rerun) keeps the new text; iteration is in the order ids were
    first set, as a dict's. ``runs`` keeps which run of a repeated scenario an id is (for
    the order of results.json without reading the texts back).
    """

    def __init__(self, blobs: Blobs | None = None) -> None:
        """``blobs``: another spool's, to share its file (a part of a run in parts)."""
        self._blobs = blobs or Blobs()
        self._where: dict[str, tuple[int, int]] = {}
        self.runs: dict[str, int] = {}
        # What results.json's summary counts of each result added as a model (status,
        # termination, simulated time): the summary then reads no text back.
        self.counted: dict[str, tuple[str, str, float]] = {}

    def __setitem__(self, key: str, text: str) -> None:
        self._where[key] = self._blobs.put(text.encode("utf-8"))
        self.counted.pop(key, None)  # a text: what it holds is not known here

    def add(self, scenario: ScenarioResult, text: str | None = None) -> None:
        """Keep a scenario result under its id (and which run it is, if repeated), as
        results.json writes it (indented by two: ScenarioList.dumped takes it as it is).
        ``text``: that text, when it is at hand (a merged shard's entry, say)."""
        self[scenario.id] = text or dump_json(scenario, indent=_INDENT)
        if scenario.run is not None:
            self.runs[scenario.id] = scenario.run
        counted = (scenario.status, scenario.termination.value, scenario.sim_time)
        self.counted[scenario.id] = counted

    @property
    def blobs(self) -> Blobs:
        """Where the texts are (``ResultSpool(blobs)`` shares them)."""
        return self._blobs

    def extend(self, later: ResultSpool) -> None:
        """Take in the results of a spool sharing these blobs (a later part's)."""
        if later.blobs is not self._blobs:
            raise ValueError("a spool takes in only the results of one sharing its blobs")
        self._where.update(later._where)
        self.runs.update(later.runs)
        self.counted.update(later.counted)

    def __getitem__(self, key: str) -> str:
        return self._blobs.get(self._where[key]).decode("utf-8")

    def __delitem__(self, key: str) -> None:
        del self._where[key]  # its bytes stay in the file, unread
        self.runs.pop(key, None)
        self.counted.pop(key, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def order(self, key: str) -> tuple[str, int]:
        """Where an id goes in results.json: by the scenario's id, then by run number
        (``name[2]`` before ``name[10]``)."""
        run = self.runs.get(key)
        if run is None:
            return (key, 0)
        return (key.removesuffix(f"[{run}]"), run)

    def close(self) -> None:
        """Remove the file (the spool is empty after)."""
        self._where.clear()
        self.runs.clear()
        self.counted.clear()
        self._blobs.close()


class ScenarioList(Sequence["ScenarioResult"]):
    """Scenario results in a given order, each parsed from its spool when asked for.

    Every read parses anew: a change made to a scenario read from it is not kept, and
    a reader that needs the scenarios more than once reads them more than once (each
    pass holds one scenario at a time). ``of`` spools scenarios given in memory.
    """

    def __init__(
        self, spool: ResultSpool, ids: Sequence[str], read: Callable[[str], ScenarioResult]
    ) -> None:
        """``read``: a spooled text to its result (``ScenarioResult.model_validate_json``,
        given: harness._results imports this module, which does not import it back)."""
        self._spool = spool
        self._ids = list(ids)
        self._parse = read

    @classmethod
    def of(cls, scenarios: Iterable[ScenarioResult]) -> ScenarioList:
        """A list of these scenarios, in this order, each written to a new spool (and
        read back as its own class)."""
        spool = ResultSpool()
        ids: list[str] = []
        read: Callable[[str], ScenarioResult] | None = None
        for scenario in scenarios:
            read = read or type(scenario).model_validate_json
            key = f"{len(ids)}"  # ids may repeat in the input: positions never do
            spool[key] = dump_json(scenario)
            ids.append(key)
        return cls(spool, ids, read or _nothing_to_read)

    @property
    def ids(self) -> list[str]:
        """The spool keys in order (the scenario ids, for a session's spool)."""
        return list(self._ids)

    def dumped(self, *, indent: int, exclude: Collection[str] | None = None) -> Iterator[str]:
        """Each scenario's JSON text as ``model_dump_json(indent=, exclude=)`` writes it,
        in order, re-indented from its spooled text (a dump already: the same keys and
        values) without building a ScenarioResult; ``exclude``: top-level keys left out."""
        for key in self._ids:
            text = self._spool[key]
            if indent == _INDENT and not exclude and text.startswith("{\n"):
                yield text  # kept indented by ResultSpool.add
                continue
            data = from_json(text)
            for field in exclude or ():
                data.pop(field, None)
            yield to_json(data, indent=indent).decode("utf-8")

    def read_as(self, model: type[_Light]) -> Iterator[_Light]:
        """Each scenario's spooled text read into ``model``'s fields only, in order (a
        reader of a few fields parses much less than a whole ScenarioResult)."""
        for key in self._ids:
            yield model.model_validate_json(self._spool[key])

    def _read(self, key: str) -> ScenarioResult:
        return self._parse(self._spool[key])

    @overload
    def __getitem__(self, index: int) -> ScenarioResult: ...
    @overload
    def __getitem__(self, index: slice) -> list[ScenarioResult]: ...
    def __getitem__(self, index: int | slice) -> ScenarioResult | list[ScenarioResult]:
        if isinstance(index, slice):
            return [self._read(key) for key in self._ids[index]]
        return self._read(self._ids[index])

    def __iter__(self) -> Iterator[ScenarioResult]:
        for key in self._ids:
            yield self._read(key)

    def __len__(self) -> int:
        return len(self._ids)

    def __eq__(self, other: object) -> bool:
        """Equal to a sequence of equal scenarios in the same order (a list, say), as a
        list is: results read back compare with results made in memory."""
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __repr__(self) -> str:
        return f"<ScenarioList of {len(self._ids)} scenario results on disk>"


def read_as(
    scenarios: Sequence[ScenarioResult], model: type[_Light]
) -> Iterator[_Light | ScenarioResult]:
    """The scenarios in order, each with at least ``model``'s fields: read into those only
    when they are on disk (a ScenarioList), else as they are."""
    if isinstance(scenarios, ScenarioList):
        return scenarios.read_as(model)
    return iter(scenarios)


def _nothing_to_read(text: str) -> ScenarioResult:
    raise IndexError("an empty ScenarioList has no scenario to read")
