"""Handoffs stay one conversation (issue 43, docs/external.md#several-conversations).

An Agents SDK handoff sends the receiving agent's requests with its own instructions and
the whole conversation so far: harness must read them as the same conversation going on
(the handoff call ran, its result is the SDK's transfer message), not as a new "main"
conversation with the handoff left ``not_run``. A supervisor's worker matched by a rule of
``llm.conversations`` is still a conversation of its own.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml

from harness.scenario import run_scenario

pytest.importorskip("agents", reason="handoffs are the OpenAI Agents SDK's")

AGENTS = '''
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"18C in {city}"


def _triage(model=None):
    options = {} if model is None else {"model": model}
    weather = Agent(
        name="Weather agent",
        instructions="You answer weather questions with the tool.",
        tools=[get_weather],
        handoff_description="Knows the weather.",
        **options,
    )
    return Agent(
        name="Triage agent",
        instructions="You hand the question to the right agent.",
        handoffs=[weather],
        **options,
    )


async def responses(question):
    """The docs' handoff example, on the SDK's default (Responses) model."""
    set_tracing_disabled(True)
    return (await Runner.run(_triage(), question)).final_output


async def chat(question):
    """The same agents on Chat Completions."""
    set_tracing_disabled(True)
    model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=AsyncOpenAI())
    return (await Runner.run(_triage(model), question)).final_output
'''

SCENARIO = """\
target: {{python: "handoff_agents:{agent}", timeout: 60}}
input: What's the weather in Paris?
llm:
  script:
    - tool_calls: [{{transfer_to_weather_agent: {{}}}}]
    - tool_calls: [{{get_weather: {{city: Paris}}}}]
    - content: It is 18C in Paris.
expect:
  termination: completed
  llm_calls: 3
  tool_calls: {{sequence: [transfer_to_weather_agent, get_weather], exact: true}}
  final: {{contains: 18C}}
  script_consumed: true
"""


@pytest.fixture
def project(tmp_path, monkeypatch, fresh_plugins):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / "handoff_agents.py").write_text(AGENTS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("agent", ["responses", "chat"])
def test_a_handoff_goes_on_in_the_same_conversation(project, agent):
    path = project / f"{agent}.scenario.yaml"
    path.write_text(textwrap.dedent(SCENARIO.format(agent=agent)))

    result = run_scenario(path)

    assert result.status == "passed", (result.final, [e for e in result.expectations if not e.ok])
    handoff, weather = result.tool_calls
    assert (handoff.status, handoff.result) == ("ok", '{"assistant": "Weather agent"}')
    assert (weather.status, weather.result) == ("ok", "18C in Paris")
    assert not result.conversations  # one conversation: no list of them
    # The transcript is the receiving agent's: its instructions, then the whole history.
    system = [m.content for m in result.transcript if m.role == "system"]
    assert system == ["You answer weather questions with the tool."]
    assert [m.role for m in result.transcript if m.role != "system"] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "assistant",
    ]


SUPERVISOR = '''
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent
from langgraph_supervisor import create_supervisor


def web_search(query: str) -> str:
    """Search the web for information."""
    return "Meta 67,317; Apple 164,000; Amazon 1,551,000; Netflix 14,000; Google 181,269."


def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


def answer(question):
    """langgraph-supervisor's README example: a supervisor and two experts."""
    model = ChatOpenAI(model="gpt-4o", max_retries=0)
    research = create_react_agent(
        model=model,
        tools=[web_search],
        name="research_expert",
        prompt="You are a world class researcher with access to web search. Do not do any math.",
    )
    math = create_react_agent(
        model=model,
        tools=[add],
        name="math_expert",
        prompt="You are a math expert. Always use one tool at a time.",
    )
    workflow = create_supervisor(
        [research, math],
        model=model,
        prompt="You are a team supervisor managing a research expert and a math expert.",
    )
    result = workflow.compile().invoke({"messages": [{"role": "user", "content": question}]})
    return result["messages"][-1].content
'''

RECORDED = """\
target: {python: "supervisor_agent:answer", timeout: 60}
input: What was the combined headcount of the FAANG companies in 2024?
llm: {provider: openai, model: gpt-4o, cassette: supervisor.yaml}
expect: {termination: completed, script_consumed: true, final: {contains: "1,977,586"}}
"""


def test_a_langgraph_supervisor_recording_replays_under_another_hash_seed(tmp_path):
    import os
    import subprocess
    import sys

    pytest.importorskip("langgraph_supervisor")
    import harness
    from harness.llm._config import ConversationRule
    from harness.llm._script import parse_step
    from harness.serve import create_app, running_app

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / "supervisor_agent.py").write_text(SUPERVISOR)
    (tmp_path / "supervisor.scenario.yaml").write_text(RECORDED)
    steps = [
        {"tool_calls": [{"transfer_to_research_expert": {}}]},
        {"content": "The combined headcount was 1,977,586."},
    ]
    research = ConversationRule.model_validate(
        {
            "name": "research",
            "match": {"system_contains": "world class researcher"},
            "script": [
                {"tool_calls": [{"web_search": {"query": "FAANG headcount 2024"}}]},
                {"content": "Meta 67,317; Apple 164,000; Amazon 1,551,000; ..."},
            ],
        }
    )
    app = create_app([parse_step(i, s) for i, s in enumerate(steps)], conversations=[research])

    def harness_run(
        seed: str, *args: str, command: str = "run", **env: str
    ) -> subprocess.CompletedProcess:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        environ.update(
            env, PYTHONHASHSEED=seed, PYTHONPATH=str(Path(harness.__file__).resolve().parents[1])
        )
        return subprocess.run(
            [sys.executable, "-m", "harness.cli", command]
            + (["--record-mode", "once"] if env else [])
            + list(args),
            cwd=tmp_path,
            env=environ,
            capture_output=True,
            text=True,
            timeout=300,
        )

    # Seeds 0 and 3 order the supervisor's two handoff tools (built from a set) apart.
    with running_app(app) as upstream:
        recorded = harness_run(
            "0", "supervisor.scenario.yaml", OPENAI_BASE_URL=upstream, OPENAI_API_KEY="sk-upstream"
        )
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    cassette = (tmp_path / "supervisor.yaml").read_text()
    assert "transfer_back_to_supervisor" in cassette

    replayed = harness_run("3", "supervisor.scenario.yaml", "--json", "one.json")
    again = harness_run("3", "supervisor.scenario.yaml", "--json", "two.json")

    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert again.returncode == 0, again.stdout + again.stderr
    # The ids it made up for the calls it adds are written by first appearance, so the
    # same replay gives the same results (outside the wall clock).
    one, two = (
        json.loads((tmp_path / name).read_text())["scenarios"][0]
        for name in ("one.json", "two.json")
    )
    transcript = one["transcript"]
    back = [c for m in transcript for c in m.get("tool_calls") or [] if c["name"].endswith("visor")]
    assert [c["id"] for c in back] == ["client_1"]
    assert transcript == two["transcript"]

    # Frozen: the supervisor's requests are its run, its worker's (sent with the
    # supervisor's history and the worker's instructions) a conversation held beside it.
    frozen = harness_run(
        "3",
        "--scenario",
        "supervisor.scenario.yaml",
        "-o",
        "frozen.scenario.yaml",
        command="freeze",
    )
    assert frozen.returncode == 0, frozen.stderr
    assert "held during it" in frozen.stderr
    script = yaml.safe_load((tmp_path / "frozen.scenario.yaml").read_text())["llm"]
    assert [("tool_calls" in step, "content" in step) for step in script["script"]] == [
        (True, False),
        (False, True),
    ]
    (worker,) = script["conversations"]
    assert "world class researcher" in worker["match"]["system_contains"]
    ran = harness_run("5", "frozen.scenario.yaml")
    assert ran.returncode == 0, ran.stdout + ran.stderr
