"""The shrinker's passes, in the order they run (docs/shrink.md#what-it-removes): each
finds its sites in a draft. A site is a list of elements to remove (delta debugging
keeps the fewest), a value to replace by weaker ones, or a text to shorten."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from harness.shrink._draft import Draft, Path_
from harness.shrink._elements import (
    expectation_items,
    expectations,
    fault_handles,
    llms,
    scripts,
    steps,
    tool_maps,
    tools,
)

__all__ = ["LABELS", "PASSES", "REMOVE", "Removal", "Rewrite", "Site", "Text"]


class _Remove:
    """A rewrite that removes the key instead of replacing its value."""

    def __repr__(self) -> str:
        return "REMOVE"


REMOVE = _Remove()


@dataclass(frozen=True)
class Removal:
    """Elements (their paths) of which the fewest are kept."""

    label: str
    key: Path_
    handles: tuple[Path_, ...]


@dataclass(frozen=True)
class Rewrite:
    """A value and the weaker values that may replace it, tried in order."""

    label: str
    path: Path_
    candidates: tuple[Any, ...]

    @property
    def key(self) -> Path_:
        """Which site this is, across recomputations."""
        return self.path


@dataclass(frozen=True)
class Text:
    """A text whose words (and template expressions) may go."""

    label: str
    path: Path_

    @property
    def key(self) -> Path_:
        """Which site this is, across recomputations."""
        return self.path


Site = Removal | Rewrite | Text


def _expectations(draft: Draft) -> list[Site]:
    handles = tuple(expectations(draft.scenario))
    return [Removal("expectations", ("expect",), handles)] if handles else []


def _turns(draft: Draft) -> list[Site]:
    turns = draft.scenario.get("turns")
    if not isinstance(turns, list) or len(turns) < 2:
        return []
    return [
        Removal("turns", ("turns",), tuple(("scenario", "turns", k) for k in range(len(turns))))
    ]


def _conversations(draft: Draft) -> list[Site]:
    sites: list[Site] = []
    for at, llm in llms(draft.scenario):
        rules = llm.get("conversations")
        if isinstance(rules, list) and rules:
            handles = tuple((*at, "conversations", k) for k in range(len(rules)))
            sites.append(Removal("conversations", (*at, "conversations"), handles))
    return sites


def _steps(draft: Draft) -> list[Site]:
    sites: list[Site] = []
    for at, script in scripts(draft.scenario):
        if script:
            handles = tuple((*at, i) for i in range(len(script)))
            sites.append(Removal("script steps", at, handles))
    for name, cassette in draft.data.get("cassettes", {}).items():
        interactions = cassette.get("interactions") or []
        if interactions:
            at = ("cassettes", name, "interactions")
            handles = tuple((*at, i) for i in range(len(interactions)))
            sites.append(Removal("cassette interactions", at, handles))
    return sites


def _agents(draft: Draft) -> list[Site]:
    agents = draft.scenario.get("agents")
    if not isinstance(agents, dict) or not agents:
        return []
    return [Removal("sub-agents", ("agents",), tuple(("scenario", "agents", a) for a in agents))]


def _tools(draft: Draft) -> list[Site]:
    return [
        Removal("tools", at, tuple((*at, name) for name in specs))
        for at, specs in tool_maps(draft.scenario)
        if specs
    ]


def _faults(draft: Draft) -> list[Site]:
    handles = tuple(fault_handles(draft.scenario))
    return [Removal("faults", ("faults",), handles)] if handles else []


def _results(draft: Draft) -> list[Site]:
    handles = tuple(
        (*at, "results", k)
        for at, spec in tools(draft.scenario)
        for k in range(len(spec.get("results") or []))
    )
    return [Removal("tool results", ("results",), handles)] if handles else []


def _history(draft: Draft) -> list[Site]:
    history = draft.scenario.get("history")
    if not isinstance(history, list) or not history:
        return []
    handles = tuple(("scenario", "history", k) for k in range(len(history)))
    return [Removal("history messages", ("history",), handles)]


def _calls(draft: Draft) -> list[Site]:
    handles = tuple(
        (*at, "tool_calls", j)
        for at, step in steps(draft.scenario)
        for j in range(len(step.get("tool_calls") or []))
    )
    return [Removal("tool calls", ("tool_calls",), handles)] if handles else []


def _items(draft: Draft) -> list[Site]:
    handles = tuple(expectation_items(draft.scenario))
    return [Removal("expectation items", ("items",), handles)] if handles else []


# The keys of a step, a tool and a sub-agent that only refine what it does.
_STEP_SETTINGS = ("latency", "usage", "finish_reason", "chunks", "reasoning", "unknown_tools")
_TOOL_SETTINGS = ("description", "latency", "timeout", "strict")


def _settings(draft: Draft) -> list[Site]:
    scenario = draft.scenario
    handles: list[Path_] = []
    for at, step in steps(scenario):
        handles += [(*at, key) for key in _STEP_SETTINGS if key in step]
        if step.get("tool_calls") and "content" in step:
            handles.append((*at, "content"))
        for j, call in enumerate(step.get("tool_calls") or []):
            if isinstance(call, dict) and "name" in call and "id" in call:
                handles.append((*at, "tool_calls", j, "id"))
    for at, spec in tools(scenario):
        handles += [(*at, key) for key in _TOOL_SETTINGS if key in spec]
    for at in _agent_sections(scenario):
        handles += [(*at, key) for key in draft.get(at)]
    if "prices" in scenario:
        handles.append(("scenario", "prices"))
    if isinstance(scenario.get("history"), str):
        handles.append(("scenario", "history"))
    return [Removal("settings", ("settings",), tuple(handles))] if handles else []


def _agent_sections(scenario: dict[str, Any]) -> Iterator[Path_]:
    if isinstance(scenario.get("agent"), dict):
        yield ("scenario", "agent")
    for name, spec in (scenario.get("agents") or {}).items():
        if isinstance(spec, dict) and isinstance(spec.get("agent"), dict):
            yield ("scenario", "agents", name, "agent")


# -- weaker faults ----------------------------------------------------------------------


def _weaker_error(error: dict[str, Any]) -> tuple[Any, ...]:
    """What a tool's ``errors:`` entry may become, weakest last: a hang becomes a timeout
    then a plain error; a disconnect or a JSON-RPC error a plain error; an error on every
    call one on a single call."""
    message = error.get("raise") or ""
    plain = {k: v for k, v in error.items() if k not in ("mcp", "type")}
    mcp = error.get("mcp")
    if mcp == "hang":
        timeout = {**plain, "raise": message or "timed out", "type": "TimeoutError"}
        return (timeout, {**plain, "raise": message or "error"})
    if mcp is not None:
        return ({**{k: v for k, v in error.items() if k != "mcp"}, "raise": message or "error"},)
    if error.get("type") not in (None, "ToolError"):
        return (plain,)
    if "on_call" not in error:
        return tuple({**error, "on_call": n} for n in (1, 2, 3))
    return ()


def _tool_rewrites(at: Path_, spec: dict[str, Any]) -> Iterator[Site]:
    for i, error in enumerate(spec.get("errors") or []):
        if isinstance(error, dict) and (weaker := _weaker_error(error)):
            yield Rewrite("faults weakened", (*at, "errors", i), weaker)
    inject = spec.get("inject")
    items = inject if isinstance(inject, list) else [inject]
    for i, item in enumerate(items):
        where = (*at, "inject", i) if isinstance(inject, list) else (*at, "inject")
        if isinstance(item, str):
            yield Rewrite("faults weakened", where, ({"text": item, "on_call": 1},))
        elif isinstance(item, dict) and "on_call" not in item and item.get("into") != "description":
            yield Rewrite("faults weakened", where, ({**item, "on_call": 1},))
    timeout, latency = spec.get("timeout"), spec.get("latency")
    if isinstance(timeout, int | float) and isinstance(latency, int | float) and latency > timeout:
        calm = {k: v for k, v in spec.items() if k not in ("timeout", "latency")}
        error = {"raise": "timed out", "type": "TimeoutError"}
        yield Rewrite(
            "faults weakened", at, ({**calm, "errors": [*spec.get("errors", []), error]},)
        )


def _fewer(repeat: int) -> tuple[Any, ...]:
    """Fewer repeats to try, fewest first: one (no repeat:), then up to eight, then half
    and all but one (the next round goes on from the one that held)."""
    counts = [n for n in range(2, 9) if n < repeat]
    counts += [n for n in (repeat // 2, repeat - 1) if n > 8 and n not in counts]
    return (REMOVE, *counts)


def _rewrites(draft: Draft) -> list[Site]:
    sites: list[Site] = []
    for at, step in steps(draft.scenario):
        if step.get("error") == "timeout":
            sites.append(Rewrite("faults weakened", (*at, "error"), ({"status": 500},)))
        repeat = step.get("repeat")
        if isinstance(repeat, int) and not isinstance(repeat, bool) and repeat > 1:
            sites.append(Rewrite("repeats reduced", (*at, "repeat"), _fewer(repeat)))
    for at, spec in tools(draft.scenario):
        sites += _tool_rewrites(at, spec)
    return sites


# -- texts ------------------------------------------------------------------------------


def _texts(draft: Draft) -> list[Site]:
    scenario = draft.scenario
    sites: list[Site] = []
    top: list[Path_] = [("input",), ("agent", "system")]
    top += [("turns", k, "user") for k in range(len(scenario.get("turns") or []))]
    top += [("history", k, "content") for k in range(_length(scenario.get("history")))]
    top += [("agents", a, "agent", "system") for a in scenario.get("agents") or {}]
    for path in top:
        sites += _walk(draft, ("scenario", *path), texts_only=True)
    for at, step in steps(scenario):
        for key in ("content", "reasoning"):
            sites += _walk(draft, (*at, key), texts_only=True)
        if isinstance(step.get("error"), dict):
            sites += _walk(draft, (*at, "error", "message"), texts_only=True)
        for j in range(len(step.get("tool_calls") or [])):
            sites += _walk(draft, (*at, "tool_calls", j), texts_only=True, skip=("name", "id"))
    for at, spec in tools(scenario):
        sites += _walk(draft, (*at, "description"), texts_only=True)
        sites += _walk(draft, (*at, "returns"))
        for k in range(len(spec.get("results") or [])):
            sites += _walk(draft, (*at, "results", k, "returns"))
        for k in range(len(spec.get("errors") or [])):
            sites += _walk(draft, (*at, "errors", k, "raise"), texts_only=True)
        sites += _walk(draft, (*at, "inject"), texts_only=True, skip=("into",))
    return sites


def _length(value: Any) -> int:
    return len(value) if isinstance(value, list) else 0


def _walk(
    draft: Draft, path: Path_, *, texts_only: bool = False, skip: tuple[str, ...] = ()
) -> list[Site]:
    """The texts at and under ``path`` (and, unless ``texts_only``, the parts of its lists
    and mappings: a tool result's items and keys)."""
    try:
        value = draft.get(path)
    except (KeyError, IndexError, TypeError):
        return []
    if isinstance(value, str):
        return [Text("texts shortened", path)] if value else []
    sites: list[Site] = []
    if isinstance(value, list):
        keys: list[Any] = list(range(len(value)))
    elif isinstance(value, dict):
        keys = [k for k in value if k not in skip]
    else:
        return []
    if not texts_only and keys:
        sites.append(Removal("tool result parts", path, tuple((*path, k) for k in keys)))
    for k in keys:
        sites += _walk(draft, (*path, k), texts_only=texts_only)
    return sites


# Every pass, in the order each round runs them: the coarse removals first (what does not
# matter at all goes in a few reruns), then the finer ones, weakening, and texts.
PASSES: tuple[tuple[str, Callable[[Draft], list[Site]]], ...] = (
    ("expectations", _expectations),
    ("turns", _turns),
    ("conversations", _conversations),
    ("script steps", _steps),
    ("sub-agents", _agents),
    ("tools", _tools),
    ("faults", _faults),
    ("tool results", _results),
    ("history messages", _history),
    ("tool calls", _calls),
    ("weaker faults", _rewrites),
    ("expectation items", _items),
    ("settings", _settings),
    ("texts", _texts),
)

# What the passes change, in the order the output's header says it.
LABELS = (
    "expectations",
    "turns",
    "conversations",
    "script steps",
    "cassette interactions",
    "sub-agents",
    "tools",
    "faults",
    "tool results",
    "history messages",
    "tool calls",
    "expectation items",
    "settings",
    "tool result parts",
    "faults weakened",
    "repeats reduced",
    "texts shortened",
)
