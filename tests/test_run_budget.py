"""A budget for a whole live run: ``--max-requests N`` / ``--max-cost USD`` against `harness
serve` standing in for the API. Once reached no new scenario starts; the ones left are
reported as not run for the budget (never as passed) and the run exits 1; each shard
keeps to its share (docs/running.md#a-budget-for-the-whole-run).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from scenario_texts import SESSION_TESTS

from harness._runbudget import share
from harness.llm._script import parse_step
from harness.serve import create_app, running_app

pytestmark = SESSION_TESTS

SCENARIO = """\
name: {name}
input: What's the weather in SF?
tools:
  get_weather: {{parameters: {{city: str}}, returns: 72F}}
llm: {{provider: openai, model: {model}, base_url: "{url}"}}
expect:
  final: {{contains: 72F}}
"""

# Two requests a run: a tool call, then the answer; 1,000 and 100 tokens each.
STEPS = [
    {"tool_calls": [{"get_weather": {"city": "SF"}}], "usage": {"prompt_tokens": 1000}},
    {"content": "It is 72F in SF.", "usage": {"prompt_tokens": 1000, "completion_tokens": 100}},
]


class Counting:
    """ASGI middleware counting the model requests."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.requests = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].endswith("/chat/completions"):
            self.requests += 1
        await self.app(scope, receive, send)


@pytest.fixture
def project(cli_project, monkeypatch):
    """An empty project with model prices as the current directory;
    ``project.run_harness(*args)``."""
    (cli_project.path / "pyproject.toml").write_text(
        "[project]\nname = 'demo'\n\n[tool.harness.prices]\n"
        "served = {input = 100, output = 1000}\n"  # USD per million tokens
    )
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return cli_project


def _live(project, count: int, *args: str, model: str = "served") -> tuple[int, str, Counting]:
    server = Counting(create_app([parse_step(i, s) for i, s in enumerate(STEPS)]))
    with running_app(server) as url:
        for i in range(count):
            text = SCENARIO.format(name=f"w{i}", url=url, model=model)
            (project.path / "scenarios" / f"w{i}.scenario.yaml").write_text(text)
        status, out = project.run_harness("run", "--live", *args)
    return status, out, server


def _results(project, name: str = "results.json") -> dict:
    return json.loads((project.path / "reports" / name).read_text())


def test_a_live_run_stops_at_max_requests_and_counts_none_it_left_as_passed(project):
    status, out, server = _live(project, 6, "--max-requests", "5", "--", "-rs")
    assert status == 1, out
    data = _results(project)
    ran = [s["id"] for s in data["scenarios"]]
    # Two requests each: after the third run the run has made 6 >= 5.
    assert ran == [f"scenarios/w{i}.scenario.yaml::w{i}" for i in range(3)]
    assert server.requests == 6  # nothing was sent for the ones left
    budget = data["budget"]
    assert budget["not_run"] == [f"scenarios/w{i}.scenario.yaml::w{i}" for i in range(3, 6)]
    assert (budget["requests"], budget["reached"], budget["max_requests"]) == (6, True, 5)
    assert data["summary"]["by_status"] == {"passed": 3}  # none of those left counted
    assert "skipped" not in data  # not a skipped scenario: not run for the budget
    assert (
        "budget (--max-requests 5): 6 request(s) made, $0.9000 spent: reached; 3 scenario "
        "run(s) not run for the budget (not passed: exit 1)"
    ) in out
    assert "  not run for the budget: scenarios/w3.scenario.yaml::w3" in out
    assert "not run: the run's budget was reached (6 request(s) made, --max-requests 5)" in out
    html = (project.path / "reports/report.html").read_text()
    assert "not run for the budget" in html and "scenarios/w5.scenario.yaml::w5" in html


def test_a_budget_not_reached_changes_nothing(project):
    status, out, _ = _live(project, 2, "--max-requests", "100")
    assert status == 0, out
    assert _results(project)["budget"] == {
        "max_requests": 100,
        "max_cost": None,
        "requests": 4,
        "cost": 0.6,
        "reached": False,
        "not_run": [],
    }
    assert "within it" in out


def test_max_cost_counts_usage_at_the_price_table(project):
    # Each run: 2,000 prompt tokens at $100/M and 100 completion tokens at $1000/M: $0.30.
    status, out, _ = _live(project, 4, "--max-cost", "0.5")
    assert status == 1, out
    budget = _results(project)["budget"]
    assert (budget["cost"], len(budget["not_run"])) == (0.6, 2)
    assert "$0.6000 spent" in out


def test_max_cost_needs_a_price_for_the_model(project):
    status, out, server = _live(project, 1, "--max-cost", "1", model="unpriced")
    assert status == 2, out
    assert "--max-cost: no price for model 'unpriced' (llm.model)" in out
    assert server.requests == 0


def test_each_shard_keeps_to_its_share(project):
    assert [share(5, i, 2) for i in range(2)] == [3, 2]
    assert share(1.0, 1, 4) == 0.25
    for shard in ("1/2", "2/2"):
        args = ("--max-requests", "4", "--shard", shard, "--json", f"reports/s{shard[0]}.json")
        status, out, _ = _live(project, 6, *args)
        assert status == 1, out
        budget = _results(project, f"s{shard[0]}.json")["budget"]
        # Each shard holds 3 of the 6 and may make 2 requests: one run each.
        assert (budget["requests"], len(budget["not_run"])) == (2, 2)
    status, out = project.run_harness("merge", "reports/s1.json", "reports/s2.json")
    assert status == 0, out  # the merge judges what ran
    merged = _results(project)["budget"]
    assert (merged["requests"], len(merged["not_run"])) == (4, 4)


def test_runs_in_flight_finish_and_none_starts_after(project):
    status, out, server = _live(project, 8, "--max-requests", "3", "--concurrency", "2")
    assert status == 1, out
    data = _results(project)
    ran = {s["id"] for s in data["scenarios"]}
    assert not ran & set(data["budget"]["not_run"])
    assert len(ran) + len(data["budget"]["not_run"]) == 8
    assert server.requests == 2 * len(ran) < 16


def test_a_budget_is_for_live_runs(project):
    status, out = project.run_harness("run", "--max-requests", "3")
    assert status == 2
    assert "--max-requests and --max-cost budget a --live run" in out


def test_a_run_in_parts_counts_on_from_the_parts_before(project):
    status, out, server = _live(project, 6, "--max-requests", "5", "--chunk-size", "2")
    assert status == 1, out
    budget = _results(project)["budget"]
    assert (budget["requests"], len(budget["not_run"]), server.requests) == (6, 3, 6)
