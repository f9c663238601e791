"""The explorations of ``harness explore --shard K/N`` jobs joined into the one a serial
exploration makes (``harness merge``; docs/explore.md#shards)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from harness._errors import HarnessError
from harness.explore._exploring import count, summarize
from harness.explore._model import Exploration, ExploredScenario

__all__ = ["MergeError", "is_exploration", "merge_explorations", "read_exploration"]

# What every shard of one exploration must agree on.
_SAME = ("depth", "faults", "sites", "seed", "max_variants")


class MergeError(HarnessError):
    """Shards that are not of one exploration: one line saying which and why."""


def is_exploration(path: Path) -> bool:
    """Whether ``path`` holds an exploration (``{"explore": ...}``) rather than a run's
    results."""
    try:
        with path.open("rb") as file:
            head = file.read(64).lstrip()
    except OSError:
        return False
    return head.startswith(b"{") and b'"explore"' in head


def read_exploration(path: Path) -> Exploration:
    """The exploration a ``harness explore --json`` file holds; MergeError otherwise."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return Exploration.model_validate(data["explore"])
    except (OSError, ValueError, KeyError, TypeError, ValidationError) as exc:
        raise MergeError(
            f"{path}: not a harness explore --json file ({type(exc).__name__})"
        ) from None


def merge_explorations(parts: Sequence[Exploration], names: Sequence[str]) -> Exploration:
    """One exploration from its shards' (``names``: their files, for messages)."""
    first = parts[0]
    for part, name in zip(parts, names, strict=True):
        for key in _SAME:
            if getattr(part, key) != getattr(first, key):
                raise MergeError(
                    f"{name}: {key} {getattr(part, key)!r}, but {names[0]} has "
                    f"{getattr(first, key)!r}: shards of one exploration share their flags"
                )
    seen = [part.shard for part in parts]
    if None in seen or len(set(seen)) != len(seen):
        raise MergeError(
            f"each file must be another shard (--shard K/N) of one exploration: {seen}"
        )
    merged = first.model_copy(update={"shard": None, "scenarios": []})
    by_id: dict[str, ExploredScenario] = {}
    for part in parts:
        for scenario in part.scenarios:
            held = by_id.get(scenario.id)
            if held is None:
                by_id[scenario.id] = held = scenario.model_copy(update={"tried": []})
                merged.scenarios.append(held)
            held.tried += scenario.tried
    for scenario in merged.scenarios:
        scenario.tried.sort(key=lambda s: (len(s.faults), s.order))
        summarize(scenario)
    count(merged)
    return merged
