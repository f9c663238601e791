"""Handoffs stay one conversation (issue 43, docs/external.md#several-conversations).

An Agents SDK handoff sends the receiving agent's requests with its own instructions and
the whole conversation so far: harness must read them as the same conversation going on
(the handoff call ran, its result is the SDK's transfer message), not as a new "main"
conversation with the handoff left ``not_run``. A supervisor's worker matched by a rule of
``llm.conversations`` is still a conversation of its own.
"""

from __future__ import annotations

import textwrap

import pytest

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
