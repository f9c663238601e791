"""Where a scenario's elements are: the script steps, tools, expectations, faults and the
rest a shrinker may remove, found in the file's mapping, and the size they add up to."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from harness.scenario._expect_schema import ExpectSection
from harness.shrink._draft import Draft, Path_, expect_paths

__all__ = [
    "Size",
    "expectation_items",
    "expectations",
    "fault_handles",
    "llms",
    "scripts",
    "size",
    "steps",
    "tool_maps",
    "tools",
]

# The expect keys whose value is a mapping of expectations (tool_calls, final, ...).
_SECTIONS = ExpectSection.sections()
# Modifiers, read by the expectation they modify: they go with it (Draft._tidied).
_MODIFIERS = {("tool_calls", "exact")}
# Expectations whose items are checked one by one: an item may go on its own.
_ITEMIZED = {
    ("never_called",),
    ("requests",),
    ("tool_calls", "include"),
    ("tool_calls", "forbid"),
    ("tool_calls", "count"),
    ("final", "contains"),
}


class Size(NamedTuple):
    """What the goal counts: script steps (and cassette interactions), tools,
    expectations and faults."""

    steps: int
    tools: int
    expectations: int
    faults: int

    @property
    def total(self) -> int:
        """The four added up."""
        return self.steps + self.tools + self.expectations + self.faults

    def shown(self) -> str:
        """``12 (4 steps, 3 tools, 4 expectations, 1 fault)``."""
        parts = [
            _plural(self.steps, "step"),
            _plural(self.tools, "tool"),
            _plural(self.expectations, "expectation"),
            _plural(self.faults, "fault"),
        ]
        return f"{self.total} ({', '.join(parts)})"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def llms(scenario: dict[str, Any]) -> Iterator[tuple[Path_, dict[str, Any]]]:
    """Every ``llm:`` section: the scenario's and each sub-agent's."""
    if isinstance(scenario.get("llm"), dict):
        yield ("scenario", "llm"), scenario["llm"]
    for name, spec in _mapping(scenario.get("agents")).items():
        if isinstance(spec, dict) and isinstance(spec.get("llm"), dict):
            yield ("scenario", "agents", name, "llm"), spec["llm"]


def scripts(scenario: dict[str, Any]) -> Iterator[tuple[Path_, list[Any]]]:
    """Every list of script steps: each llm section's script and judge script, and each
    of its conversations' scripts."""
    for at, llm in llms(scenario):
        for key in ("script", "judge_script"):
            if isinstance(llm.get(key), list):
                yield (*at, key), llm[key]
        for k, rule in enumerate(llm.get("conversations") or []):
            if isinstance(rule, dict) and isinstance(rule.get("script"), list):
                yield (*at, "conversations", k, "script"), rule["script"]


def steps(scenario: dict[str, Any]) -> Iterator[tuple[Path_, dict[str, Any]]]:
    """Every script step that is a mapping."""
    for at, script in scripts(scenario):
        for i, step in enumerate(script):
            if isinstance(step, dict):
                yield (*at, i), step


def tool_maps(scenario: dict[str, Any]) -> Iterator[tuple[Path_, dict[str, Any]]]:
    """Every ``tools:`` mapping: the scenario's and each sub-agent's."""
    if isinstance(scenario.get("tools"), dict):
        yield ("scenario", "tools"), scenario["tools"]
    for name, spec in _mapping(scenario.get("agents")).items():
        if isinstance(spec, dict) and isinstance(spec.get("tools"), dict):
            yield ("scenario", "agents", name, "tools"), spec["tools"]


def tools(scenario: dict[str, Any]) -> Iterator[tuple[Path_, dict[str, Any]]]:
    """Every tool entry that is a mapping."""
    for at, specs in tool_maps(scenario):
        for name, spec in specs.items():
            if isinstance(spec, dict):
                yield (*at, name), spec


def expectations(scenario: dict[str, Any]) -> list[Path_]:
    """Every expectation given (a key of ``expect``, or of one of its sections), in the
    top-level expect and each turn's; ``failing:`` and modifiers are not expectations."""
    found: list[Path_] = []
    for at in expect_paths(scenario):
        expect = _get(scenario, at)
        for key, value in expect.items():
            if key == "failing" or tuple(str(key).split(".")) in _MODIFIERS:
                continue
            if key in _SECTIONS and isinstance(value, dict):
                found += [(*at, key, sub) for sub in value if (key, sub) not in _MODIFIERS]
            else:
                found.append((*at, key))
    return found


def expectation_items(scenario: dict[str, Any]) -> list[Path_]:
    """The items of expectations checked one by one (``never_called: [a, b]``'s a and b,
    ``tool_calls.count``'s tools, ...)."""
    found: list[Path_] = []
    for path in expectations(scenario):
        relative = path[path.index("expect") + 1 :]
        key = tuple(str(relative[0]).split(".")) if len(relative) == 1 else relative
        if key not in _ITEMIZED:
            continue
        value = _get(scenario, path)
        if isinstance(value, list) and len(value) > 1:
            found += [(*path, i) for i in range(len(value))]
        elif isinstance(value, dict) and len(value) > 1:
            found += [(*path, name) for name in value]
    return found


def fault_handles(scenario: dict[str, Any]) -> list[Path_]:
    """The faults placed by name: each ``llm.faults`` entry (docs/scenarios.md#model-faults),
    and the tool-side ones: ``errors`` entries, ``inject`` texts, ``rug_pull``."""
    found: list[Path_] = []
    for at, llm in llms(scenario):
        found += [(*at, "faults", i) for i in range(len(llm.get("faults") or []))]
    for at, spec in tools(scenario):
        found += [(*at, "errors", i) for i in range(len(spec.get("errors") or []))]
        inject = spec.get("inject")
        if isinstance(inject, list):
            found += [(*at, "inject", i) for i in range(len(inject))]
        elif inject is not None:
            found.append((*at, "inject"))
        if spec.get("rug_pull") is not None:
            found.append((*at, "rug_pull"))
    return found


def _timed_out(spec: dict[str, Any]) -> bool:
    """A tool whose every call outlasts its timeout: a timeout fault."""
    timeout, latency = _number(spec.get("timeout")), _number(spec.get("latency"))
    return timeout is not None and latency is not None and latency > timeout


def _number(value: Any) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def size(draft: Draft) -> Size:
    """The draft's steps, tools, expectations and faults."""
    scenario = draft.scenario
    n_steps = sum(len(script) for _, script in scripts(scenario))
    n_steps += sum(
        len(c.get("interactions") or [])
        for c in draft.data.get("cassettes", {}).values()
        if isinstance(c, dict)
    )
    n_tools = sum(len(specs) for _, specs in tool_maps(scenario))
    errors = sum(1 for _, step in steps(scenario) if step.get("error") is not None)
    timeouts = sum(1 for _, spec in tools(scenario) if _timed_out(spec))
    faults = errors + timeouts + len(fault_handles(scenario))
    return Size(n_steps, n_tools, len(expectations(scenario)), faults)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _get(scenario: dict[str, Any], path: Path_) -> Any:
    node: Any = scenario
    for key in path[1:]:
        node = node[key]
    return node
