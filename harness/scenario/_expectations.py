"""Evaluating a scenario's ``expect:`` with the registered checks (harness._checks and
plugins'), and capturing the requests ``expect.requests`` asks about.

Keys may be dotted (``tool_calls.sequence``): a section of the ``expect`` mapping is
then checked key by key.
"""

from __future__ import annotations

import inspect
from typing import Any

from pydantic import BaseModel

from harness._actions import Termination
from harness._checks import Check, CheckContext
from harness._results import ExpectationResult
from harness.hookspecs import hookimpl
from harness.scenario._expect_schema import ExpectSection, JudgeSpec, Ordered
from harness.scenario._fields import Range

__all__ = ["RequestCapture", "evaluate"]

# Modifiers of a section: read by the check they modify, never checked on their own.
_MODIFIERS = {"tool_calls": {"exact"}}


# -- what was sent: for `requests` ----------------------------------------------------------


class RequestCapture:
    """A per-run observer: keeps the requests of the LLM calls ``expect.requests`` asks
    about, as sent. The scenario runner adds one to the run only when the scenario has
    ``requests`` expectations; other runs pay nothing."""

    def __init__(self, calls: set[int]) -> None:
        self.calls = calls
        self.seen: dict[int, dict[str, Any]] = {}

    @hookimpl
    def harness_llm_request(self, run: Any, request: Any) -> None:
        """Copy the request of a call an ``expect.requests`` entry asks about."""
        if request.call in self.calls:
            self.seen[request.call] = {
                "messages": request.messages,
                "tools": [t.name for t in request.tools],
                "options": dict(request.options),
            }


# -- evaluation -----------------------------------------------------------------------------


def _shown(value: Any) -> Any:
    """How an expected value appears in results: plain data, ranges (and judges) as given."""
    if isinstance(value, Range | JudgeSpec):
        return value.shown()
    if isinstance(value, BaseModel):
        return {k: _shown(v) for k, v in value if v is not None}
    if isinstance(value, dict):
        return {k: _shown(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_shown(v) for v in value]
    return getattr(value, "value", value)


def _entries(expect: ExpectSection) -> list[tuple[str, Any, dict[str, Any]]]:
    """(dotted key, expected value, its section) for every key given, in file order."""
    out = []
    for key, value in expect.given().items():
        if value is None or key == "failing":
            continue
        if isinstance(value, Ordered):
            section = value.given()
            skip = _MODIFIERS.get(key, set())
            for sub, sub_value in section.items():
                if sub not in skip and sub_value is not None:
                    out.append((f"{key}.{sub}", sub_value, section))
        else:
            out.append((key, value, {}))
    return out


async def evaluate(
    expect: ExpectSection | None, context: CheckContext, registry: dict[str, Check]
) -> list[ExpectationResult]:
    """Check every expectation; without any, a run passes when it ends ``completed``.

    A check may be a coroutine function (a judge makes a request): it is awaited, one
    check after another, in file order.
    """
    entries = _entries(expect) if expect is not None else []
    if not entries:
        # `expect: {}` (or sections with nothing in them) checks nothing: like no expect
        # at all, not a pass for any run, an llm_error included.
        entries = [("termination", Termination.completed, {})]
    failing = set(expect.failing or []) if expect is not None else set()
    results = []
    for key, expected, section in entries:
        check = registry.get(key) or registry.get(key.split(".")[0])
        context.section = section
        if check is None:
            # Only when the plugin behind a key was disabled (HARNESS_DISABLE_PLUGINS).
            ok, actual = False, "no plugin checks this key (is its plugin disabled?)"
        else:
            outcome = check(context, expected)
            if inspect.isawaitable(outcome):
                outcome = await outcome
            ok, actual = outcome
        shown = _shown(expected)
        if key in failing:
            # A known failure (an agent that obeys an injection, say): shown as such, and
            # met while it fails, like pytest's strict xfail.
            shown, ok = {"failing": shown}, not ok
        results.append(
            ExpectationResult(path=key, expected=shown, actual=_shown(actual), ok=bool(ok))
        )
    return results
