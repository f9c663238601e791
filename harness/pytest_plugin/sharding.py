"""``--harness-shard K/N [--harness-durations PATH]``: run one shard of the selection.

Every shard collects the whole suite and keeps its part of what ``-k``, ``-m`` and the
paths selected (this hook runs after theirs), planned by ``harness.shards.plan`` from the
selected ids alone, so every machine computes the same split. The shard, the plan's
fingerprint and what was collected but not selected go into results.json's
``meta.shard``: ``harness merge`` checks the shards against each other with them.
"""

from __future__ import annotations

import pytest

from harness.pytest_plugin.ledger import ShardMeta
from harness.pytest_plugin.session import get_state

__all__ = ["item_key", "pytest_collection_modifyitems"]


def item_key(item: pytest.Item) -> str:
    """What the plan calls an item: a scenario's id, any other test's node id."""
    return getattr(item, "scenario_id", None) or item.nodeid


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Keep this shard's items; deselect the others."""
    state = get_state(config)
    if state is None or state.options.shard is None:
        return
    from harness.shards import plan, plan_digest

    shard, durations = state.options.shard, state.options.durations
    keys = [item_key(item) for item in items]
    mine = set(plan(keys, shard.total, durations)[shard.index - 1])
    kept = [item for item, key in zip(items, keys, strict=True) if key in mine]
    others = [item for item, key in zip(items, keys, strict=True) if key not in mine]
    if others:
        config.hook.pytest_deselected(items=others)
    items[:] = kept
    state.ledger.shard = ShardMeta(
        index=shard.index,
        total=shard.total,
        plan=plan_digest(keys, shard.total, durations),
        by="durations" if durations else "count",
        selected=len(set(keys)),
    )
    state.ledger.planned_ids = set(keys)
