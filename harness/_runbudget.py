"""A live run's budget (``--max-requests N``, ``--max-cost USD``): what the run spent and
which scenarios it left unrun once the budget was reached (results.json's ``budget``;
docs/running.md#a-budget-for-the-whole-run).

Each process keeps to its share (``share``): a shard gets its part of the budget, and an
xdist worker its part of the shard's, so that no process waits on another's count.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RunBudget", "dollars", "merge_budgets", "share"]


class RunBudget(BaseModel):
    """A run's budget: the limits given, what the scenarios that ran spent (requests to a
    model and their cost in US dollars, from the price table), whether a limit was
    reached, and the scenarios not run because it was (never counted as passed)."""

    model_config = ConfigDict(extra="forbid")
    max_requests: int | None = None
    max_cost: float | None = None
    requests: int = 0
    cost: float = 0.0
    reached: bool = False
    not_run: list[str] = Field(default_factory=list)


def share(limit: float | None, index: int, parts: int) -> float | None:
    """Part ``index`` (0-based) of ``parts`` of a limit: equal shares, a whole number of
    requests each when the limit is one (the first ones get the remainder)."""
    if limit is None:
        return None
    if isinstance(limit, int):
        return limit // parts + (1 if index < limit % parts else 0)
    return limit / parts


def merge_budgets(budgets: Sequence[RunBudget | None]) -> RunBudget | None:
    """The budget of a run made of shards: their spending summed, their unrun joined."""
    given = [b for b in budgets if b is not None]
    if not given:
        return None
    first = given[0]
    return RunBudget(
        max_requests=first.max_requests,
        max_cost=first.max_cost,
        requests=sum(b.requests for b in given),
        cost=round(sum(b.cost for b in given), 9),
        reached=any(b.reached for b in given),
        not_run=sorted({i for b in given for i in b.not_run}),
    )


def dollars(value: str) -> float:
    """``--max-cost``'s value: US dollars above 0 (``2.50``, ``$2.50``)."""
    import argparse

    try:
        amount = float(value.removeprefix("$"))
    except ValueError:
        amount = -1.0
    if not 0 < amount < float("inf"):  # NaN too
        raise argparse.ArgumentTypeError(f"expected US dollars above 0 (2.50), got {value!r}")
    return amount
