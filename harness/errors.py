"""Exceptions harness raises on purpose, each meant to be read by a person."""

from __future__ import annotations

from typing import Any

__all__ = ["AbortRun", "HarnessError", "LLMError", "ScenarioError"]


class HarnessError(Exception):
    """Base class: bad input or configuration, with a message that says what to fix."""


class LLMError(Exception):
    """The LLM call failed (HTTP error, timeout, script exhausted, cassette miss).

    The loop turns it into termination ``llm_error`` with
    ``final.error = {type, message, status}``.
    """

    def __init__(self, message: str, *, status: int | None = None, type: str = "llm_error"):
        super().__init__(message)
        self.message = message
        self.status = status
        self.type = type

    def as_error(self) -> dict[str, Any]:
        """The ``final.error`` form."""
        return {"type": self.type, "message": self.message, "status": self.status}


class AbortRun(Exception):
    """Raised by a tool or hook to end the run in ``error`` instead of reporting a tool failure.

    Scenario stubs raise it when a template fails while rendering: that is a scenario
    bug, not something the model should see.
    """


class ScenarioError(HarnessError):
    """A scenario file that cannot be used: every problem as ``path:line: field: message``."""

    def __init__(self, issues: list[tuple[str, int | None, str, str]]):
        # (path, line, field, message) per problem, in file order.
        self.issues = sorted(issues, key=lambda i: (i[0], i[1] or 0))
        super().__init__("\n".join(self.format_issue(*issue) for issue in self.issues))

    @staticmethod
    def format_issue(path: str, line: int | None, field: str, message: str) -> str:
        """``path:line: field: message`` (line and field left out when unknown)."""
        where = f"{path}:{line}" if line else path
        # One problem, one line: messages from YAML or Jinja may span several.
        message = " ".join(part.strip() for part in message.splitlines() if part.strip())
        return f"{where}: {field}: {message}" if field else f"{where}: {message}"

    @classmethod
    def single(cls, path: str, line: int | None, field: str, message: str) -> ScenarioError:
        """An error with one problem."""
        return cls([(path, line, field, message)])
