"""A shrinking scenario as data: the scenario file's mapping and its cassettes, changed
only by removals and replacements that are recorded, so that the same edits can be made
to the original file's YAML (its comments kept) at the end."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["CLEANED", "Draft", "Edit", "Path_", "get", "shown_path"]

Path_ = tuple[str | int, ...]

# Keys whose value, once emptied, is removed with it: for each, an empty value and none at
# all mean the same to the loader (an empty `expect:` checks what no expect does).
CLEANED = frozenset(
    {
        "expect",
        "tool_calls",
        "final",
        "transcript",
        "mcp",
        "results",
        "errors",
        "faults",
        "inject",
        "tools",
        "agents",
        "conversations",
        "script",
        "judge_script",
        "never_called",
        "include",
        "forbid",
        "count",
        "requests",
        "failing",
        "agent",
        "prices",
        "history",
    }
)


@dataclass(frozen=True)
class Edit:
    """One change: ``delete`` the value at ``path``, or ``set`` it to ``value``."""

    op: str
    path: Path_
    value: Any = None


@dataclass(frozen=True)
class Draft:
    """``data``: ``{"scenario": the file's mapping, "cassettes": {llm path: cassette}}``;
    ``turns``: the original number of each turn left (None without ``turns:``);
    ``edits``: every change made since the original, in order."""

    data: dict[str, Any]
    turns: tuple[int, ...] | None = None
    edits: tuple[Edit, ...] = field(default=())

    @property
    def scenario(self) -> dict[str, Any]:
        """The scenario file's mapping."""
        return self.data["scenario"]

    def get(self, path: Path_) -> Any:
        """The value at ``path``."""
        return get(self.data, path)

    def set(self, path: Path_, value: Any) -> Draft:
        """This draft with ``value`` at ``path`` (added when the key is new)."""
        data = _copied(self.data, path[:-1])
        get(data, path[:-1])[path[-1]] = value
        return replace(self, data=data, edits=(*self.edits, Edit("set", path, value)))

    def remove(self, paths: Iterable[Path_]) -> Draft:
        """This draft without the values at ``paths``; containers emptied by it go too
        (``CLEANED``), and so does what named what was removed (``failing:`` entries)."""
        draft = self._without(paths)
        while untidy := _untidy(draft.scenario):
            draft = draft._without(untidy)
        return draft

    def _without(self, paths: Iterable[Path_]) -> Draft:
        data = self.data
        edits = list(self.edits)
        turns = list(self.turns) if self.turns is not None else None
        for path in sorted(set(paths), key=_order, reverse=True):
            if turns is not None and len(path) == 3 and path[:2] == ("scenario", "turns"):
                del turns[int(path[2])]
            data = _delete(data, path, edits)
        return Draft(data, tuple(turns) if turns is not None else None, tuple(edits))


def _untidy(scenario: dict[str, Any]) -> list[Path_]:
    """What would not load once an expectation is gone: a ``failing:`` entry naming it,
    a ``tool_calls.exact`` without its ``sequence``."""
    found: list[Path_] = []
    for at in expect_paths(scenario):
        expect = get({"scenario": scenario}, at)
        section = expect.get("tool_calls")
        if isinstance(section, dict) and "exact" in section and "sequence" not in section:
            found.append((*at, "tool_calls", "exact"))
        if "tool_calls.exact" in expect and "tool_calls.sequence" not in expect:
            found.append((*at, "tool_calls.exact"))
        failing = expect.get("failing")
        if isinstance(failing, list):
            given = given_paths(expect)
            found += [(*at, "failing", k) for k, p in enumerate(failing) if p not in given]
    return found


def expect_paths(scenario: dict[str, Any]) -> list[Path_]:
    """Where the scenario's ``expect`` mappings are: the top level's and each turn's."""
    found: list[Path_] = []
    if isinstance(scenario.get("expect"), dict):
        found.append(("scenario", "expect"))
    for k, turn in enumerate(scenario.get("turns") or []):
        if isinstance(turn, dict) and isinstance(turn.get("expect"), dict):
            found.append(("scenario", "turns", k, "expect"))
    return found


def given_paths(expect: dict[str, Any]) -> set[str]:
    """The dotted expectation paths an ``expect`` mapping gives."""
    given = set()
    for key, value in expect.items():
        given.add(str(key))
        if isinstance(value, dict):
            given |= {f"{key}.{sub}" for sub in value}
    return given


def shown_path(path: Path_) -> str:
    """The expectation path results show for an element of an expect mapping:
    ``("scenario", "turns", 1, "expect", "final", "contains")`` is ``turns.1.final.contains``."""
    parts = [str(p) for p in path[1:]]
    if parts[:1] == ["expect"]:
        return ".".join(parts[1:])
    # turns.K.expect.KEY...
    return ".".join([*parts[:2], *parts[3:]])


def get(data: Any, path: Sequence[str | int]) -> Any:
    """The value at ``path`` in nested mappings and lists."""
    for key in path:
        data = data[key]
    return data


def _order(path: Path_) -> tuple[tuple[int, Any], ...]:
    """A sort key for paths mixing indices and keys (indices first at one depth)."""
    return tuple((0, p) if isinstance(p, int) else (1, p) for p in path)


def _copied(data: dict[str, Any], path: Path_) -> dict[str, Any]:
    """``data`` with every container along ``path`` copied (the rest shared)."""
    root = dict(data)
    node: Any = root
    for key in path:
        child = node[key]
        child = list(child) if isinstance(child, list) else dict(child)
        node[key] = child
        node = child
    return root


def _delete(data: dict[str, Any], path: Path_, edits: list[Edit]) -> dict[str, Any]:
    """``data`` without ``path``, and without the containers that leaves empty."""
    while True:
        data = _copied(data, path[:-1])
        del get(data, path[:-1])[path[-1]]
        edits.append(Edit("delete", path))
        parent = path[:-1]
        if len(parent) < 2 or get(data, parent) or parent[-1] not in CLEANED:
            return data
        path = parent
