"""``AgentConfig``: the one definition of the agent's settings and their defaults.

``Agent(config=..., **overrides)`` takes it, and a scenario's ``agent:`` section is
derived from its fields (harness.scenario.schema), so a default is written here only.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["AgentConfig"]


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
