"""Run is what plugins read and call, as docs/plugins.md lists it; the engine's
bookkeeping is its ledger's, which the loop and the external observer share."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness import Agent, Termination, hookimpl, tool
from harness._ledger import Ledger as _Ledger
from harness._run import Run
from harness.scenario import run_scenario

ROOT = Path(__file__).resolve().parents[1]


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def _documented() -> set[str]:
    """The ``run.NAME`` rows of docs/plugins.md's table of Run."""
    text = (ROOT / "docs" / "plugins.md").read_text(encoding="utf-8")
    table = text.split("## The `Run` a planner and the hooks receive", 1)[1].split("\n\n|", 1)[1]
    rows = table.split("\n\n", 1)[0].splitlines()
    return {
        name for row in rows for name in re.findall(r"`(?:await )?run\.(\w+)", row.split("|")[1])
    }


class Keep:
    """Keeps the run its hooks see."""

    run: Run | None = None

    @hookimpl
    def harness_agent_start(self, run):
        self.run = run


def test_docs_list_exactly_what_a_run_offers_plugins():
    keep = Keep()
    Agent(llm=[{"content": "hi"}], plugins=[keep]).run("?")

    public = {name for name in dir(keep.run) if not name.startswith("_")}
    assert public == _documented()


@pytest.mark.parametrize(
    "name", ["iteration", "llm_calls", "sim_time", "usage", "records", "termination"]
)
def test_the_loops_bookkeeping_is_read_only_for_plugins(name):
    class Meddler:
        @hookimpl
        def harness_iteration_start(self, run, iteration):
            setattr(run, name, None)

    result = Agent(llm=[{"content": "hi"}], plugins=[Meddler()]).run("?")

    assert result.termination == Termination.error
    assert result.final.error.exception == "AttributeError"
    assert f"property '{name}' of 'Run' object has no setter" in result.final.error.message


@pytest.fixture
def not_run_plans(monkeypatch):
    """The plans recorded through the ledger's one way of recording a plan not run."""
    plans: list[list[str]] = []
    record_not_run = _Ledger.record_not_run

    def spy(self, calls, *args, **kwargs):
        plans.append([call.name for call in calls])
        return record_not_run(self, calls, *args, **kwargs)

    monkeypatch.setattr(_Ledger, "record_not_run", spy)
    return plans


def test_the_loop_records_a_declined_plan_through_the_ledger(not_run_plans):
    same = {"tool_calls": [{"lookup": {"key": "a"}}]}
    result = Agent(llm=[same] * 5, tools=[lookup], stagnation_window=2).run("?")

    assert result.termination == Termination.stagnation
    assert not_run_plans == [["lookup"]]
    assert [r.status for r in result.tool_calls] == ["ok", "ok", "not_run"]


def test_the_observer_records_a_plan_through_the_same_ledger(not_run_plans, monkeypatch):
    # An external target's plan is recorded not run until a request carries its results.
    monkeypatch.syspath_prepend(str(ROOT))
    result = run_scenario(ROOT / "scenarios" / "external" / "raw-sync.scenario.yaml")

    assert result.status == "passed"
    assert not_run_plans == [["get_weather"], ["get_weather", "get_time"]]
    assert [r.status for r in result.tool_calls] == ["ok", "ok", "ok"]
