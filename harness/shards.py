"""Shards: a suite split over machines, and their results merged back into one.

``plan`` splits a suite's ids into N shards, the same way on every machine: with
durations from an earlier results.json the longest scenarios are placed first, each on
the shard with the least time so far (ties: the lower shard), else scenarios are dealt
out by count in id order. ``merge`` joins the shards' results.json files into the one a
serial run would have written, refusing (in one line) files that do not belong together.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.errors import HarnessError
from harness.results import Results, build_results

__all__ = ["MergeError", "Shard", "durations_of", "merge", "plan", "plan_digest"]


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
    return {s.id: s.wall_time for s in results.scenarios}


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
    versions, a scenario id in two files.
    """
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
    versions = {name: _harness_version(results) for name, results in files}
    if len(set(versions.values())) > 1:
        shown = ", ".join(f"{name}: harness {v}" for name, v in versions.items())
        raise MergeError(f"shards written by different harness versions ({shown})")
    owner: dict[str, str] = {}
    scenarios = []
    for name, results in files:
        for scenario in results.scenarios:
            if scenario.id in owner:
                raise MergeError(
                    f"scenario {scenario.id} is in both {owner[scenario.id]} and {name}"
                )
            owner[scenario.id] = name
            scenarios.append(scenario)
    return _merged(files, scenarios, first["total"], metas)


def _merged(
    files: Sequence[tuple[str, Results]],
    scenarios: list[Any],
    total: int,
    metas: list[tuple[str, dict[str, Any]]],
) -> Results:
    merged = build_results(scenarios)
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


def _harness_version(results: Results) -> str | None:
    versions = results.meta.get("versions")
    return versions.get("harness") if isinstance(versions, dict) else None
