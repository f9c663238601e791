"""The built-in ``expect:`` keys, registered like any plugin's, and their evaluation.

A check is ``check(result, expected) -> (ok, actual)``. ``result`` is the run's
RunResult seen through a CheckContext, which adds ``requests`` (what was sent to the
model, for the calls the scenario asks about), ``remaining_replies`` and ``section``
(the mapping a dotted key belongs to, for modifiers such as ``tool_calls.exact``).
Keys may be dotted (``tool_calls.sequence``): a section of the ``expect`` mapping is
then checked key by key.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from harness.actions import RunResult, Termination
from harness.plugins import hookimpl
from harness.results import ExpectationResult
from harness.scenario.schema import ExpectSection, Range, _Ordered

__all__ = ["CheckContext", "RequestCapture", "capture_requests", "evaluate", "partial_match"]

Check = Callable[[Any, Any], tuple[bool, Any]]

# Modifiers of a section: read by the check they modify, never checked on their own.
_MODIFIERS = {"tool_calls": {"exact"}}


class CheckContext:
    """A RunResult plus what only the scenario runner knows."""

    def __init__(
        self,
        run: RunResult,
        *,
        requests: dict[int, dict[str, Any]] | None = None,
        remaining_replies: int | None = None,
        scenario: Any = None,
    ) -> None:
        self.run = run
        self.requests = requests or {}
        self.remaining_replies = remaining_replies
        self.scenario = scenario
        self.section: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.run, name)


def partial_match(expected: Any, actual: Any) -> bool:
    """Mappings match when every expected key matches; lists element by element."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and partial_match(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(expected)
            and all(partial_match(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if isinstance(expected, float) or isinstance(actual, float):
        return isinstance(actual, int | float) and abs(float(expected) - float(actual)) < 1e-9
    return expected == actual


def _made(result: Any) -> list[Any]:
    # Calls the loop handled; a declined plan's calls (status not_run) were never made.
    return [r for r in result.tool_calls if r.status != "not_run"]


def _range(value: float, expected: Range, tolerance: float = 0.0) -> tuple[bool, Any]:
    return expected.contains(value, tolerance), value


# -- checks ---------------------------------------------------------------------------------


def check_termination(result: Any, expected: Any) -> tuple[bool, Any]:
    """``termination``: the run ended this way."""
    actual = result.termination.value
    return actual == str(getattr(expected, "value", expected)), actual


def check_iterations(result: Any, expected: Range) -> tuple[bool, Any]:
    """``iterations``: iterations started, exactly or within bounds."""
    return _range(result.iterations, expected)


def check_llm_calls(result: Any, expected: Range) -> tuple[bool, Any]:
    """``llm_calls``: LLM calls made, exactly or within bounds."""
    return _range(result.llm_calls, expected)


def check_sim_time(result: Any, expected: Range) -> tuple[bool, Any]:
    """``sim_time``: the run's simulated seconds, exactly or within bounds."""
    return _range(round(result.sim_time, 9), expected, tolerance=1e-9)


def check_sequence(result: Any, expected: list[str]) -> tuple[bool, Any]:
    """``tool_calls.sequence``: tool names in order (a subsequence; all calls with ``exact``)."""
    names = [r.name for r in _made(result)]
    if result.section.get("exact"):
        return names == expected, names
    remaining = iter(names)
    return all(name in remaining for name in expected), names


def check_include(result: Any, expected: list[Any]) -> tuple[bool, Any]:
    """``tool_calls.include``: each listed call was made (arguments match partially)."""
    missing, seen = [], {}
    for item in expected:
        name, args = item.name, item.args
        calls = [r.arguments for r in _made(result) if r.name == name]
        seen[name] = calls
        if not any(partial_match(args, actual) for actual in calls):
            missing.append({"name": name, "args": args})
    actual = {"missing": missing, "calls": seen} if missing else seen
    return not missing, actual


def check_count(result: Any, expected: dict[str, Range]) -> tuple[bool, Any]:
    """``tool_calls.count``: calls per tool name, exactly or within bounds."""
    counts: dict[str, int] = {}
    for r in _made(result):
        counts[r.name] = counts.get(r.name, 0) + 1
    actual = {name: counts.get(name, 0) for name in expected}
    ok = all(rng.contains(actual[name]) for name, rng in expected.items())
    return ok, actual


def check_parallel_groups(result: Any, expected: list[list[str]]) -> tuple[bool, Any]:
    """``parallel_groups``: the executed plans of two or more calls, in order."""
    actual = result.parallel_groups
    return actual == expected, actual


def check_contains(result: Any, expected: list[str]) -> tuple[bool, Any]:
    """``final.contains``: the final content holds every text."""
    content = result.final.content or ""
    return all(text in content for text in expected), result.final.content


def check_matches(result: Any, expected: str) -> tuple[bool, Any]:
    """``final.matches``: the regular expression is found in the final content."""
    content = result.final.content or ""
    return re.search(expected, content) is not None, result.final.content


def check_equals(result: Any, expected: str) -> tuple[bool, Any]:
    """``final.equals``: the final content is exactly this."""
    return result.final.content == expected, result.final.content


def check_final_data(result: Any, expected: dict[str, Any]) -> tuple[bool, Any]:
    """``final.data``: the final data matches partially."""
    return partial_match(expected, result.final.data), result.final.data


def check_final_error(result: Any, expected: dict[str, Any]) -> tuple[bool, Any]:
    """``final.error``: the final error matches partially."""
    return partial_match(expected, result.final.error or {}), result.final.error


def check_requests(result: Any, expected: list[Any]) -> tuple[bool, Any]:
    """``requests``: what was sent to the model on the listed LLM calls."""
    ok, actual = True, []
    for item in expected:
        request = result.requests.get(item.call)
        if request is None:
            ok = False
            actual.append({"call": item.call, "sent": f"no LLM call {item.call} was made"})
            continue
        messages = request["messages"]
        tool_results = [m["content"] for m in messages if m.get("role") == "tool"]
        texts = [m.get("content") or "" for m in messages]
        shown: dict[str, Any] = {"call": item.call}
        if item.tool_results_include is not None:
            shown["tool_results"] = tool_results
            ok &= all(any(t in r for r in tool_results) for t in item.tool_results_include)
        if item.messages_include is not None:
            shown["messages"] = texts
            ok &= all(any(t in m for m in texts) for t in item.messages_include)
        if item.tools is not None:
            shown["tools"] = request["tools"]
            ok &= sorted(request["tools"]) == sorted(item.tools)
        if item.tool_choice is not None:
            shown["tool_choice"] = request["options"].get("tool_choice")
            ok &= request["options"].get("tool_choice") == item.tool_choice
        actual.append(shown)
    return bool(ok), actual


def check_script_consumed(result: Any, expected: bool) -> tuple[bool, Any]:
    """``script_consumed``: no scripted reply (or recorded interaction) was left unused."""
    remaining = result.remaining_replies
    if remaining is None:
        return not expected, "this LLM source cannot tell"
    consumed = remaining == 0
    return consumed == expected, consumed if consumed else f"{remaining} replies left unused"


BUILTIN: dict[str, Check] = {
    "termination": check_termination,
    "iterations": check_iterations,
    "llm_calls": check_llm_calls,
    "tool_calls.sequence": check_sequence,
    "tool_calls.include": check_include,
    "tool_calls.count": check_count,
    "parallel_groups": check_parallel_groups,
    "final.contains": check_contains,
    "final.matches": check_matches,
    "final.equals": check_equals,
    "final.data": check_final_data,
    "final.error": check_final_error,
    "requests": check_requests,
    "script_consumed": check_script_consumed,
    "sim_time": check_sim_time,
}


# -- what was sent: for `requests` ----------------------------------------------------------


@dataclass
class RequestCapture:
    """The requests of the LLM calls in ``calls``, as sent (filled during a run)."""

    calls: set[int]
    seen: dict[int, dict[str, Any]] = field(default_factory=dict)


# Set by the scenario runner around one run: a context variable rather than a plugin
# registered per run (a plugin manager per run cost more than the run), and concurrent
# runs in one event loop each see their own.
_capture: ContextVar[RequestCapture | None] = ContextVar("harness_requests", default=None)


@contextmanager
def capture_requests(calls: set[int]) -> Iterator[RequestCapture]:
    """Keep what is sent on these LLM calls (1-based) of the run started inside."""
    capture = RequestCapture(calls)
    token = _capture.set(capture if calls else None)
    try:
        yield capture
    finally:
        _capture.reset(token)


@hookimpl
def harness_llm_request(run: Any, request: Any) -> None:
    """Copy the request of a call an ``expect.requests`` entry asks about (others cost nothing)."""
    capture = _capture.get()
    if capture is not None and request.call in capture.calls:
        capture.seen[request.call] = {
            "messages": request.messages,
            "tools": [t.name for t in request.tools],
            "options": dict(request.options),
        }


@hookimpl
def harness_register_expectations(register: Any) -> None:
    """The built-in expectation keys of DESIGN section 6."""
    for key, check in BUILTIN.items():
        register(key, check)


# -- evaluation -----------------------------------------------------------------------------


def _shown(value: Any) -> Any:
    """How an expected value appears in results: plain data, ranges as given."""
    if isinstance(value, Range):
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
        if value is None:
            continue
        if isinstance(value, _Ordered):
            section = value.given()
            skip = _MODIFIERS.get(key, set())
            for sub, sub_value in section.items():
                if sub not in skip and sub_value is not None:
                    out.append((f"{key}.{sub}", sub_value, section))
        else:
            out.append((key, value, {}))
    return out


def evaluate(
    expect: ExpectSection | None, context: CheckContext, registry: dict[str, Check]
) -> list[ExpectationResult]:
    """Check every expectation; without any, a run passes when it ends ``completed``."""
    entries = _entries(expect) if expect is not None else []
    if not entries:
        # `expect: {}` (or sections with nothing in them) checks nothing: like no expect
        # at all, not a pass for any run, an llm_error included.
        entries = [("termination", Termination.completed, {})]
    results = []
    for key, expected, section in entries:
        check = registry.get(key) or registry.get(key.split(".")[0])
        context.section = section
        if check is None:
            # Only when the plugin behind a key was disabled (HARNESS_DISABLE_PLUGINS).
            ok, actual = False, "no plugin checks this key (is its plugin disabled?)"
        else:
            ok, actual = check(context, expected)
        results.append(
            ExpectationResult(
                path=key, expected=_shown(expected), actual=_shown(actual), ok=bool(ok)
            )
        )
    return results
