"""An exploration's report (docs/explore.md#reading-the-matrix): the terminal summary, and
an HTML page with a grid of site x fault kind per scenario whose broken cells link to
the finding's scenario file."""

from __future__ import annotations

import base64
import hashlib
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from harness.explore._model import Cell, Exploration, ExploredScenario, Finding

__all__ = ["explore_html", "explore_text"]


# -- the terminal ------------------------------------------------------------------------------


def _count(counts: Any) -> str:
    return (
        f"{counts.tried} schedule{'s' if counts.tried != 1 else ''}: {counts.held} held, "
        f"{counts.broken} broken, {counts.crashed} crashed"
    )


def finding_line(finding: Finding) -> str:
    """``termination (llm_error: http_error 429), first parted at model call: failed``."""
    cause = finding.cause if finding.cause != finding.termination else None
    ending = finding.termination + (f": {cause}" if cause else "")
    broken = ", ".join(finding.broken)
    return f"breaks {broken} ({ending}); first parted at {finding.divergence}"


def _scenario_lines(scenario: ExploredScenario) -> list[str]:
    if scenario.skipped is not None:
        return [f"{scenario.file}: skipped: {scenario.skipped}"]
    lines = [
        f"{scenario.file}: {len(scenario.sites)} sites, {_count(scenario.schedules)}; "
        f"{len(scenario.findings)} finding{'s' if len(scenario.findings) != 1 else ''}"
    ]
    for finding in scenario.findings:
        lines.append(
            f"  {finding.number}. {finding_line(finding)}: {finding.schedules} schedule"
            f"{'s' if finding.schedules != 1 else ''}"
        )
        if finding.files:
            more = len(finding.files) - 1
            lines.append(f"     {finding.files[0]}" + (f" (+{more} more)" if more else ""))
    crashed = [s for s in scenario.tried if s.outcome == "crashed"]
    for schedule in crashed[:3]:
        faults = ", ".join(f"{kind} at {site}" for site, kind in schedule.faults)
        lines.append(f"  crashed: {faults}: {schedule.message}")
    return lines


def explore_text(exploration: Exploration) -> str:
    """The terminal summary: each scenario and its findings, the fault kinds, the suite's
    robustness."""
    lines: list[str] = []
    for scenario in exploration.scenarios:
        lines += _scenario_lines(scenario)
    if exploration.kinds:
        lines.append("fault kinds (schedules held / tried):")
        width = max(len(k.kind) for k in exploration.kinds)
        for kind in exploration.kinds:
            broken = f", {kind.broken} broken" if kind.broken else ""
            crashed = f", {kind.crashed} crashed" if kind.crashed else ""
            lines.append(f"  {kind.kind:<{width}}  {kind.held}/{kind.tried}{broken}{crashed}")
    total = exploration.schedules
    lines.append(
        f"robustness: {total.held} of {total.tried} schedules held "
        f"({exploration.robustness:.0%}); {exploration.findings} finding"
        f"{'s' if exploration.findings != 1 else ''}"
    )
    return "\n".join(lines) + "\n"


# -- the HTML page -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Grid:
    """One scenario's grid: its sites (rows), the kinds (columns) and each cell."""

    scenario: ExploredScenario
    kinds: list[str]
    rows: list[tuple[str, list[dict[str, Any] | None]]]


def _href(file: str | None, page: Path) -> str | None:
    """A link from the page to a written scenario (relative, as both lie on disk)."""
    if file is None:
        return None
    return Path(os.path.relpath(Path(file).resolve(), page.resolve().parent)).as_posix()


def _grid(scenario: ExploredScenario, kinds: list[str], page: Path) -> _Grid:
    by_place: dict[tuple[str, str], Cell] = {(c.site, c.kind): c for c in scenario.cells}
    used = [k for k in kinds if any(c.kind == k for c in scenario.cells)]
    rows = []
    for site in scenario.sites:
        cells: list[dict[str, Any] | None] = []
        for kind in used:
            cell = by_place.get((site, kind))
            cells.append(
                None
                if cell is None
                else {
                    "outcome": cell.outcome,
                    "text": _cell_text(cell),
                    "href": _href(cell.file, page),
                    "title": ", ".join(cell.broken) or cell.outcome,
                }
            )
        rows.append((site, cells))
    return _Grid(scenario, used, rows)


def _cell_text(cell: Cell) -> str:
    if cell.outcome == "held":
        return "held"
    if cell.outcome == "crashed":
        return "crashed"
    return f"#{cell.finding}" if cell.finding is not None else "broken"


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:1em 0}
th,td{border:1px solid #ccc;padding:3px 6px;text-align:center;font-size:12px}
th.site{text-align:left}
td.held{background:#e6f4ea}td.broken{background:#fde2e1}td.crashed{background:#fff4ce}
td.none{color:#999}.meta{color:#666}code{font-size:12px}
"""


def _csp(css: str) -> str:
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; style-src 'sha256-{digest}'; img-src 'none'; "
        "base-uri 'none'; form-action 'none'"
    )


@cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("harness.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def explore_html(exploration: Exploration, page: Path) -> str:
    """The exploration as one self-contained HTML page, to be written at ``page`` (its
    links to the written scenarios are relative to it)."""
    kinds = list(exploration.faults)
    grids = [_grid(s, kinds, page) for s in exploration.scenarios if s.skipped is None]
    template = _environment().get_template("explore.html.j2")
    return template.render(
        exploration=exploration,
        grids=grids,
        finding_line=finding_line,
        href=lambda file: _href(file, page),
        css=Markup(_CSS),
        csp=_csp(_CSS),
    )
