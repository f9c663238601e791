"""harness's own report sections, an ordinary plugin of the hook ``harness_report_sections``:
the parts of the summary that say the same thing in the terminal, in Markdown and in the
HTML report, written once here (harness.report._sections renders them)."""

from __future__ import annotations

from harness._results import Results
from harness._sections import Section
from harness.hookspecs import hookimpl
from harness.report._changes import budget_sentence

__all__ = ["harness_report_sections"]


@hookimpl
def harness_report_sections(results: Results) -> list[Section]:
    """The run's budget: its limits, what was spent, and the scenario runs left unrun."""
    budget = results.budget
    if budget is None:
        return []
    unrun = [f"not run for the budget: {sid}" for sid in budget.not_run]
    return [Section("Budget", [budget_sentence(budget), *([unrun] if unrun else [])])]
