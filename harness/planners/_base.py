"""The ``Planner`` protocol, and what ``harness_register_planners`` registers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from harness._config import AgentConfig
    from harness._run import Run

__all__ = ["Planner", "PlannerFactory"]


class Planner(Protocol):
    """Decides the next step of a run: ``step(run)``, sync or async, returns an action,
    a list of ToolAction (a parallel set) or a FinalResponse."""

    def step(self, run: Run) -> Any | Awaitable[Any]:
        """The plan for this iteration."""
        ...


# What ``harness_register_planners`` registers: builds a planner for one run's config.
PlannerFactory = Callable[["AgentConfig"], Planner]
