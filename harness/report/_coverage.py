"""Behaviour coverage in the reports (docs/coverage.md): the terminal's line and the
``harness coverage`` table, the Markdown line, and the HTML section's view (a tool x
outcome grid and the other kinds, uncovered cells marked, covered ones naming their
scenarios)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness._coverage import KINDS, STATUSES, Coverage, CoverageCell

__all__ = ["coverage_lines", "coverage_view", "markdown_lines", "table_lines"]

# A covered cell names this many of its scenarios (the rest are counted).
_NAMED = 5
# The Markdown line names this many uncovered behaviours.
_MARKDOWN_NAMED = 10

# What each kind's cells are, as the report and the table head them.
TITLES = {
    "tool": "tools called",
    "tool_outcome": "tool outcomes",
    "termination": "terminations",
    "detector": "stuck detectors that fired",
    "budget": "budgets that ran out",
    "model_fault": "model faults",
    "plan": "plans",
    "turns": "turns",
    "sub_agent": "sub-agents run",
    "conversation": "a target's conversations",
    "wire": "wires",
}


def coverage_lines(coverage: Coverage, required: float | None = None) -> list[str]:
    """The terminal's line (``coverage: N of M behaviours (P%)``), and when a share is
    required and not reached, the line saying so."""
    lines = [coverage.line()]
    if required is not None and coverage.below(required):
        lines.append(
            f"coverage {coverage.percent:.2f}% is below the required {required:g}%: exit status 1"
        )
    return lines


def table_lines(coverage: Coverage, *, uncovered_only: bool = False) -> list[str]:
    """``harness coverage``'s table: one line per behaviour (kind, key, the scenarios
    covering it or ``MISSING``), then the coverage line."""
    cells = coverage.uncovered() if uncovered_only else coverage.cells
    rows = [("kind", "behaviour", "covered by")]
    rows += [(cell.kind, cell.key, _covered_by(cell)) for cell in cells]
    kind_width = max(len(row[0]) for row in rows)
    key_width = min(max(len(row[1]) for row in rows), 48)
    lines = [f"{kind:<{kind_width}}  {key:<{key_width}}  {by}".rstrip() for kind, key, by in rows]
    lines.append(coverage.line())
    return lines


def _covered_by(cell: CoverageCell) -> str:
    if not cell.covered:
        return "MISSING"
    named = ", ".join(cell.scenarios[:2])
    more = len(cell.scenarios) - 2
    return named + (f" and {more} more" if more > 0 else "")


def markdown_lines(coverage: Coverage, code: Any) -> list[str]:
    """The Markdown summary's coverage line, naming the first behaviours not covered
    (``code``: the Markdown module's code span, for untrusted names)."""
    line = f"**{coverage.line()}**"
    missing = coverage.uncovered()
    if missing:
        named = ", ".join(code(f"{c.kind} {c.key}", 80) for c in missing[:_MARKDOWN_NAMED])
        more = len(missing) - _MARKDOWN_NAMED
        line += f"; not covered: {named}" + (f" and {more} more" if more > 0 else "")
    return ["", line]


def coverage_view(coverage: Coverage | None, anchors: Mapping[str, str]) -> dict[str, Any] | None:
    """What the HTML section shows: the tool grid (a row per tool: whether it was
    called, and each outcome; None where the outcome cannot happen to it) and the other
    kinds' cells; each cell with its scenarios' links. None without coverage."""
    if coverage is None:
        return None
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for cell in coverage.cells:
        by_kind.setdefault(cell.kind, []).append(_cell_view(cell, anchors))
    statuses = list(STATUSES)
    outcomes: dict[tuple[str, str], dict[str, Any]] = {}
    for view in by_kind.get("tool_outcome", []):
        tool, _, status = view["key"].rpartition(":")
        outcomes[(tool, status)] = view
        if status not in statuses:
            statuses.append(status)
    tools = [view for view in by_kind.get("tool", [])]
    named = {view["key"] for view in tools} | {tool for tool, _ in outcomes}
    called = {view["key"]: view for view in tools}
    rows = [
        {
            "tool": tool,
            "called": called.get(tool),
            "outcomes": [outcomes.get((tool, status)) for status in statuses],
        }
        for tool in sorted(named)
    ]
    others = [
        {"kind": kind, "title": TITLES.get(kind, kind), "cells": by_kind[kind]}
        for kind in [*KINDS, *sorted(set(by_kind) - set(KINDS))]
        if kind not in ("tool", "tool_outcome") and kind in by_kind
    ]
    return {
        "line": coverage.line(),
        "covered": coverage.covered,
        "total": coverage.total,
        "statuses": statuses,
        "rows": rows,
        "others": others,
    }


def _cell_view(cell: CoverageCell, anchors: Mapping[str, str]) -> dict[str, Any]:
    """A cell as the page shows it: its key, whether covered, its first scenarios (each
    with its card's anchor when the report has it) and how many more."""
    shown = [
        {"id": sid, "anchor": anchors.get(sid) or anchors.get(f"{sid}[1]")}
        for sid in cell.scenarios[:_NAMED]
    ]
    return {
        "key": cell.key,
        "covered": cell.covered,
        "scenarios": shown,
        "count": len(cell.scenarios),
        "more": max(len(cell.scenarios) - _NAMED, 0),
    }
