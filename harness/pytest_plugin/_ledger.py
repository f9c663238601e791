"""What a session collected and what became of it: the collection ledger.

Each process keeps its own; an xdist worker sends its ledger to the controller when it
finishes (``as_sent``, ``take``), so that the controller, which collects nothing, knows
what the run collected. A baseline id the run collected but did not run is "not run" in
the diff, never "removed" (``not_run``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

if TYPE_CHECKING:
    from harness._results import Results

__all__ = ["CollectionLedger", "ShardMeta"]


class ShardMeta(TypedDict):
    """results.json's ``meta.shard`` (without ``not_run``): the shard this session ran,
    the plan's fingerprint, what it was planned by and how many ids it split."""

    index: int
    total: int
    plan: str
    by: str
    selected: int


@dataclass
class CollectionLedger:
    """What one session collected, deselected, skipped and could not load.

    Ids and files are relative to the project root, as results.json names them.
    """

    collected_ids: set[str] = field(default_factory=set)
    # Node id of a scenario file that did not load -> its error text (de-duplicated:
    # every xdist worker reports the same file), and the file as ids name it.
    collection_errors: dict[str, str] = field(default_factory=dict)
    unloaded_files: set[str] = field(default_factory=set)
    # Node ids deselected in a worker, for the controller's "N deselected".
    deselected: list[str] = field(default_factory=list)
    # Scenarios skipped (by a skip or skipif mark, a target whose framework is missing):
    # id -> why. Not run, so without an entry of their own in results.json.
    skipped: dict[str, str] = field(default_factory=dict)
    # --harness-shard (harness.pytest_plugin._sharding): this shard, and the ids it split.
    shard: ShardMeta | None = None
    planned_ids: set[str] = field(default_factory=set)

    @property
    def collected_files(self) -> set[str]:
        """The files of the collected scenarios (an id is ``path::name``)."""
        from harness._results import ScenarioId

        return {ScenarioId.parse(scenario_id).file for scenario_id in self.collected_ids}

    def shard_not_run(self) -> list[str]:
        """What was collected but not selected for this shard, or skipped: a merged diff's
        "not run" (results.json's ``meta.shard.not_run``)."""
        return sorted((self.collected_ids - self.planned_ids) | self.skipped.keys())

    def as_sent(self) -> dict[str, Any] | None:
        """What a worker sends the controller (plain data; None: nothing collected)."""
        if not (self.collected_ids or self.unloaded_files):
            return None
        return {
            "collected_ids": sorted(self.collected_ids),
            "unloaded_files": sorted(self.unloaded_files),
            "deselected": self.deselected,
            "shard": self.shard,
            "planned_ids": sorted(self.planned_ids),
        }

    def take(self, sent: dict[str, Any]) -> None:
        """The controller takes in what a worker collected (``as_sent``)."""
        self.collected_ids.update(sent["collected_ids"])
        self.unloaded_files.update(sent["unloaded_files"])
        if sent["shard"] is not None:  # every worker planned the same shard
            self.shard = sent["shard"]
            self.planned_ids.update(sent["planned_ids"])

    def extend(self, later: CollectionLedger) -> None:
        """Take in what a later session collected (a later part of a run in parts)."""
        self.collected_ids |= later.collected_ids
        self.collection_errors.update(later.collection_errors)
        self.unloaded_files |= later.unloaded_files
        self.deselected.extend(later.deselected)
        self.skipped.update(later.skipped)
        self.shard = self.shard or later.shard  # every part plans the same shard
        self.planned_ids |= later.planned_ids

    def not_run(
        self, baseline: Results, ran: set[str], root: Path, looked_at: Callable[[Path], bool]
    ) -> set[str]:
        """Baseline ids this run did not run and that are not gone: deselected, skipped,
        outside the paths it collected from (``looked_at``), or in a file that did not
        load. ``root``: the project root the ids are relative to."""
        collected_files = self.collected_files
        not_run = set()
        for old in baseline.scenarios:
            if old.id in ran:
                continue
            if old.id in self.collected_ids or old.file in self.unloaded_files:
                not_run.add(old.id)  # collected, then deselected, skipped or not reached
            elif old.file in collected_files:
                continue  # its file was collected and no longer holds it: removed
            elif (root / old.file).exists() or not looked_at(root / old.file):
                not_run.add(old.id)  # a file this run did not look at
            # else: the file is gone from where this run looked: removed
        return not_run
