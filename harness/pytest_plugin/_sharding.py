"""``--harness-shard K/N [--harness-durations PATH]``: run one shard of the selection.

Every shard collects the whole suite and keeps its part of what ``-k``, ``-m`` and the
paths selected (this hook runs after theirs), planned by ``harness._shards.plan`` from the
selected ids alone, so every machine computes the same split. The shard, the plan's
fingerprint and what was collected but not selected go into results.json's
``meta.shard``: ``harness merge`` checks the shards against each other with them.

A run in parts (``harness run --chunk-size``) selects one part per session: a first round
of ``--collect-only`` sessions lists what every part selected (``RunPart.ids_seen``),
and each part's session plans over that list (``--harness-shard-ids``), so the shard
holds what it would hold in one session.
"""

from __future__ import annotations

from typing import Any

import pytest

from harness.pytest_plugin._ledger import ShardMeta
from harness.pytest_plugin._session import get_state

__all__ = ["item_key", "pytest_collection_modifyitems"]


def item_key(item: pytest.Item) -> str:
    """What the plan calls an item: a scenario's id, any other test's node id; the runs
    of a sequential scenario are one (each needs the ones before it: one shard)."""
    sequential: Any = item  # a ScenarioItem of a sequential scenario
    if getattr(sequential, "sequential", None) is not None:
        return str(sequential.scenario_key)
    return _item_id(item)


def _item_id(item: pytest.Item) -> str:
    return getattr(item, "scenario_id", None) or item.nodeid


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Keep this shard's items; deselect the others."""
    state = get_state(config)
    if state is None or state.options.shard is None:
        return
    from harness._shards import plan, plan_digest

    shard, durations = state.options.shard, state.options.durations
    keys = [item_key(item) for item in items]
    ids_seen = state.part.ids_seen if state.part is not None else None
    if ids_seen is not None:  # the listing round of a run in parts: no plan yet
        ids_seen.extend(keys)
        return
    # A run in parts plans over what every part selected (its listing round's ids).
    suite = keys if state.options.shard_ids is None else state.options.shard_ids
    mine = set(plan(suite, shard.total, durations)[shard.index - 1])
    kept = [item for item, key in zip(items, keys, strict=True) if key in mine]
    others = [item for item, key in zip(items, keys, strict=True) if key not in mine]
    if others:
        config.hook.pytest_deselected(items=others)
    items[:] = kept
    state.ledger.shard = ShardMeta(
        index=shard.index,
        total=shard.total,
        plan=plan_digest(suite, shard.total, durations),
        by="durations" if durations else "count",
        selected=len(set(suite)),
    )
    # What this session planned for: the suite's ids it collected (in a run in parts,
    # this part's: the parts' sets make the suite's, and no part holds all of them).
    state.ledger.planned_ids = {_item_id(item) for item in [*kept, *others]}
