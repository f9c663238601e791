"""Planners: the ``Planner`` protocol (``base``), and the built-in ones (``agentbuilder``,
``react``: each module an ordinary plugin registering one planner)."""

from harness.planners._base import Planner, PlannerFactory

__all__ = ["Planner", "PlannerFactory"]
