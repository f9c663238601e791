"""The simulated clock: tools spend virtual seconds instead of sleeping.

Inside a tool call, ``sleep(seconds)`` adds to that call's simulated duration. The
loop places each call on the run's clock: the calls of a parallel plan all start
together and the plan costs its longest call; sequential calls add up.
"""

from __future__ import annotations

from contextvars import ContextVar

__all__ = ["elapsed", "in_parallel_plan", "sleep", "start_call"]

_call: ContextVar[list[float] | None] = ContextVar("harness_sim_call", default=None)
_parallel: ContextVar[bool] = ContextVar("harness_sim_parallel", default=False)


def start_call(*, parallel: bool = False) -> list[float]:
    """Open a fresh accumulator for the tool call running in this context.

    ``parallel`` says whether the call belongs to a plan whose calls overlap (the loop
    then runs sync tools in threads; wrappers that call a sync tool themselves do too).
    """
    box = [0.0]
    _call.set(box)
    _parallel.set(parallel)
    return box


def in_parallel_plan() -> bool:
    """Whether the current tool call runs alongside the other calls of its plan."""
    return _parallel.get()


def sleep(seconds: float) -> None:
    """Spend ``seconds`` of simulated time in the current tool call (no real waiting)."""
    if seconds < 0:
        raise ValueError("simulated latency cannot be negative")
    box = _call.get()
    if box is not None:
        box[0] += seconds


def elapsed() -> float:
    """Simulated seconds spent so far by the current tool call."""
    box = _call.get()
    return box[0] if box is not None else 0.0
