"""Tool names an ``expect`` section names that no call of its scenario can have.

A scripted run calls exactly the names its script gives, so any other name there is a
typo found at load time (docs/scenarios.md#which-calls-count).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable

from harness.scenario._expect_schema import ExpectSection
from harness.scenario._mcp_tools import tool_names, unknown_server_tools
from harness.scenario._schema import Scenario

_Named = list[tuple[tuple[str | int, ...], str]]


def _expected_tool_names(
    expect: ExpectSection, top: tuple[str | int, ...], scripted: bool
) -> tuple[_Named, _Named]:
    """(where, tool name) of the guards of an ``expect`` and of the names its other
    expectations need called (a ``count`` that allows 0 only in a scripted run)."""
    named: _Named = []
    calls = expect.tool_calls
    guarded: _Named = [
        ((*top, "never_called", k), n) for k, n in enumerate(expect.never_called or [])
    ]
    if calls is not None:
        at = (*top, "tool_calls")
        guarded += [((*at, "forbid", k, "name"), c.name) for k, c in enumerate(calls.forbid or [])]
        named += [((*at, "sequence", k), n) for k, n in enumerate(calls.sequence or [])]
        named += [((*at, "include", k, "name"), c.name) for k, c in enumerate(calls.include or [])]
        for name, rng in (calls.count or {}).items():
            if scripted or not rng.contains(0):
                named.append(((*at, "count", name), name))
    for g, group in enumerate(expect.parallel_groups or []):
        named += [((*top, "parallel_groups", g, k), n) for k, n in enumerate(group)]
    return guarded, named


def check_expected_tools(
    scenario: Scenario,
    expect: ExpectSection,
    top: tuple[str | int, ...],
    issue: Callable[[tuple, str], None],
) -> None:
    """Tool names in an ``expect`` (at ``top``) that no call of this scenario can have.

    A scripted run calls exactly the names its script gives, so any other name is a
    typo. A recorded or live model may call a tool that does not exist, so there only
    a ``count`` that allows 0 (a guard against that) may name one. The guards
    (``never_called``, ``tool_calls.forbid``) name a defined tool or one the script calls.
    """
    defined = tool_names(scenario.tools)
    scripted = scenario.llm.provider == "scripted"
    if scenario.target is not None and not scripted:
        return  # a recorded target's tools are its own: any name may be called
    if unknown_server_tools(scenario.tools):
        return  # an MCP server's tools are known when it runs (docs/mcp.md)
    scripts = [scenario.llm.script, *(rule.script for rule in scenario.llm.conversations)]
    called = (c for script in scripts for s in script for v in s.variants() for c in v.tool_calls)
    possible = defined | {call.name for call in called}
    guarded, named = _expected_tool_names(expect, top, scripted)
    for path, name in guarded:
        if name not in possible:
            hint = difflib.get_close_matches(name, sorted(possible), n=1)
            issue(
                path,
                f"{name!r} is neither a tool of the scenario nor called by its script, so "
                "this guard can never fail"
                + (f" (did you mean {hint[0]!r}?)" if hint else "")
                + f"; tools: {', '.join(sorted(defined)) or 'none'}",
            )
    known = sorted(possible if scripted else defined)
    for path, name in named:
        if name in known:
            continue
        hint = difflib.get_close_matches(name, known, n=1)
        where = "the script never calls it" if scripted else "the scenario does not define it"
        issue(
            path,
            f"no call can be to {name!r}: {where}"
            + (f" (did you mean {hint[0]!r}?)" if hint else "")
            + f"; tools: {', '.join(known) or 'none'}",
        )
    # A target declares its own tools: the scenario cannot know them.
    for r, request in enumerate([] if scenario.target else expect.requests or []):
        for k, name in enumerate(request.tools or []):
            if name not in defined:
                hint = difflib.get_close_matches(name, sorted(defined), n=1)
                issue(
                    (*top, "requests", r, "tools", k),
                    f"{name!r} is not one of the scenario's tools, so it is never sent"
                    + (f" (did you mean {hint[0]!r}?)" if hint else ""),
                )
