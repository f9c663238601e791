"""Tool-plan signatures and the stagnation detector.

A plan's signature is insensitive to the order of its calls and to the key order of
their arguments, so a model that reshuffles the same parallel set is still repeating
itself. The built-in signature is an ordinary plugin answer (``trylast``): any plugin
implementing ``harness_action_signature`` replaces it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable
from typing import Any

from harness._canonical import canonical_json
from harness._messages import ToolCall
from harness.hookspecs import hookimpl

__all__ = ["StagnationDetector", "plan_signature"]


def plan_signature(tool_calls: Iterable[ToolCall]) -> tuple[tuple[str, str], ...]:
    """Sorted ``(tool_name, canonical_json(arguments))`` over the plan's calls."""
    return tuple(
        sorted(
            (
                call.name,
                call.raw_arguments
                if call.raw_arguments is not None
                else canonical_json(call.arguments),
            )
            for call in tool_calls
        )
    )


@hookimpl(trylast=True)
def harness_action_signature(run: Any, tool_calls: list[ToolCall]) -> Hashable:
    """The built-in signature: see plan_signature."""
    return plan_signature(tool_calls)


class StagnationDetector:
    """Remembers the last ``window`` tool-plan signatures; constant work per plan."""

    def __init__(self, window: int) -> None:
        self.window = window
        self._recent: deque[Any] = deque(maxlen=max(window, 1))

    def is_stagnant(self, signature: Any) -> bool:
        """True when ``signature`` equals each of the previous ``window`` signatures."""
        recent = self._recent
        return (
            self.window > 0 and len(recent) == self.window and all(s == signature for s in recent)
        )

    def add(self, signature: Any) -> None:
        """Record a plan that is about to run."""
        self._recent.append(signature)
