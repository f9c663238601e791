"""Errors harness raises for people: each says what, where and how to fix it."""

from harness._errors import (
    AbortRun,
    HarnessError,
    LLMError,
    NotWritten,
    ScenarioError,
    ScenarioSkipped,
)

__all__ = [
    "AbortRun",
    "HarnessError",
    "LLMError",
    "NotWritten",
    "ScenarioError",
    "ScenarioSkipped",
]
