"""The report's matrix view: rows are scenarios, columns the matrix combinations they ran
(``model=a,planner=b``), cells the status (and, for several runs of one combination,
how many passed)."""

from __future__ import annotations

from typing import Any

from harness.results import ScenarioResult, combination_label

__all__ = ["matrix_view"]


def _base_id(scenario: ScenarioResult, label: str) -> str:
    """The scenario's id without its combination (and whatever follows it)."""
    marker = f"[{label}]"
    at = scenario.id.find(marker, scenario.id.find("::"))
    return scenario.id[:at] if at >= 0 else scenario.id


def _cell(entries: list[tuple[ScenarioResult, str | None]]) -> dict[str, Any]:
    statuses = [s.status for s, _ in entries]
    passed = statuses.count("passed")
    text: str  # the status itself, or a count of passed runs
    if len(entries) == 1:
        status, text = statuses[0], statuses[0]
    else:
        # Several runs of one combination (repeats): passed only when every run did.
        status = "passed" if passed == len(entries) else "failed" if passed else statuses[0]
        text = f"{passed}/{len(entries)} passed"
    return {"status": status, "text": text, "anchor": entries[0][1], "id": entries[0][0].id}


def matrix_view(scenarios: list[ScenarioResult], anchors: dict[str, str]) -> dict[str, Any] | None:
    """Rows and columns of the matrix view; None when no scenario ran in a matrix."""
    columns: list[str] = []
    rows: dict[str, dict[str, list[tuple[ScenarioResult, str | None]]]] = {}
    names: dict[str, str] = {}
    for scenario in scenarios:
        if not scenario.matrix:
            continue
        label = combination_label(scenario.matrix)
        if label not in columns:
            columns.append(label)
        base = _base_id(scenario, label)
        names.setdefault(base, scenario.name.split(f"[{label}]")[0])
        rows.setdefault(base, {}).setdefault(label, []).append((scenario, anchors.get(scenario.id)))
    if not rows:
        return None
    return {
        "columns": columns,
        "rows": [
            {
                "id": base,
                "name": names[base],
                "cells": [_cell(cells[c]) if c in cells else None for c in columns],
            }
            for base, cells in rows.items()
        ],
    }
