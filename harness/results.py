"""A suite's results (results.json, docs/results.md): what a run wrote, and its reader."""

from harness._results import (
    SCHEMA_VERSION,
    ExpectationResult,
    Repeats,
    Results,
    ResultsFileError,
    ScenarioResult,
    Skipped,
    Status,
    Summary,
    TurnResult,
    load_results,
)

__all__ = [
    "SCHEMA_VERSION",
    "ExpectationResult",
    "Repeats",
    "Results",
    "ResultsFileError",
    "ScenarioResult",
    "Skipped",
    "Status",
    "Summary",
    "TurnResult",
    "load_results",
]
