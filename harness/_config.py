"""``AgentConfig``: the one definition of the agent's settings and their defaults.

``Agent(config=..., **overrides)`` takes it, and a scenario's ``agent:`` section is
derived from its fields (harness.scenario._schema), so a default is written here only.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AgentConfig", "BudgetSettings", "DetectorSettings", "LLMRetries", "ModelPrice"]


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


# The errors without an HTTP status that a retry policy may name.
RetriedError = Literal["timeout", "stream_cut", "connection_error"]
_TIMEOUT: RetriedError = "timeout"


class LLMRetries(BaseModel):
    """The own loop's retries of a failed model request (``agent.llm_retries``), as the
    vendors' SDKs retry: up to ``max`` times, on the HTTP statuses and errors ``on``
    names, after ``backoff`` simulated seconds doubled each time (or the wait the error
    answer gives: its retry-after). docs/loop.md#retries."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    max: int = Field(default=2, ge=0, le=100, strict=True, description="retries after a failure")
    on: list[int | RetriedError] = Field(
        default_factory=lambda: [429, 500, 503, 529, _TIMEOUT],
        description="HTTP statuses (400-599) and errors (timeout, stream_cut, "
        "connection_error) retried",
    )
    backoff: float = Field(
        default=0.5,
        ge=0,
        le=3600,
        description="simulated seconds before the first retry, doubled before each next one",
    )

    def retries(self, status: int | None, kind: str) -> bool:
        """Whether an error of this HTTP status and type is retried."""
        return (status is not None and status in self.on) or kind in self.on

    def wait(self, attempt: int, retry_after: float | None) -> float:
        """Simulated seconds before retry number ``attempt`` (0 for the first)."""
        if retry_after is not None:
            return retry_after
        return float(self.backoff * 2**attempt)


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
    llm_retries: LLMRetries | None = Field(
        default=None,
        description="retry a failed model request as the vendors' SDKs do ({max, on, "
        "backoff}, on the simulated clock); default: no retries, the run ends in llm_error",
    )
    # Filled by the scenario runner from [tool.harness.prices] and a scenario's `prices:`;
    # harness._budgets holds the documented defaults.
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict, description="USD per million tokens, by model"
    )
