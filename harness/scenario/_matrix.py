"""``matrix:``: one scenario run once per combination of models and agent settings.

``matrix: {model: [a, b], planner: [react, agentbuilder]}`` expands into four scenarios,
ids ``path::name[model=a,planner=react]`` and so on (keys in file order, values in
list order), each with a cassette of its own. Keys: ``model`` (or ``llm.model``), any
agent setting (``planner``, ``max_iterations``, ... or ``agent.planner``), and for a target
``wire`` (the one model API served to it: ``openai-chat``, ``anthropic``, ...). Every value
is checked when the file loads, as if written in the scenario.
"""

from __future__ import annotations

import difflib
import itertools
import json
from typing import Any

from pydantic import ValidationError

from harness._errors import HarnessError, validation_message
from harness._plugins import PluginError, Plugins
from harness._results import combination_label
from harness.scenario._issues import IssueSink
from harness.scenario._schema import AgentSection, Scenario

__all__ = [
    "check_matrix",
    "combinations",
    "expand_matrix",
    "first_llm",
    "matrix_field",
]

_MODEL_KEYS = ("model", "llm.model")
_WIRE = ("target", "wire")


def matrix_field(key: str) -> tuple[str, str] | None:
    """The setting a matrix key varies: ``("llm", "model")``, ``("target", "wire")`` or
    ``("agent", NAME)``."""
    if key in _MODEL_KEYS:
        return ("llm", "model")
    if key == "wire":
        return _WIRE
    name = key.removeprefix("agent.")
    if name in AgentSection.model_fields:
        return ("agent", name)
    return None


def _known_keys() -> list[str]:
    return ["model", "wire", *AgentSection.model_fields]


def _wire_names() -> list[str]:
    from harness._modelwires import wires

    return [wire.name for wire in wires()]


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def combinations(matrix: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every combination, the first key varying slowest (keys in file order)."""
    keys = list(matrix)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*matrix.values())]


def _apply(scenario: Scenario, combination: dict[str, Any]) -> Scenario:
    """The scenario with the combination's settings; ValueError naming a bad value."""
    llm = scenario.llm
    agent = scenario.agent.model_dump(exclude_unset=True)
    for key, value in combination.items():
        where = matrix_field(key)
        if where == ("llm", "model"):
            if not isinstance(value, str) or not value:
                raise ValueError(f"a model is a name like gpt-4o-mini, not {value!r}")
            llm = llm.model_copy(update={"model": value})
        elif where == _WIRE:
            if value not in _wire_names():
                known = ", ".join(_wire_names())
                raise ValueError(f"no model wire is called {_shown(value)!r} (wires: {known})")
        elif where is not None:
            agent[where[1]] = value
    try:
        section = AgentSection.model_validate(agent, strict=True)
    except ValidationError as exc:
        raise ValueError(validation_message(dict(exc.errors(include_url=False)[0]))) from None
    variant = scenario.model_copy(update={"agent": section, "llm": llm, "matrix": None})
    variant._combination = dict(combination)
    return variant


def expand_matrix(scenario: Scenario) -> list[Scenario]:
    """The scenario's combinations as scenarios (the scenario itself without a matrix)."""
    if not scenario.matrix:
        return [scenario]
    out = []
    for combination in combinations(scenario.matrix):
        try:
            out.append(_apply(scenario, combination))
        except ValueError as exc:
            label = combination_label(combination)
            raise HarnessError(f"matrix combination {label}: {exc}") from None
    return out


def first_llm(scenario: Scenario) -> Any:
    """The ``llm`` section of the first combination (the scenario's own without a matrix
    varying the model): what the loader checks the provider's settings with."""
    for key, values in (scenario.matrix or {}).items():
        if matrix_field(key) == ("llm", "model") and values and isinstance(values[0], str):
            return scenario.llm.model_copy(update={"model": values[0]})
    return scenario.llm


def check_matrix(scenario: Scenario, plugins: Plugins, issue: IssueSink) -> None:
    """Unknown keys and values a combination could not run with, each at its line."""
    matrix = scenario.matrix
    if matrix is None:
        return
    if not matrix:
        issue(("matrix",), "an empty matrix: give keys like {model: [a, b], planner: [react]}")
    seen: dict[tuple[str, str], str] = {}
    for key, values in matrix.items():
        where = matrix_field(key)
        if where is None:
            hint = difflib.get_close_matches(key.removeprefix("agent."), _known_keys(), n=1)
            issue(
                ("matrix", key),
                f"unknown matrix key {key!r}"
                + (f" (did you mean {hint[0]!r}?)" if hint else "")
                + "; a matrix varies model (llm.model), wire (for a target) or an agent "
                + "setting: "
                + ", ".join(AgentSection.model_fields),
            )
            continue
        if where in seen:
            issue(("matrix", key), f"{key!r} varies the same setting as {seen[where]!r}")
            continue
        seen[where] = key
        if where == ("llm", "model") and scenario.llm.provider == "scripted":
            issue(
                ("matrix", key),
                "a scripted model has no name to vary: the model matters to recorded "
                "providers (provider: openai)",
            )
            continue
        if where == _WIRE and scenario.target is None:
            issue(
                ("matrix", key),
                "a wire matrix serves one script on each model API to a target (an agent "
                "that speaks them all): add `target:`, or vary `model` for harness's own loop",
            )
            continue
        if not values:
            issue(("matrix", key), "no values: give a list of at least one")
        _check_values(scenario, plugins, key, where, values, issue)


def _check_values(
    scenario: Scenario,
    plugins: Plugins,
    key: str,
    where: tuple[str, str],
    values: list[Any],
    issue: IssueSink,
) -> None:
    shown: list[str] = []
    for i, value in enumerate(values):
        at = ("matrix", key, i)
        text = _shown(value)
        if text in shown:
            issue(at, f"{text!r} is listed twice: each combination would run twice")
            continue
        shown.append(text)
        try:
            _apply(scenario, {key: value})
        except ValueError as exc:
            issue(at, f"{text!r}: {exc}")
            continue
        if where == ("agent", "planner"):
            try:
                plugins.planner_factory(value)
            except PluginError as exc:
                issue(at, str(exc))
