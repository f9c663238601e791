"""Sequential repeats in a pytest session (``decide: sequential``; docs/gate.md).

A sequential scenario is collected as its ``max_runs`` items, as a fixed one is. Each run
that ends feeds the scenario's sequential test (``harness._sequential``) in run order; once
it has decided, the scenario's items still to come skip, saying after how many runs and
why (they are not needed: not "skipped scenarios", never in results.json's ``skipped``).

A decision needs the runs before it: the test reads the runs from run 1 on, up to the
first that has not ended here. Under xdist, a scenario's runs must therefore go to one
worker for its later runs to be skipped: the items carry an ``xdist_group`` mark, each
worker names them after their group (``name[3]@seq-1a2b3c4d``, as xdist's ``--dist
loadgroup`` does), and a controller scheduling by ``load`` (xdist's default with ``-n``)
schedules by group instead (``LoadGroupScheduling``: the other items are each a group of
their own). Under another ``--dist`` that splits a scenario's runs (``worksteal``), a
worker whose scenario misses earlier runs cannot know they decided: it runs its share, and
the verdict (counted over the runs in order, ``harness._repeats.count_repeats``) is the
same; only runs are not saved.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import pytest

from harness._sequential import Decision, Progress, SequentialPlan

if TYPE_CHECKING:
    from harness.pytest_plugin._options import SessionOptions
    from harness.scenario import Scenario

__all__ = [
    "GROUP_PREFIX",
    "Sequences",
    "make_sequential",
    "not_needed",
    "sequential_plan",
    "skip_if_not_needed",
]

# What a sequential scenario's xdist group (and its items' node ids) are named with.
GROUP_PREFIX = "seq-"


def group_of(key: str) -> str:
    """The xdist group of a scenario's runs: short, and the same in every process."""
    return GROUP_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:8]


def not_needed(decision: Decision, plan: SequentialPlan) -> str:
    """Why a run is not needed, as its item's skip says."""
    verdict = "passes" if decision.verdict == "pass" else "fails"
    how = (
        "the evidence was clear"
        if decision.by == "evidence"
        else "max_runs reached, judged by its pass rate"
    )
    return (
        f"not needed: the sequential test decided the scenario {verdict} after "
        f"{decision.after} of at most {plan.max_runs} runs ({how})"
    )


def sequential_plan(
    scenario: Scenario, options: SessionOptions | None, repeat: int, minimum: float | None
) -> SequentialPlan | None:
    """How a repeated scenario's runs are decided sequentially: its own ``repeat:
    {decide: sequential}``, else --harness-decide sequential (with --harness-repeat N as
    the most runs) for a file without ``repeat:``; None: every run runs."""
    if repeat == 1:
        return None
    if "repeat" in scenario.model_fields_set:
        return scenario.sequential
    if options is None or options.decide != "sequential":
        return None
    return SequentialPlan(max_runs=repeat, min_pass_rate=1.0 if minimum is None else minimum)


def make_sequential(item: Any, plan: SequentialPlan) -> None:
    """Make ``item`` (a ScenarioItem) a run of a sequential scenario: it skips once the
    verdict is clear, and xdist keeps the scenario's runs on one worker."""
    item.sequential = plan
    item.add_marker(pytest.mark.xdist_group(name=group_of(item.scenario_key)))


def skip_if_not_needed(item: Any, sequences: Sequences | None) -> None:
    """Skip a sequential scenario's run (a ScenarioItem) once its verdict is clear in
    ``sequences``, saying why (``item.not_needed``, carried on its report: not a skipped
    scenario)."""
    decision = sequences.decided(item.scenario_key) if sequences is not None else None
    if decision is not None:
        item.not_needed = not_needed(decision, item.sequential)
        # Shown at the scenario's file (as a skip mark's is), not at this line.
        raise pytest.skip.Exception(item.not_needed, _use_item_location=True)


class _Scenario:
    """One sequential scenario's runs in this process: outcomes by run, fed in order."""

    def __init__(self, plan: SequentialPlan) -> None:
        self.progress = Progress(plan)
        self.ended: dict[int, bool] = {}
        self.next = 1  # the first run not fed to the test yet

    def add(self, run: int, passed: bool) -> None:
        self.ended[run] = passed
        while self.next in self.ended and self.progress.decision is None:
            self.progress.add(self.ended.pop(self.next))
            self.next += 1


def _rename(item: Any, nodeid: str) -> None:
    """Give ``item`` another node id. pytest keeps it as a parsed ``NodeId`` from 9 on
    (``_id``; xdist 3.8's own loadgroup renaming, of ``_nodeid``, no longer takes), as a
    string before."""
    if hasattr(item, "_id"):
        from _pytest.nodeid import coerce_node_id

        item._id = coerce_node_id(nodeid)
    else:
        item._nodeid = nodeid


class Sequences:
    """The sequential scenarios of a session (a pytest plugin, one per process)."""

    NAME = "harness-sequential"

    def __init__(self) -> None:
        self._scenarios: dict[str, _Scenario] = {}

    def decided(self, key: str) -> Decision | None:
        """The decision of scenario ``key`` (None: undecided, or not sequential)."""
        scenario = self._scenarios.get(key)
        return scenario.progress.decision if scenario is not None else None

    def record(self, key: str, plan: SequentialPlan, run: int, passed: bool) -> None:
        """A run of scenario ``key`` ended: feed it to the test in run order."""
        scenario = self._scenarios.get(key)
        if scenario is None:
            scenario = self._scenarios[key] = _Scenario(plan)
        scenario.add(run, passed)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[Any]) -> None:
        """In an xdist worker, name each sequential run after its group (as ``--dist
        loadgroup`` names a marked test), so that the controller keeps them together."""
        if not hasattr(config, "workerinput"):
            return  # serial: nothing to keep together
        for item in items:
            if getattr(item, "sequential", None) is not None and "@" not in item.nodeid:
                _rename(item, f"{item.nodeid}@{group_of(item.scenario_key)}")

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """On the controller: a suite with sequential runs is scheduled by group when it
        would be by load (before the first collection reaches the scheduler)."""
        if not any(f"@{GROUP_PREFIX}" in nodeid for nodeid in ids):
            return
        from xdist.scheduler import LoadGroupScheduling, LoadScheduling  # type: ignore[import-untyped]

        dsession = node.config.pluginmanager.get_plugin("dsession")
        sched: Any = getattr(dsession, "sched", None)
        if type(sched) is not LoadScheduling:
            return  # another --dist: the user's choice
        if sched.collection_is_completed:
            return
        if sched.node2collection:
            return  # a collection reached it already: too late to change
        grouped = LoadGroupScheduling(node.config, dsession.log)
        for each in sched.nodes:
            grouped.add_node(each)
        dsession.sched = grouped
