"""A run's tool plans: its tool-call records grouped by the plan they belong to.

The one grouping behind every view of a trajectory: the terminal's compact trajectory
(``harness.report._text``), the report's timeline (``harness.report._timeline``) and the
baseline diff's plan-by-plan trajectory (``harness.report._diff``).
"""

from __future__ import annotations

from harness._actions import ToolCallRecord
from harness._results import ScenarioResult

__all__ = ["plans"]


def plans(scenario: ScenarioResult) -> dict[int, list[ToolCallRecord]]:
    """Group number -> the plan's calls in the model's order, by group number."""
    groups: dict[int, list[ToolCallRecord]] = {}
    for record in scenario.tool_calls:
        groups.setdefault(record.group, []).append(record)
    return dict(sorted(groups.items()))
