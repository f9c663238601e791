"""Reports: the baseline diff and the HTML report of a run's results.

The results themselves (``ScenarioResult``, ``Results``, results.json and its loader
``load_results``) live in ``harness._results``; this package reads them.
"""

from harness._baseline import (
    BaselineDiff,
    FieldChange,
    ScenarioChange,
    ScenarioRef,
    StatusChange,
    TrajectoryChange,
)
from harness._results import ResultsFileError, load_results
from harness.report._diff import diff_results, trajectory
from harness.report._html import render_html, write_html

__all__ = [
    "BaselineDiff",
    "FieldChange",
    "ResultsFileError",
    "ScenarioChange",
    "ScenarioRef",
    "StatusChange",
    "TrajectoryChange",
    "diff_results",
    "load_results",
    "render_html",
    "trajectory",
    "write_html",
]
