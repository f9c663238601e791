"""Budgets (docs/loop.md#budgets): each ends the run at the exact crossing, with termination
``budget`` and ``final.data = {budget, limit, used}``."""

from __future__ import annotations

import pytest

from harness import Agent, Termination, tool
from harness._budgets import DEFAULT_PRICES, run_cost
from harness._config import ModelPrice
from harness._errors import HarnessError


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def step(i, tokens=(100, 20), latency=0.0):
    return {
        "tool_calls": [{"lookup": {"key": f"k{i}"}}],
        "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]},
        "latency": latency,
    }


def run(script, planner="react", **budget):
    return Agent(llm=script, tools=[lookup], planner=planner, budget=budget).run("go")


def ran(result):
    return [r for r in result.tool_calls if r.status == "ok"]


def test_tokens_end_the_run_at_the_reply_that_crosses():
    script = [step(i) for i in range(6)] + [{"content": "done"}]
    result = run(script, tokens=300)  # 120 per reply: 240 fits, 360 crosses

    assert result.termination == Termination.budget
    assert result.iterations == 3
    assert result.llm_calls == 3
    assert len(ran(result)) == 2  # the crossing reply's call is not run
    assert result.tool_calls[-1].status == "not_run"
    assert result.final.data == {"budget": "tokens", "limit": 300, "used": 360}


def test_a_total_equal_to_the_limit_is_within_budget():
    script = [step(0), step(1), {"content": "done", "usage": {"prompt_tokens": 0}}]
    result = run(script, tokens=240)

    assert result.termination == Termination.completed


def test_tokens_under_agentbuilder_stop_right_after_the_request():
    script = [step(i) for i in range(6)]
    result = run(script, planner="agentbuilder", tokens=300)

    assert result.iterations == 5  # request, tools, request, tools, request (crossing)
    assert result.llm_calls == 3
    assert result.final.data["used"] == 360


def test_cost_uses_the_price_table_of_the_model():
    # gpt-4o-mini: 0.15 / 0.60 USD per million tokens -> 100 in + 20 out = 0.000027 USD.
    assert run_cost({"prompt_tokens": 100, "completion_tokens": 20}, DEFAULT_PRICES["gpt-4o-mini"])
    script = [step(i) for i in range(6)] + [{"content": "done"}]
    result = run(script, cost=0.00006, model="gpt-4o-mini")

    assert result.termination == Termination.budget
    assert result.llm_calls == 3  # 0.000027 x 3 = 0.000081 > 0.00006 >= 0.000054
    assert result.final.data == {"budget": "cost", "limit": 0.00006, "used": 0.000081}


def test_cost_with_a_price_given_in_the_config():
    script = [step(i) for i in range(6)]
    agent = Agent(
        llm=script,
        tools=[lookup],
        planner="react",
        budget={"cost": 1.0, "model": "my-model"},
        prices={"my-model": ModelPrice(input=5000, output=0)},
    )
    result = agent.run("go")  # 100 prompt tokens x 5000 / 1e6 = 0.5 USD a reply

    assert result.final.data == {"budget": "cost", "limit": 1.0, "used": 1.5}


def test_cost_without_a_known_price_is_an_error_that_says_how_to_fix_it():
    result = run([step(0)], cost=1.0, model="gpt-unknown")

    assert result.termination == Termination.error
    assert "no price for model 'gpt-unknown'" in result.final.error["message"]
    assert "[tool.harness.prices]" in result.final.error["message"]


def test_tool_calls_decline_the_plan_that_would_cross():
    script = [
        {"tool_calls": [{"lookup": {"key": "a"}}, {"lookup": {"key": "b"}}]},
        {"tool_calls": [{"lookup": {"key": "c"}}, {"lookup": {"key": "d"}}]},
        {"content": "done"},
    ]
    result = run(script, tool_calls=3)

    assert result.termination == Termination.budget
    assert result.iterations == 2
    assert [r.status for r in result.tool_calls] == ["ok", "ok", "not_run", "not_run"]
    assert result.final.data == {"budget": "tool_calls", "limit": 3, "used": 4}


def test_sim_time_ends_the_run_after_the_slow_reply():
    script = [step(i, latency=1.5) for i in range(6)]
    result = run(script, sim_time=4.0)

    assert result.termination == Termination.budget
    assert result.llm_calls == 3  # 4.5 s > 4.0 s
    assert result.final.data == {"budget": "sim_time", "limit": 4.0, "used": 4.5}


def test_no_budget_is_the_default_and_a_bad_one_is_refused():
    assert Agent(llm=[], tools=[lookup]).config.budget is None
    with pytest.raises(HarnessError, match="tokens"):
        Agent(llm=[], tools=[lookup], budget={"tokens": -1})


def test_a_scenario_files_cost_budget_reads_the_projects_prices(tmp_path):
    # The model is in no default table: its price is the project's [tool.harness.prices]
    # (docs/scenarios.md#stuck-detectors-and-budgets).
    from harness.scenario import run_scenario

    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'priced'\n\n[tool.harness.prices]\n"
        "my-model = {input = 5000, output = 0}\n"
    )
    steps = "\n".join(
        f"    - {{tool_calls: [{{lookup: {{key: k{i}}}}}], usage: {{prompt_tokens: 100}}}}"
        for i in range(6)
    )
    (tmp_path / "priced.scenario.yaml").write_text(
        "name: priced\ninput: go\n"
        "tools:\n  lookup: {parameters: {key: str}, returns: found}\n"
        f"llm:\n  script:\n{steps}\n"
        "agent:\n  budget: {cost: 1.0, model: my-model}\n"
    )
    result = run_scenario(tmp_path / "priced.scenario.yaml")

    assert result.termination == "budget", result.final
    # 100 prompt tokens x 5000 / 1e6 = 0.5 USD a reply: the third crosses 1.0.
    assert result.final.data == {"budget": "cost", "limit": 1.0, "used": 1.5}
