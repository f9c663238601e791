"""One session of a run in parts (``harness run --chunk-size``, docs/running.md#large-suites).

``harness run`` splits a large suite into parts, each a pytest session of its own (in a
process forked from harness's), then ends the run with a session that collects nothing
and writes and prints for the whole run (``harness.cli._parts``). A session learns that
it is one of them from a ``RunPart``: the whole run's paths, whether more comes after it,
and what the parts before it gathered. A part that ends with more to come hands its own
ledger and outputs on (``handed_on``; harness.cli._parts gathers them) and writes and
prints nothing; the run's end, or a part that stops the run, takes in what the parts
before gathered (``take_earlier``) and reports for the whole run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import pytest

if TYPE_CHECKING:
    from harness._spool import Blobs
    from harness.pytest_plugin._ledger import CollectionLedger
    from harness.pytest_plugin._outputs import SessionOutputs

__all__ = ["Earlier", "Gathered", "PartLine", "RunPart"]


class Gathered(NamedTuple):
    """What parts of a run in parts (``harness run --chunk-size``) collected and made."""

    ledger: CollectionLedger
    outputs: SessionOutputs


class Earlier(NamedTuple):
    """What the parts before a session of a run in parts gathered: the run's results
    file, which every part's spool writes to, and what the parts handed back, read when
    a session goes on from it (the run's end, or a part that stops the run)."""

    blobs: Blobs
    read: Callable[[], Gathered]


@dataclass(eq=False)
class RunPart:
    """What a session of a run in parts is told (the whole run's paths, whether more
    comes after it, what the parts before it gathered, the ids a listing round lists
    into, whether it is the run's end), and whether it handed on what it gathered."""

    run_paths: tuple[str, ...]
    to_come: bool
    earlier: Earlier | None
    # With --harness-shard, a run in parts first lists the ids each part selects here.
    ids_seen: list[str] | None = None
    # The run's end: it collects nothing, and writes and prints what the parts gathered.
    collects_nothing: bool = False
    # Set when the session ended with more to come: harness run gathers its ledger and
    # outputs, and the session wrote and printed nothing.
    handed_on: bool = False
    _gathered: Gathered | None = None

    def gathered(self) -> Gathered | None:
        """What the parts before this one gathered (read once: the files the parts
        handed back are read as they are opened); None for the first part."""
        if self._gathered is None and self.earlier is not None:
            self._gathered = self.earlier.read()
        return self._gathered

    def take_earlier(self, ledger: CollectionLedger, outputs: SessionOutputs) -> bool:
        """Make ``ledger`` and ``outputs`` the whole run's so far: what the parts before
        gathered, then this session's own. In place: the session's plugins hold them.
        False when there was nothing before (and nothing changed)."""
        run = self.gathered()
        if run is None:
            return False
        run.ledger.extend(ledger)
        run.outputs.extend(outputs)
        vars(ledger).update(vars(run.ledger))
        vars(outputs).update(vars(run.outputs))
        self.earlier = self._gathered = None
        return True


def _line(part: Any) -> str:
    """The line that names a part of a run in parts (``--harness-part K/N``)."""
    return f"harness: part {part.index} of {part.total} of the run (--chunk-size)"


class PartLine:
    """The pytest plugin that says which part of a run in parts a session is
    (``--harness-part K/N``), once: after collection, or under -n, where the controller
    collects nothing, when its first worker has collected."""

    NAME = "harness-part"

    def __init__(self, config: pytest.Config, part: Any) -> None:
        self.config = config
        self.part = part
        self.said = False

    def pytest_report_collectionfinish(self, config: pytest.Config) -> str | None:
        return _line(self.part)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        if self.said:
            return
        self.said = True
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(_line(self.part))
