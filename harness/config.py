"""``AgentConfig``: the one definition of the agent's settings and their defaults.

``Agent(config=..., **overrides)`` takes it, and a scenario's ``agent:`` section is
derived from its fields (harness.scenario.schema), so a default is written here only.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AgentConfig", "BudgetSettings", "DetectorSettings", "ModelPrice"]


class DetectorSettings(BaseModel):
    """One stuck detector's settings (``agent.detectors.NAME``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    window: int | None = Field(
        default=None,
        ge=1,
        strict=True,
        description="how many repeats make the pattern; default: the detector's own",
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="further settings for a plugin's detector"
    )


class BudgetSettings(BaseModel):
    """Limits on what a run may spend (``agent.budget``); crossing one ends the run."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    tokens: int | None = Field(default=None, ge=0, strict=True, description="total tokens")
    cost: float | None = Field(default=None, ge=0, description="US dollars, from usage and prices")
    tool_calls: int | None = Field(default=None, ge=0, strict=True, description="tool calls run")
    sim_time: float | None = Field(default=None, ge=0, description="simulated seconds")
    model: str | None = Field(
        default=None,
        description="the model whose prices a cost budget uses (default: the llm's model)",
    )


class ModelPrice(BaseModel):
    """A model's price in US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    input: float = Field(ge=0, description="USD per million prompt tokens")
    output: float = Field(ge=0, description="USD per million completion tokens")


class AgentConfig(BaseModel):
    """How a run behaves (the ``agent:`` section of a scenario, the keywords of ``Agent``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    planner: str = "agentbuilder"
    # Strict: True is not 1 (bool is an int subclass) and "3" is not 3.
    max_iterations: int = Field(default=80, ge=1, strict=True)
    # A scenario writes it as `stagnation: {window: W}`.
    stagnation_window: int = Field(
        default=3, ge=0, strict=True, description="identical tool plans before stopping; 0: off"
    )
    on_validation_error: Literal["stop", "retry"] = "stop"
    on_max_iterations: Literal["stop", "final_answer"] = "stop"
    parallel_tools: bool = True
    system: str | None = None
    planner_options: dict[str, Any] = Field(
        default_factory=dict, description="options handed to the planner's factory (config)"
    )
    # None: the seed's behaviour, the `repeat` detector alone with stagnation_window.
    detectors: dict[str, DetectorSettings] | None = Field(
        default=None,
        description="stuck detectors by name, each {window: W}; default: repeat alone",
    )
    on_stuck: Literal["stop", "nudge"] = Field(
        default="stop",
        description="stop: end the run; nudge: tell the model once, stop when it repeats",
    )
    budget: BudgetSettings | None = Field(
        default=None, description="limits on tokens, cost, tool calls and simulated time"
    )
    # Filled by the scenario runner from [tool.harness.prices] and a scenario's `prices:`;
    # harness.budgets holds the documented defaults.
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict, description="USD per million tokens, by model"
    )
