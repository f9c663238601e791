"""Expansions of scenario items: one item per case of a scenario's ``cases:``
(harness.scenario._cases), named ``name[case-id]``, and one per combination of its
``matrix:`` (harness.scenario._matrix), named ``name[model=a,planner=b]``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.scenario import Scenario

__all__ = ["expand_case_items", "expand_matrix_items"]


def expand_case_items(pairs: list[tuple[str, Scenario]]) -> list[tuple[str, Scenario]]:
    """Each (item name, scenario) with cases becomes one pair per case."""
    out: list[tuple[str, Scenario]] = []
    for name, scenario in pairs:
        for case in scenario.case_scenarios:
            out.append((name if case.case_id is None else f"{name}[{case.case_id}]", case))
    return out


def expand_matrix_items(pairs: list[tuple[str, Scenario]]) -> list[tuple[str, Scenario]]:
    """Each (item name, scenario) with a matrix becomes one pair per combination."""
    from harness._results import combination_label
    from harness.scenario._matrix import expand_matrix

    out: list[tuple[str, Scenario]] = []
    for name, scenario in pairs:
        if not scenario.matrix:
            out.append((name, scenario))
            continue
        for variant in expand_matrix(scenario):
            label = combination_label(variant.combination or {})
            out.append((f"{name}[{label}]", variant))
    return out
