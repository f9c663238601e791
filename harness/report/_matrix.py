"""The report's matrix view: rows are scenarios, columns the matrix combinations they ran
(``model=a,planner=b``), cells the status (and, for several runs of one combination,
how many passed)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Protocol

from harness._results import combination_label


class Entry(Protocol):
    """What the matrix view reads of a scenario (a result, or the report's digest)."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def matrix(self) -> dict[str, Any] | None: ...


__all__ = ["matrix_view"]


def _base_id(scenario: Entry, label: str) -> str:
    """The scenario's id without its combination (and whatever follows it)."""
    marker = f"[{label}]"
    at = scenario.id.find(marker, scenario.id.find("::"))
    return scenario.id[:at] if at >= 0 else scenario.id


def _cell(entries: list[tuple[Entry, str | None]]) -> dict[str, Any]:
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


def _value_order(value: Any) -> tuple[Any, ...]:
    """Where a matrix value sorts: numbers by size (3 before 10, also when written as
    text), other values by their text with its runs of digits read as numbers
    (``v3`` before ``v10``)."""
    if not isinstance(value, bool):
        try:
            return (0, float(value))
        except (TypeError, ValueError):
            pass
    text = value if isinstance(value, str) else combination_label({"": value})[1:]
    return (1, [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text)])


def _column_order(combination: dict[str, Any]) -> tuple[Any, ...]:
    """Where a combination's column goes: by its values in the matrix's key order."""
    return tuple((key, _value_order(value)) for key, value in combination.items())


def matrix_view(scenarios: Iterable[Entry], anchors: dict[str, str]) -> dict[str, Any] | None:
    """Rows and columns of the matrix view; None when no scenario ran in a matrix."""
    columns: dict[str, dict[str, Any]] = {}  # label -> combination
    rows: dict[str, dict[str, list[tuple[Entry, str | None]]]] = {}
    names: dict[str, str] = {}
    for scenario in scenarios:
        if not scenario.matrix:
            continue
        label = combination_label(scenario.matrix)
        columns.setdefault(label, scenario.matrix)
        base = _base_id(scenario, label)
        names.setdefault(base, scenario.name.split(f"[{label}]")[0])
        rows.setdefault(base, {}).setdefault(label, []).append((scenario, anchors.get(scenario.id)))
    if not rows:
        return None
    # Not in the order of the ids (sorted as text, where n=10 comes before n=3).
    order = sorted(columns, key=lambda label: _column_order(columns[label]))
    return {
        "columns": order,
        "rows": [
            {
                "id": base,
                "name": names[base],
                "cells": [_cell(cells[c]) if c in cells else None for c in order],
            }
            for base, cells in rows.items()
        ],
    }
