"""The simulated clock: tools spend virtual seconds instead of sleeping.

Inside a tool call, ``sleep(seconds)`` adds to that call's simulated duration. The
loop places each call on the run's clock: the calls of a parallel plan all start
together and the plan costs its longest call; sequential calls add up.
"""

from __future__ import annotations

from contextvars import ContextVar

__all__ = [
    "MAX_SECONDS",
    "CallClock",
    "elapsed",
    "in_parallel_plan",
    "out_of_bounds",
    "sleep",
    "start_call",
]

# A year. No tool call or reply of a simulated run takes longer, so the clock, a sum of
# them, stays finite: twice 1e308 seconds is infinity, which results.json cannot hold.
MAX_SECONDS = 31_536_000.0


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


def out_of_bounds(seconds: float) -> bool:
    """Whether ``seconds`` is no simulated time a call or reply may take (0 to a year)."""
    return not 0 <= seconds <= MAX_SECONDS  # NaN too


def sleep(seconds: float) -> None:
    """Spend ``seconds`` of simulated time in the current tool call (no real waiting)."""
    if seconds < 0:
        raise ValueError("simulated latency cannot be negative")
    if out_of_bounds(seconds):
        raise ValueError(
            f"simulated time of {seconds!r} s: a call spends at most {MAX_SECONDS:.0f} s (a year)"
        )
    clock = _call.get()
    if clock is not None:
        clock.seconds += seconds


def elapsed() -> float:
    """Simulated seconds spent so far by the current tool call."""
    clock = _call.get()
    return clock.seconds if clock is not None else 0.0
