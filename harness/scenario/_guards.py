"""Checks beyond the schema, when a scenario file loads, for the keys of docs/scenarios.md's
last sections: the stuck detectors, the budget and its prices, the conversation's turns
and user simulator.

Each problem is an issue at its key's line (``path:line: field: message``), so
``harness validate`` reports it and exit status is 2, before anything runs.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from harness._budgets import DEFAULT_PRICES
from harness._config import AgentConfig, ModelPrice
from harness._errors import HarnessError, validation_message
from harness._plugins import PluginError, Plugins
from harness._project import ProjectConfigError, project_config
from harness.scenario._issues import IssueSink
from harness.scenario._schema import Scenario

__all__ = ["check_guards", "project_prices", "with_prices"]


def project_prices(scenario: Scenario) -> dict[str, ModelPrice]:
    """``[tool.harness.prices]`` of the scenario's project; HarnessError when malformed."""
    try:
        table = project_config(scenario.root).get("prices", {})
    except ProjectConfigError as exc:
        raise HarnessError(str(exc)) from None
    where = f"{scenario.root / 'pyproject.toml'} [tool.harness.prices]"
    if not isinstance(table, dict):
        raise HarnessError(f"{where}: expected a table of models, like gpt-4o-mini = {{...}}")
    prices = {}
    for model, price in table.items():
        try:
            prices[model] = ModelPrice.model_validate(price)
        except ValidationError as exc:
            problem = exc.errors(include_url=False)[0]
            field = ".".join(str(p) for p in problem["loc"])
            said = validation_message(problem)
            raise HarnessError(
                f"{where}: {model}{'.' + field if field else ''}: {said} (write "
                f'"{model}" = {{input = 0.15, output = 0.6}}, USD per million tokens)'
            ) from None
    return prices


def with_prices(config: AgentConfig, scenario: Scenario) -> AgentConfig:
    """The run's config with the project's and the scenario's prices, and the llm's model
    as the budget's model when the budget names none."""
    prices = {**project_prices(scenario), **scenario.prices}
    update: dict[str, Any] = {}
    if prices:
        update["prices"] = prices
    budget = config.budget
    if budget is not None and budget.model is None and scenario.llm.model is not None:
        update["budget"] = budget.model_copy(update={"model": scenario.llm.model})
    return config.model_copy(update=update) if update else config


def check_failing(expect: Any, at: tuple[str | int, ...], issue: IssueSink) -> None:
    """``failing`` names expectations given in the same ``expect``."""
    if expect is None or not expect.failing:
        return
    given = set()
    for key, value in expect.given().items():
        given.add(key)
        if hasattr(value, "given"):
            given |= {f"{key}.{sub}" for sub in value.given()}
    for k, path in enumerate(expect.failing):
        if path not in given or path == "failing":
            issue(
                (*at, "failing", k),
                f"{path!r} is not an expectation of this expect: list the dotted paths of "
                "expectations given here (e.g. never_called, tool_calls.forbid)",
            )


def check_guards(scenario: Scenario, plugins: Plugins, issue: IssueSink) -> None:
    """Detectors, budget, turns and user: every problem as an issue."""
    check_failing(scenario.expect, ("expect",), issue)
    for k, turn in enumerate(scenario.turns or []):
        check_failing(turn.expect, ("turns", k, "expect"), issue)
    detectors = scenario.agent.detectors or {}
    for name in detectors:
        try:
            plugins.detector_factory(name)
        except PluginError as exc:
            issue(("agent", "detectors", name), str(exc))
    _check_cost(scenario, issue)
    if scenario.turns is not None and scenario.input is not None:
        issue(
            ("turns",),
            "give input: (one request) or turns: (a conversation), not both; the first "
            "turn's user: is the conversation's first message",
        )
    if scenario.turns is None:
        if "user" in scenario.model_fields_set:
            issue(("user",), "user: chooses who speaks the turns: add turns: or remove it")
        return
    try:
        plugins.user_factory(scenario.user.kind)
    except PluginError as exc:
        issue(("user", "simulator" if scenario.user.simulator else "name"), str(exc))
        return
    if scenario.user.kind == "scripted":
        for k, turn in enumerate(scenario.turns):
            if turn.user is None:
                issue(
                    ("turns", k),
                    "the scripted user needs the text of each turn: add user: TEXT",
                )


def _check_cost(scenario: Scenario, issue: IssueSink) -> None:
    budget = scenario.agent.budget
    if budget is None or budget.cost is None:
        return
    model = budget.model or scenario.llm.model
    at = ("agent", "budget", "model" if budget.model else "cost")
    if model is None:
        issue(
            at,
            "a cost budget needs the model whose prices apply: add model: (e.g. gpt-4o-mini) "
            "to the budget, or llm.model",
        )
        return
    try:
        table = {**DEFAULT_PRICES, **project_prices(scenario), **scenario.prices}
    except HarnessError as exc:
        issue(("agent", "budget", "cost"), str(exc))
        return
    if model not in table:
        issue(
            at,
            f"no price for model {model!r}: add it to prices: ({model}: {{input: 0.15, "
            f"output: 0.6}}, USD per million tokens) or [tool.harness.prices]; priced: "
            f"{', '.join(sorted(table))}",
        )
