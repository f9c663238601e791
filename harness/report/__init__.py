"""Reports: the baseline diff and the HTML report of a run's results.

The results themselves (``ScenarioResult``, ``Results``, results.json) live in
``harness.results``; this package reads them.
"""

from harness.report.cli import ReportInputError, load_results, report_main
from harness.report.diff import (
    BaselineDiff,
    FieldChange,
    ScenarioChange,
    ScenarioRef,
    StatusChange,
    TrajectoryChange,
    diff_results,
    trajectory,
)
from harness.report.html import render_html, write_html

__all__ = [
    "BaselineDiff",
    "FieldChange",
    "ReportInputError",
    "ScenarioChange",
    "ScenarioRef",
    "StatusChange",
    "TrajectoryChange",
    "diff_results",
    "load_results",
    "render_html",
    "report_main",
    "trajectory",
    "write_html",
]
