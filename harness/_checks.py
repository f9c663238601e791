"""The built-in ``expect:`` checks, registered like any plugin's.

A check is ``check(result, expected) -> (ok, actual)``, or a coroutine function returning
that (a judge makes a request). ``result`` is a CheckContext: the run's RunResult (every
field of it) plus what only the scenario runner knows: ``requests`` (what was sent to the
model, for the calls the scenario asks about), ``remaining_replies``, ``section`` (the
mapping a dotted key belongs to, for modifiers such as ``tool_calls.exact``) and ``judge``
(the scenario's judge, for judged checks). ``expected`` is the scenario's value, already
checked against its schema (a range has ``contains(value)``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ConfigDict, Field

from harness._actions import RunResult
from harness._modeljson import dump
from harness.events import LLMRequestEvent, LLMResponseEvent, MCPListChangedEvent
from harness.hookspecs import hookimpl

__all__ = ["BUILTIN", "Check", "CheckContext", "partial_match", "requests_per_call"]

Check = Callable[[Any, Any], tuple[bool, Any]]


class CheckContext(RunResult):
    """A RunResult plus what only the scenario runner knows: the typed ``result`` of a check."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    # What was sent on the LLM calls an ``expect.requests`` entry asks about, by call number.
    requests: dict[int, dict[str, Any]] = Field(default_factory=dict)
    # Scripted replies (or recorded interactions) left unused; None when the source cannot tell.
    remaining_replies: int | None = None
    # The scenario being checked (for plugins that need more than the run).
    scenario: Any = None
    # The mapping a dotted key belongs to (``tool_calls`` for ``tool_calls.sequence``).
    section: dict[str, Any] = Field(default_factory=dict)
    # The scenario's judge (harness.judge.Judge) for judged expectations; None without one.
    judge: Any = None
    # The turns of a ``turns:`` scenario (one entry per turn run); empty otherwise.
    turns: list[Any] = Field(default_factory=list)

    @classmethod
    def of(cls, run: RunResult, **extra: Any) -> CheckContext:
        """The run's result seen by checks (no copy of its data: fields are shared)."""
        return cls.model_construct(**dict(run), **extra)


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


def _called(result: CheckContext) -> list[Any]:
    # One rule for every tool-call expectation (docs/scenarios.md#which-calls-count): a
    # call counts when the model asked for it, whatever became of it (ran, raised,
    # refused as invalid or unknown, or not run: declined, stopped with its plan, left at
    # the limit). Expectations judge what the model did; each call's status says the rest.
    return list(result.tool_calls)


def _range(value: float, expected: Any, tolerance: float = 0.0) -> tuple[bool, Any]:
    return expected.contains(value, tolerance), value


# -- checks ---------------------------------------------------------------------------------


def check_termination(result: CheckContext, expected: Any) -> tuple[bool, Any]:
    """``termination``: the run ended this way (a list: one of these ways)."""
    actual = result.termination.value
    allowed = expected if isinstance(expected, list | tuple | set) else [expected]
    return actual in {str(getattr(e, "value", e)) for e in allowed}, actual


def requests_per_call(events: list[Any]) -> int:
    """The most requests the model got for one reply: the requests since its last reply
    (the first, and the retries after failures), at their longest."""
    most = current = 0
    for event in events:
        if isinstance(event, LLMRequestEvent):
            current += 1
            most = max(most, current)
        elif isinstance(event, LLMResponseEvent):
            current = 0
    return most


def check_max_requests_per_call(result: CheckContext, expected: int) -> tuple[bool, Any]:
    """``max_requests_per_call``: no reply took more requests than this (a retry storm)."""
    most = requests_per_call(result.events)
    return most <= expected, most


def check_iterations(result: CheckContext, expected: Any) -> tuple[bool, Any]:
    """``iterations``: iterations started, exactly or within bounds."""
    return _range(result.iterations, expected)


def check_llm_calls(result: CheckContext, expected: Any) -> tuple[bool, Any]:
    """``llm_calls``: LLM calls made, exactly or within bounds."""
    return _range(result.llm_calls, expected)


def check_sim_time(result: CheckContext, expected: Any) -> tuple[bool, Any]:
    """``sim_time``: the run's simulated seconds, exactly or within bounds."""
    return _range(round(result.sim_time, 9), expected, tolerance=1e-9)


def check_sequence(result: CheckContext, expected: list[str]) -> tuple[bool, Any]:
    """``tool_calls.sequence``: tool names in order (a subsequence; all calls with ``exact``)."""
    names = [r.name for r in _called(result)]
    if result.section.get("exact"):
        return names == expected, names
    remaining = iter(names)
    return all(name in remaining for name in expected), names


def _matches(item: Any, record: Any) -> bool:
    """A requested call matches an ``include`` / ``forbid`` item: its name, its arguments
    partially, and its status when the item gives one."""
    status = getattr(item, "status", None)
    return (
        record.name == item.name
        and partial_match(item.args, record.arguments)
        and (status is None or record.status == status)
    )


def check_include(result: CheckContext, expected: list[Any]) -> tuple[bool, Any]:
    """``tool_calls.include``: each listed call was asked for (arguments match partially,
    and its status is the one given, if any)."""
    missing, seen = [], {}
    for item in expected:
        records = [r for r in _called(result) if r.name == item.name]
        with_status = getattr(item, "status", None) is not None
        seen[item.name] = [
            {"args": r.arguments, "status": r.status} if with_status else r.arguments
            for r in records
        ]
        if not any(_matches(item, r) for r in records):
            wanted = {"name": item.name, "args": item.args}
            missing.append({**wanted, "status": item.status} if with_status else wanted)
    actual = {"missing": missing, "calls": seen} if missing else seen
    return not missing, actual


def check_count(result: CheckContext, expected: dict[str, Any]) -> tuple[bool, Any]:
    """``tool_calls.count``: calls per tool name, exactly or within bounds."""
    counts: dict[str, int] = {}
    for r in _called(result):
        counts[r.name] = counts.get(r.name, 0) + 1
    actual = {name: counts.get(name, 0) for name in expected}
    ok = all(rng.contains(actual[name]) for name, rng in expected.items())
    return ok, actual


def check_parallel_groups(result: CheckContext, expected: list[list[str]]) -> tuple[bool, Any]:
    """``parallel_groups``: the executed plans of two or more calls, in order."""
    actual = result.parallel_groups
    return actual == expected, actual


def check_contains(result: CheckContext, expected: list[str]) -> tuple[bool, Any]:
    """``final.contains``: the final content holds every text."""
    content = result.final.content or ""
    return all(text in content for text in expected), result.final.content


# Seconds a ``final.matches`` search may take: a pattern that backtracks exponentially
# would otherwise hold the run (and CI) forever.
MATCH_TIMEOUT = 1.0


def check_matches(result: CheckContext, expected: str) -> tuple[bool, Any]:
    """``final.matches``: the regular expression is found in the final content (searched
    with the ``regex`` package, which can stop a search after MATCH_TIMEOUT seconds)."""
    import regex

    content = result.final.content or ""
    try:
        found = regex.search(expected, content, timeout=MATCH_TIMEOUT)
    except TimeoutError:
        return False, (
            f"the pattern did not finish within {MATCH_TIMEOUT:g} s on the final answer "
            f"({len(content)} characters): it backtracks; simplify it (a repeated group that "
            "can match the same text in several ways, such as (a|aa)+, takes exponential time)"
        )
    return found is not None, result.final.content


def check_equals(result: CheckContext, expected: str) -> tuple[bool, Any]:
    """``final.equals``: the final content is exactly this."""
    return result.final.content == expected, result.final.content


def check_final_data(result: CheckContext, expected: dict[str, Any]) -> tuple[bool, Any]:
    """``final.data``: the final data matches partially."""
    data = dump(result.final.data)
    return partial_match(expected, data), data


def check_final_error(result: CheckContext, expected: dict[str, Any]) -> tuple[bool, Any]:
    """``final.error``: the final error matches partially."""
    error = dump(result.final.error) if result.final.error is not None else None
    return partial_match(expected, error or {}), error


def check_requests(result: CheckContext, expected: list[Any]) -> tuple[bool, Any]:
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


def check_never_called(result: CheckContext, expected: list[str]) -> tuple[bool, Any]:
    """``never_called``: the model never asked for these tools (run or not: it tried)."""
    called = [r.name for r in _called(result) if r.name in expected]
    return not called, {name: called.count(name) for name in expected}


def check_forbid(result: CheckContext, expected: list[Any]) -> tuple[bool, Any]:
    """``tool_calls.forbid``: no requested call matches one of these (arguments partially)."""
    found = [
        {"name": r.name, "args": r.arguments, "iteration": r.iteration}
        for r in _called(result)
        if any(_matches(item, r) for item in expected)
    ]
    return not found, found or "no forbidden call"


def check_list_changed(result: CheckContext, expected: bool) -> tuple[bool, Any]:
    """``mcp.list_changed_seen``: an MCP server changed its tool list during the run."""
    changes = [e for e in result.events if isinstance(e, MCPListChangedEvent)]
    return bool(changes) == expected, (
        [{"server": e.server, "tools": e.tools} for e in changes] or "no tool list change"
    )


def check_turns(result: CheckContext, expected: Any) -> tuple[bool, Any]:
    """``turns``: the turns a conversation ran, exactly or within bounds."""
    return _range(len(result.turns), expected)


def check_script_consumed(result: CheckContext, expected: bool) -> tuple[bool, Any]:
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
    "tool_calls.forbid": check_forbid,
    "never_called": check_never_called,
    "turns": check_turns,
    "max_requests_per_call": check_max_requests_per_call,
    "mcp.list_changed_seen": check_list_changed,
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


@hookimpl
def harness_register_expectations(register: Any) -> None:
    """The built-in expectation keys (every key of a scenario's ``expect:``)."""
    for key, check in BUILTIN.items():
        register(key, check)
