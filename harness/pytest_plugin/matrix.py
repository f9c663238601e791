"""Matrix expansion of scenario items: one item per combination of a scenario's
``matrix:`` (harness.scenario.matrix), named ``name[model=a,planner=b]``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.scenario import Scenario

__all__ = ["expand_matrix_items"]


def expand_matrix_items(pairs: list[tuple[str, Scenario]]) -> list[tuple[str, Scenario]]:
    """Each (item name, scenario) with a matrix becomes one pair per combination."""
    from harness.results import combination_label
    from harness.scenario.matrix import expand_matrix

    out: list[tuple[str, Scenario]] = []
    for name, scenario in pairs:
        if not scenario.matrix:
            out.append((name, scenario))
            continue
        for variant in expand_matrix(scenario):
            label = combination_label(variant.combination or {})
            out.append((f"{name}[{label}]", variant))
    return out
