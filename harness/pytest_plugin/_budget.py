"""``--harness-max-requests N`` / ``--harness-max-cost USD``: a budget for a whole live run
(docs/running.md#a-budget-for-the-whole-run).

Once the requests the run's scenarios sent to a model, or their cost (usage at the
scenario's model's price: harness._budgets' table, ``[tool.harness.prices]``, a
scenario's ``prices:``), reach the budget, no new scenario starts: each one left skips,
saying so, and is listed in results.json's ``budget.not_run`` (never as passed; not a
skipped scenario either), and the session exits 1. A scenario in flight then finishes.

Each process keeps to its share (harness._runbudget.share): a shard its part of the
budget, an xdist worker its part of that; a run in parts (``--chunk-size``) counts on
from what the parts before it spent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from harness._errors import HarnessError
from harness._runbudget import RunBudget, share
from harness.llm._config import RECORDED_PROVIDERS

if TYPE_CHECKING:
    from harness._results import ScenarioResult
    from harness.pytest_plugin._options import SessionOptions
    from harness.pytest_plugin._outputs import Spent
    from harness.pytest_plugin._parts import RunPart
    from harness.scenario import Scenario

__all__ = [
    "Budget",
    "check_price",
    "left_unrun",
    "on_report",
    "run_budget",
    "spent_by",
    "taken",
]

# The usage keys of a judge's and a simulated user's requests (beside the agent's own).
_SIDE_REQUESTS = ("judge_requests", "user_requests")


def _price(scenario: Scenario) -> Any:
    from harness._budgets import price_table
    from harness.scenario._guards import with_prices

    table = price_table(with_prices(scenario.agent.to_config(), scenario))
    return table.get(scenario.llm.model or "")


def check_price(scenario: Scenario) -> None:
    """With --max-cost, a scenario that talks to a model needs that model's price:
    HarnessError (the file's collection error) when the table has none."""
    if scenario.llm.provider not in RECORDED_PROVIDERS or _price(scenario) is not None:
        return
    model = scenario.llm.model
    raise HarnessError(
        f"{scenario.path}: --max-cost: no price for model {model!r} (llm.model): add it to "
        "[tool.harness.prices] in pyproject.toml or to the scenario's prices: "
        "({model: {input: USD per million tokens, output: ...}})"
    )


def spent_by(scenario: Scenario, result: ScenarioResult) -> tuple[int, float]:
    """The requests a run sent to a model, and their cost (0 for a scripted model: it
    sends none; a scripted judge neither)."""
    from harness._budgets import run_cost

    usage = result.usage
    recorded = scenario.llm.provider in RECORDED_PROVIDERS
    requests = result.llm_calls if recorded else 0
    requests += usage.get("user_requests", 0)
    if not scenario.llm.judge_script:
        requests += usage.get("judge_requests", 0)
    price = _price(scenario) if recorded else None
    if price is None:
        return requests, 0.0
    tokens = {
        kind: sum(usage.get(f"{side}{kind}", 0) for side in ("", "judge_", "user_"))
        for kind in ("prompt_tokens", "completion_tokens")
    }
    return requests, run_cost(tokens, price)


class Budget:
    """This process's share of the run's budget, and what its scenarios spent."""

    def __init__(
        self, options: SessionOptions, worker: dict[str, Any] | None, part: RunPart | None
    ) -> None:
        """``worker``: an xdist worker's ``workerinput`` (None elsewhere); ``part``: a run
        in parts' (it counts on from what the parts before spent)."""
        index, parts = _place(options, worker)
        self.given = (options.max_requests, options.max_cost)
        self.max_requests = share(options.max_requests, index, parts)
        self.max_cost = share(options.max_cost, index, parts)
        self.requests = 0
        self.cost = 0.0
        self.part = part

    def _count_earlier(self) -> None:
        earlier = self.part.gathered() if self.part is not None else None
        if earlier is not None:
            spent = earlier.outputs.budget
            self.requests += spent.requests
            self.cost += spent.cost
        self.part = None

    def reached(self) -> str | None:
        """Why no new scenario may start (None: within the budget)."""
        self._count_earlier()
        if self.max_requests is not None and self.requests >= self.max_requests:
            return f"{self.requests} request(s) made, --max-requests {self.given[0]}"
        if self.max_cost is not None and self.cost >= self.max_cost:
            return f"${self.cost:.4f} spent, --max-cost {self.given[1]:g}"
        return None

    def spend(self, requests: int, cost: float) -> None:
        """A scenario's run ended: count what it spent."""
        self.requests += requests
        self.cost = round(self.cost + cost, 9)

    def skip_if_reached(self, item: Any, runs: Any) -> None:
        """Skip ``item`` (a ScenarioItem) when the budget is reached, saying so (its
        report carries why: it is not run for the budget, not a skipped scenario); unless
        its run is in flight already (``runs``: --harness-concurrency's), which finishes
        and counts."""
        if runs is not None and runs.started(item.nodeid):
            return
        why = self.reached()
        if why is not None:
            item.budget_left = f"not run: the run's budget was reached ({why}{_share(self)})"
            raise pytest.skip.Exception(item.budget_left, _use_item_location=True)


def _share(budget: Budget) -> str:
    shared = budget.given != (budget.max_requests, budget.max_cost)
    if not shared:
        return ""
    parts = []
    if budget.max_requests is not None:
        parts.append(f"{budget.max_requests} request(s)")
    if budget.max_cost is not None:
        parts.append(f"${budget.max_cost:g}")
    return f"; this process's share: {' and '.join(parts)}"


def _place(options: SessionOptions, worker: dict[str, Any] | None) -> tuple[int, int]:
    """Which share (0-based) of how many is this process's: shard, then xdist worker."""
    shard = options.shard
    shard_index, shards = (shard.index - 1, shard.total) if shard is not None else (0, 1)
    if worker is None:
        return shard_index, shards
    workers = int(worker.get("workercount", 1))
    number = int(str(worker.get("workerid", "gw0")).removeprefix("gw") or 0)
    return shard_index * workers + number, shards * workers


def on_report(item: Any, report: pytest.TestReport, budget: Budget | None) -> None:
    """In the process that ran a scenario item (a ScenarioItem): count what its run spent
    against this process's share, and put on its call report (for the controller) what
    it spent, or that the budget left it unrun, or that its sequential verdict did not
    need it."""
    if item.not_needed is not None:
        report.harness_not_needed = item.not_needed  # type: ignore[attr-defined]
    if item.budget_left is not None:
        report.harness_budget_left = item.budget_left  # type: ignore[attr-defined]
    if budget is None or item.result is None:
        return
    requests, cost = spent_by(item.scenario, item.result)
    budget.spend(requests, cost)
    report.harness_spent = (requests, cost)  # type: ignore[attr-defined]


def taken(spent: Spent, report: pytest.TestReport, sid: str) -> bool:
    """On the controller, read a scenario item's report for the budget: what its run
    spent, or (True) that it is no skipped scenario: a run not run for the budget
    (noted in ``spent``), or one its sequential verdict did not need."""
    used = getattr(report, "harness_spent", None)
    if used is not None:
        spent.requests += used[0]
        spent.cost = round(spent.cost + used[1], 9)
    left = getattr(report, "harness_budget_left", None)
    if left is not None:
        spent.not_run[sid] = left
    return left is not None or bool(getattr(report, "harness_not_needed", None))


def run_budget(options: SessionOptions, spent: Spent) -> RunBudget | None:
    """results.json's ``budget`` (None when the run was given none)."""
    if options.max_requests is None and options.max_cost is None:
        return None
    return RunBudget(
        max_requests=options.max_requests,
        max_cost=options.max_cost,
        requests=spent.requests,
        cost=round(spent.cost, 9),
        reached=bool(spent.not_run) or _at_limit(options, spent),
        not_run=sorted(spent.not_run),
    )


def left_unrun(results: Any) -> bool:
    """Whether the run left scenarios unrun for its budget (the session then exits 1)."""
    budget = getattr(results, "budget", None)
    return budget is not None and bool(budget.not_run)


def _at_limit(options: Any, spent: Spent) -> bool:
    if options.max_requests is not None and spent.requests >= options.max_requests:
        return True
    return options.max_cost is not None and spent.cost >= options.max_cost
