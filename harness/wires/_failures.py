"""A tool result whose text says the tool failed (docs/wires.md#tool-failures).

Anthropic (``is_error``), Gemini (an ``error`` key) and MCP (``isError``) carry a failure
flag; Chat Completions has none, and the Responses API's one status (``incomplete``) is
one no framework sends. On those wires a framework writes its tool's failure as the
result's text, each in its own form. A result is failed when its wire flags it, or when its
text is written in one of these forms:

- an object with a top-level ``error`` key (``{"error": "..."}``): the form a user chooses
  to make any failure recognised, and pydantic-ai's own for a tool that raised or asked
  for a retry;
- an exception's text, ``Type: message`` (``ValueError: no such city``): what harness's
  own loop sends for a tool that raised, and what freeze reads as a failed call;
- a framework's default failure text: ``FAILURE_TEXTS``, one row per framework, each with
  the version whose source its patterns were read from.

One recogniser for everyone who asks: every wire's ``tool_results`` (the observer's
statuses) and freeze (a failed recorded call becomes a failing stub). A failure text of
the user's own making (``return "could not find it"``) cannot be told from a result.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from harness.wires._neutral import ToolResult

__all__ = [
    "FAILURE_TEXTS",
    "FailureText",
    "failure_form",
    "raised_exception",
    "read_result",
    "reports_error",
]

# How a tool's exception reaches the model: `<ExceptionType>: <message>`.
_RAISED = re.compile(
    r"^([A-Za-z_][A-Za-z0-9_]*(?:Error|Exception|Timeout|Exit|Interrupt)): (.+)$", re.DOTALL
)


@dataclass(frozen=True)
class FailureText:
    """A framework's default text for a tool that failed: the package, the version whose
    source the patterns were read from, where in it they are written, and the patterns
    (each matched against the whole result)."""

    framework: str
    version: str
    source: str
    patterns: tuple[str, ...]

    def matches(self, text: str) -> bool:
        """Whether ``text`` is written in one of this framework's failure forms."""
        return any(pattern.fullmatch(text) for pattern in _compiled(self))


FAILURE_TEXTS: tuple[FailureText, ...] = (
    FailureText(
        "openai-agents",
        "0.24.0",
        "agents/tool.py: default_tool_error_function (earlier versions append the error), "
        "default_tool_timeout_error_message",
        (
            r"An error occurred while running the tool\. Please try again\..*",
            r"Tool '.+' timed out after \S+ seconds\.",
        ),
    ),
    FailureText(
        "langgraph (langgraph-prebuilt)",
        "1.2.24 (1.1.3)",
        "langgraph/prebuilt/tool_node.py: TOOL_CALL_ERROR_TEMPLATE (ToolNode's "
        "handle_tool_errors), INVALID_TOOL_NAME_ERROR_TEMPLATE, "
        "TOOL_INVOCATION_ERROR_TEMPLATE and TOOL_EXECUTION_ERROR_TEMPLATE",
        (
            r"Error: .*\n Please fix your mistakes\.",
            r"Error: .+ is not a valid tool, try one of \[.*\]\.",
            r"Error (?:invoking|executing) tool '.+' with kwargs .* with error:\n .*\n "
            r"Please fix the error and try again\.",
        ),
    ),
    FailureText(
        "agent-framework-core",
        "1.26.0",
        "agent_framework/_tools.py: _function_execution_error_result, "
        "_function_argument_validation_error_result, an unknown function's result",
        (
            r"Error: (?:Function failed|Argument parsing failed)\.(?: Exception: .*)?",
            r'Error: Requested function ".*" not found\.',
        ),
    ),
    FailureText(
        "pydantic-ai-slim",
        "2.78.0",
        "pydantic_ai/messages.py: a failed or retried ToolReturnPart is sent as "
        '{"error": ...} (the object form); RetryPromptPart.model_response, the earlier '
        "retry prompt",
        (r".*\n\nFix the errors and try again\.",),
    ),
    FailureText(
        "llama-index-core",
        "0.14.25",
        "llama_index/core/tools/calling.py: call_tool (FunctionAgent's own loop sends the "
        "exception's message alone, which cannot be told from a result)",
        (r"Encountered error: .*",),
    ),
)

_PATTERNS: dict[FailureText, tuple[re.Pattern[str], ...]] = {}


def _compiled(row: FailureText) -> tuple[re.Pattern[str], ...]:
    found = _PATTERNS.get(row)
    if found is None:
        found = _PATTERNS[row] = tuple(re.compile(p, re.DOTALL) for p in row.patterns)
    return found


def reports_error(value: Any) -> bool:
    """Whether ``value`` is an object whose top-level ``error`` says something (Gemini's
    schema for a failed function response; the object form on any wire)."""
    return isinstance(value, dict) and value.get("error") not in (None, "", {}, [], False)


def _error_object(text: str) -> bool:
    stripped = text.strip()
    if not (stripped.startswith("{") and '"error"' in stripped):
        return False
    try:
        return reports_error(json.loads(stripped))
    except ValueError:
        return False


def raised_exception(text: str) -> tuple[str, str] | None:
    """``(type, message)`` of a result that is an exception's text (``Type: message``)."""
    found = _RAISED.match(text)
    return None if found is None else (found.group(1), found.group(2))


def failure_form(text: str) -> str | None:
    """The form in which ``text`` says its tool failed (``error object``, ``exception``,
    or a framework's name from ``FAILURE_TEXTS``); None for a result that does not."""
    if _error_object(text):
        return "error object"
    if _RAISED.match(text):
        return "exception"
    return next((row.framework for row in FAILURE_TEXTS if row.matches(text)), None)


def read_result(text: str, flagged: bool = False) -> ToolResult:
    """A tool result as a request sends it back: failed when its wire flags it
    (``flagged``) or its text says so."""
    return ToolResult(text, flagged or failure_form(text) is not None)
