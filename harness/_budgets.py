"""Budgets (docs/loop.md#budgets): limits on what a run may spend; crossing one ends it.

``agent.budget`` sets any of ``tokens`` (total tokens of the run's LLM calls), ``cost``
(US dollars, from usage and a price table), ``tool_calls`` (calls run) and ``sim_time``
(simulated seconds). The run ends with termination ``budget`` and
``final.data = {budget: NAME, limit, used}`` at the exact crossing:

- tokens, cost, sim_time: right after the LLM reply (or tool plan) that took the total
  past the limit; nothing more happens (the reply's tool calls are not run);
- tool_calls: before the plan that would take the count past the limit; the plan does
  not run, and ``used`` counts it (calls run so far plus the declined plan's).

A total equal to its limit is within budget. Work per round is constant: totals are
read from the run's running sums.
"""

from __future__ import annotations

from typing import Any

from harness._actions import FinalData, FinalResponse, Termination
from harness._config import AgentConfig, BudgetSettings, ModelPrice
from harness._errors import HarnessError
from harness._messages import ToolCall
from harness._run import Run, RunStopped

__all__ = ["DEFAULT_PRICES", "Budget", "price_table", "run_cost", "used_tokens"]

# USD per million tokens (standard tier, OpenAI's price list of 2025) for the models the
# examples use; [tool.harness.prices] and a scenario's `prices:` add or override models.
DEFAULT_PRICES: dict[str, ModelPrice] = {
    "gpt-4o-mini": ModelPrice(input=0.15, output=0.60),
    "gpt-4o": ModelPrice(input=2.50, output=10.00),
    "gpt-4.1": ModelPrice(input=2.00, output=8.00),
    "gpt-4.1-mini": ModelPrice(input=0.40, output=1.60),
    "gpt-4.1-nano": ModelPrice(input=0.10, output=0.40),
}


def price_table(config: AgentConfig) -> dict[str, ModelPrice]:
    """The defaults, overridden by the config's prices (pyproject's and the scenario's)."""
    return {**DEFAULT_PRICES, **config.prices}


def used_tokens(usage: dict[str, int]) -> int:
    """Total tokens of a usage mapping: ``total_tokens``, else prompt + completion."""
    total = usage.get("total_tokens")
    if total is not None:
        return total
    return usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)


def run_cost(usage: dict[str, int], price: ModelPrice) -> float:
    """US dollars for this usage at this price (rounded to the nano-dollar)."""
    dollars = (
        usage.get("prompt_tokens", 0) * price.input
        + usage.get("completion_tokens", 0) * price.output
    ) / 1_000_000
    return round(dollars, 9)


class Budget:
    """A run's budget: checked after what spends (replies, plans) and before each plan."""

    def __init__(self, settings: BudgetSettings, config: AgentConfig) -> None:
        self.settings = settings
        self.price: ModelPrice | None = None
        if settings.cost is not None:
            model = settings.model
            if model is None:
                raise HarnessError(
                    "agent.budget.cost needs the model whose prices apply: set budget.model "
                    "(or the scenario's llm.model)"
                )
            table = price_table(config)
            if model not in table:
                raise HarnessError(
                    f"agent.budget.cost: no price for model {model!r}; add it to "
                    f"[tool.harness.prices] or the scenario's prices: (known: "
                    f"{', '.join(sorted(table))})"
                )
            self.price = table[model]
        self.spent = settings.tokens is not None or settings.cost is not None
        self.timed = settings.sim_time is not None
        # Calls run so far (a running count: the records are never walked again).
        self.made = 0

    @classmethod
    def for_run(cls, config: AgentConfig) -> Budget | None:
        """The run's budget, or None when it has none (then the loop checks nothing)."""
        if config.budget is None:
            return None
        return cls(config.budget, config)

    def after_spend(self, run: Run) -> None:
        """After a reply or a plan: RunStopped when tokens, cost or sim_time crossed."""
        settings = self.settings
        if self.spent:
            usage = run.usage
            if settings.tokens is not None:
                used = used_tokens(usage)
                if used > settings.tokens:
                    self._stop(run, "tokens", settings.tokens, used)
            if self.price is not None and settings.cost is not None:
                cost = run_cost(usage, self.price)
                if cost > settings.cost:
                    self._stop(run, "cost", settings.cost, cost)
        if self.timed and settings.sim_time is not None:
            elapsed = round(run.sim_time, 9)
            if elapsed > settings.sim_time:
                self._stop(run, "sim_time", settings.sim_time, elapsed)

    def before_plan(self, run: Run, calls: list[ToolCall]) -> None:
        """Before a plan: RunStopped (the plan not run) when it would cross tool_calls."""
        limit = self.settings.tool_calls
        if limit is not None and self.made + len(calls) > limit:
            run.ledger.decline_plan(calls, "the tool-call budget is spent")
            self._stop(run, "tool_calls", limit, self.made + len(calls))

    def after_plan(self, run: Run, first_record: int) -> None:
        """After a plan (its records from ``first_record`` on): count it, then check."""
        records = run.records
        self.made += sum(
            1 for i in range(first_record, len(records)) if records[i].status != "not_run"
        )
        self.after_spend(run)

    def _stop(self, run: Run, name: str, limit: Any, used: Any) -> None:
        run.remember("error", f"Budget exceeded: {name} used {used}, limit {limit}")
        raise RunStopped(
            Termination.budget,
            FinalResponse(data=FinalData(budget=name, limit=limit, used=used)),
        )
