"""The simulated clock: tools spend virtual seconds instead of sleeping.

Inside a tool call, ``sleep(seconds)`` adds to that call's simulated duration. The
loop places each call on the run's clock: the calls of a parallel plan all start
together and the plan costs its longest call; sequential calls add up.
"""

from __future__ import annotations

from contextvars import ContextVar

__all__ = ["CallClock", "elapsed", "in_parallel_plan", "sleep", "start_call"]


class CallClock:
    """The simulated seconds one tool call has spent so far."""

    __slots__ = ("seconds",)

    def __init__(self) -> None:
        self.seconds = 0.0


_call: ContextVar[CallClock | None] = ContextVar("harness_sim_call", default=None)
_parallel: ContextVar[bool] = ContextVar("harness_sim_parallel", default=False)


def start_call(*, parallel: bool = False) -> CallClock:
    """Open a fresh clock for the tool call running in this context.

    ``parallel`` says whether the call belongs to a plan whose calls overlap (the loop
    then runs sync tools in threads; wrappers that call a sync tool themselves do too).
    """
    clock = CallClock()
    _call.set(clock)
    _parallel.set(parallel)
    return clock


def in_parallel_plan() -> bool:
    """Whether the current tool call runs alongside the other calls of its plan."""
    return _parallel.get()


def sleep(seconds: float) -> None:
    """Spend ``seconds`` of simulated time in the current tool call (no real waiting)."""
    if seconds < 0:
        raise ValueError("simulated latency cannot be negative")
    clock = _call.get()
    if clock is not None:
        clock.seconds += seconds


def elapsed() -> float:
    """Simulated seconds spent so far by the current tool call."""
    clock = _call.get()
    return clock.seconds if clock is not None else 0.0
