"""Shards: a suite split over machines, and their results merged back into one.

``plan`` splits a suite's ids into N shards, the same way on every machine: with
durations from an earlier results.json the longest scenarios are placed first, each on
the shard with the least time so far (ties: the lower shard), else scenarios are dealt
out by count in id order. ``merge_files`` joins the shards' results.json files into the one
a serial run would have written, refusing (in one line) files that do not belong together;
it reads them one scenario entry at a time and keeps the merged scenarios on disk.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from harness._coverage import Coverage
from harness._coverage import merged as merged_coverage
from harness._errors import HarnessError
from harness._results import Results, ScenarioResult, written_by
from harness._runbudget import merge_budgets
from harness._spool import ResultSpool

__all__ = [
    "MergeError",
    "Shard",
    "durations_of",
    "merge",
    "merge_files",
    "part_of",
    "plan",
    "plan_digest",
]


class MergeError(HarnessError):
    """Shard results that cannot be merged; the message is one line for people."""


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``total`` (1-based, as ``--shard K/N`` names it)."""

    index: int
    total: int

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``K/N`` with 1 <= K <= N; ValueError saying what is wrong otherwise."""
        index, slash, total = text.partition("/")
        if not slash or not index.strip().isdigit() or not total.strip().isdigit():
            raise ValueError(f"expected K/N (say 2/4), got {text!r}")
        shard = cls(int(index), int(total))
        if not 1 <= shard.index <= shard.total:
            raise ValueError(f"{text!r}: K must be between 1 and N")
        return shard


def durations_of(results: Results) -> dict[str, float]:
    """Each scenario's wall time in a results file, by id (the shard plan's weights)."""
    return {s.id: s.wall_time for s in results.counted()}


def plan(
    ids: Sequence[str], total: int, durations: Mapping[str, float] | None = None
) -> list[list[str]]:
    """The ids of each of ``total`` shards (each list in id order).

    With ``durations``: longest-first greedy, an id missing from them weighing the mean of
    those known (a scenario added since). Without: by count, dealt out in id order.
    """
    ordered = sorted(set(ids))
    shards: list[list[str]] = [[] for _ in range(total)]
    if not durations:
        for i, scenario_id in enumerate(ordered):
            shards[i % total].append(scenario_id)
        return shards
    known = [durations[i] for i in ordered if i in durations]
    default = sum(known) / len(known) if known else 1.0
    weighted = sorted(ordered, key=lambda i: (-max(durations.get(i, default), 0.0), i))
    loads = [(0.0, shard) for shard in range(total)]  # (time so far, shard): a heap
    for scenario_id in weighted:
        load, shard = heapq.heappop(loads)
        shards[shard].append(scenario_id)
        heapq.heappush(loads, (load + max(durations.get(scenario_id, default), 0.0), shard))
    return [sorted(ids_) for ids_ in shards]


def part_of(path: str, total: int) -> int:
    """Which of ``total`` parts (1-based) a scenario file falls in (``harness run
    --chunk-size``): decided by the file's path alone (relative to where the run started),
    so that every file pytest finds is in exactly one part, without a list of them."""
    digest = hashlib.sha256(path.replace("\\", "/").encode()).digest()
    return int.from_bytes(digest[:8], "big") % total + 1


def plan_digest(ids: Sequence[str], total: int, durations: Mapping[str, float] | None) -> str:
    """A short fingerprint of a plan's inputs: shards of one plan share it."""
    weights = {i: durations[i] for i in sorted(set(ids)) if durations and i in durations}
    text = json.dumps([total, sorted(set(ids)), weights], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _shard_meta(name: str, results: Results) -> dict[str, Any]:
    shard = results.meta.get("shard")
    if not isinstance(shard, dict) or not {"index", "total", "plan"} <= shard.keys():
        raise MergeError(
            f"{name} is not a shard's results (no meta.shard): run it with --shard K/N"
        )
    return shard


def merge(files: Sequence[tuple[str, Results]]) -> Results:
    """One results file from the shards' (``name``: how messages name each file).

    Refused with MergeError: a file that is no shard, shards of different plans (another
    suite, selection, N or --durations), a shard given twice or missing, different harness
    versions, a scenario id in two files. The merged scenarios are kept on disk.
    """
    total, metas = _checked(files)
    joined = _Joined()
    for name, results in files:
        for scenario in results.scenarios:
            joined.add(name, scenario)
    return joined.merged(files, total, metas)


def merge_files(names: Sequence[str]) -> Results:
    """``merge`` of the shards' results.json files, each read one scenario entry at a
    time into one spool on disk (memory holds one scenario, whatever the suite's size).

    ResultsFileError first, as ``load_results`` words it, for a file that cannot be
    used (every file is read before the shards are checked together); then MergeError.
    """
    from harness._results import Entry, entry_text, read_streamed

    joined = _Joined()

    def add(name: str, entry: Entry) -> None:
        joined.add(name, entry.scenario, entry_text(entry, indent=2))

    heads = [(name, read_streamed(name, partial(add, name), what="shard")) for name in names]
    total, metas = _checked(heads)
    return joined.merged(heads, total, metas)


def _checked(files: Sequence[tuple[str, Results]]) -> tuple[int, list[tuple[str, dict[str, Any]]]]:
    """The shards' number and their meta.shard, once they are known to belong together."""
    if not files:
        raise MergeError("no shard results given")
    metas = [(name, _shard_meta(name, results)) for name, results in files]
    first_name, first = metas[0]
    seen: dict[int, str] = {}
    for name, meta in metas:
        if meta["total"] != first["total"] or meta["plan"] != first["plan"]:
            raise MergeError(
                f"{name} (shard {meta['index']}/{meta['total']}) and {first_name} (shard "
                f"{first['index']}/{first['total']}) are shards of different plans: run every "
                "shard over the same suite, selection, N and --durations"
            )
        if meta["index"] in seen:
            shown = f"{meta['index']}/{meta['total']}"
            raise MergeError(f"shard {shown} given twice: {seen[meta['index']]} and {name}")
        seen[meta["index"]] = name
    missing = sorted(set(range(1, first["total"] + 1)) - seen.keys())
    if missing:
        listed = ", ".join(f"{k}/{first['total']}" for k in missing)
        raise MergeError(f"missing shard(s) {listed}: merge needs all {first['total']}")
    versions = {name: written_by(results) for name, results in files}
    if len(set(versions.values())) > 1:
        shown = ", ".join(f"{name}: harness {v}" for name, v in versions.items())
        raise MergeError(f"shards written by different harness versions ({shown})")
    return first["total"], metas


class _Joined:
    """The shards' scenarios gathered into one spool, each id from one shard only."""

    def __init__(self) -> None:
        self.spool = ResultSpool()
        self.owner: dict[str, str] = {}
        # The first id found in two files: refused once the shards are known to belong
        # together (a mismatch of plans says more than the ids it repeats).
        self.twice: str | None = None

    def add(self, name: str, scenario: ScenarioResult, text: str | None = None) -> None:
        """Keep one shard's scenario (``name``: its file; ``text``: its entry's text as
        results.json writes it, when at hand)."""
        if scenario.id in self.owner:
            if self.twice is None:
                owner = self.owner[scenario.id]
                self.twice = f"scenario {scenario.id} is in both {owner} and {name}"
            return
        self.owner[scenario.id] = name
        self.spool.add(scenario, text)

    def merged(
        self,
        files: Sequence[tuple[str, Results]],
        total: int,
        metas: list[tuple[str, dict[str, Any]]],
    ) -> Results:
        """The merged results (their scenarios on disk) with the shards' meta joined."""
        if self.twice is not None:
            raise MergeError(self.twice)
        from harness._results import build_results

        merged = build_results(self.spool)
        merged.coverage = _coverage(files)
        merged.budget = merge_budgets([r.budget for _, r in files])
        started = sorted(str(r.meta.get("started")) for _, r in files if r.meta.get("started"))
        meta: dict[str, Any] = {"versions": files[0][1].meta.get("versions", {})}
        if started:
            meta["started"] = started[0]
        meta["merged"] = {"shards": total}
        not_run = sorted({i for _, m in metas for i in m.get("not_run", [])})
        if not_run:
            meta["not_run"] = not_run
        merged.meta = meta
        return merged


def _coverage(files: Sequence[tuple[str, Results]]) -> Coverage | None:
    """The shards' coverage joined (docs/coverage.md): the union of their tables, which is
    the serial run's; None when no shard recorded coverage. A shard without it beside
    shards with it is refused: the merged table would lack its scenarios."""
    without = [name for name, results in files if results.coverage is None]
    if len(without) == len(files):
        return None
    if without:
        raise MergeError(
            f"{without[0]} has no coverage and other shards have: run every shard with "
            "--coverage (or none)"
        )
    return merged_coverage(results.coverage for _, results in files if results.coverage is not None)
