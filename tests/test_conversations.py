"""Several conversations in one target (docs/external.md#several-conversations): an Agents
SDK coordinator with two agents as tools and a LangGraph supervisor with two workers,
each worker scripted by ``llm.conversations`` and shown under its conversation in
results.json; smolagents, which merges a tool's result into the user turn before it,
advances the script; a bad match key is refused with its file and line.
"""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
import yaml

from harness._errors import ScenarioError
from harness._results import build_results
from harness.freeze import freeze
from harness.report._html import render_html
from harness.report._text import trajectory_lines
from harness.scenario import load_scenario, run_scenario
from harness.serve import create_app, running_app

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "scenarios" / "external"


@pytest.fixture(autouse=True)
def _examples_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))


def _conversations(result) -> list[dict]:
    entry = json.loads(build_results([result]).to_json())["scenarios"][0]
    return entry["conversations"]


@pytest.mark.parametrize(
    ("name", "modules", "handoffs"),
    [
        ("agents-sdk-agents-as-tools", ["agents"], ["research", "write"]),
        (
            "langgraph-supervisor",
            ["langgraph", "langchain_openai"],
            ["transfer_to_researcher", "transfer_to_writer"],
        ),
    ],
)
def test_each_agent_gets_its_own_script_and_its_calls_show_under_it(name, modules, handoffs):
    for module in modules:
        pytest.importorskip(module, reason=f"{name} needs {module}, which is not installed")
    result = run_scenario(EXAMPLES / f"{name}.scenario.yaml")

    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    shown = _conversations(result)
    assert [(c["conversation"], c["number"], c["calls"]) for c in shown] == [
        ("main", 1, [1, 4, 6]),
        ("researcher", 2, [2, 3]),
        ("writer", 3, [5]),
    ]
    main, researcher, writer = shown
    assert [call["name"] for call in main["tool_calls"]] == handoffs
    assert all(call["status"] == "ok" for call in main["tool_calls"])
    assert researcher["tool_calls"][0]["name"] == "get_weather"
    assert researcher["tool_calls"][0]["result"] == "18C, cloudy in Paris"
    assert researcher["final"]["content"] == "Paris: 18C, cloudy"
    assert writer["transcript"][0]["content"].startswith("You write")
    assert writer["final"]["content"] == "It is 18C and cloudy in Paris."


SMOL_AGENT = '''
from smolagents import OpenAIServerModel, ToolCallingAgent, tool


@tool
def lookup(city: str) -> str:
    """Looks a city up.

    Args:
        city: the city's name.
    """
    if city != "Paris":
        raise ValueError(f"unknown city {city}")
    return "Paris: 18C, cloudy"


def answer(question: str) -> str:
    model = OpenAIServerModel(model_id="gpt-4o-mini")
    agent = ToolCallingAgent(tools=[lookup], model=model, max_steps=4, verbosity_level=0)
    return str(agent.run(question))
'''

SMOL_SCENARIO = """
target:
  python: conversations_smol_agent:answer
  timeout: 60
input: Weather in Paris?
llm:
  script:
    - tool_calls: [{lookup: {city: Pariss}}]
    - tool_calls: [{lookup: {city: Paris}}]
    - tool_calls: [{final_answer: {answer: "18C, cloudy"}}]
expect:
  termination: completed
  llm_calls: 3
  final: {contains: 18C}
  script_consumed: true
"""


def test_a_failing_tool_of_smolagents_advances_the_script(tmp_path, monkeypatch):
    # smolagents sends a tool's error merged into the user turn before it, with no
    # assistant turn: the request still is a new one of the same conversation.
    pytest.importorskip("smolagents", reason="smolagents is not installed")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / "conversations_smol_agent.py").write_text(SMOL_AGENT)
    path = tmp_path / "smol.scenario.yaml"
    path.write_text(SMOL_SCENARIO)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))

    result = run_scenario(path)

    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert result.final.content == "18C, cloudy"


def test_a_bad_match_key_is_refused_with_its_line(tmp_path):
    path = tmp_path / "bad.scenario.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            target: {python: "nowhere:answer"}
            input: hi
            llm:
              script: [{content: hi}]
              conversations:
                - match: {system_has: You research}
                  script: [{content: hi}]
            """
        )
    )
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert f"{path}:6" in str(caught.value)
    assert "system_has" in str(caught.value)


def test_conversations_need_a_target(tmp_path):
    path = tmp_path / "own.scenario.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            input: hi
            llm:
              script: [{content: hi}]
              conversations:
                - match: {user_contains: hi}
                  script: [{content: hi}]
            """
        )
    )
    with pytest.raises(ScenarioError, match="harness's own agent holds one conversation"):
        load_scenario(path)


def test_the_report_names_the_conversation_of_each_model_call():
    pytest.importorskip("agents", reason="the Agents SDK is not installed")
    result = run_scenario(EXAMPLES / "agents-sdk-agents-as-tools.scenario.yaml")

    lines = trajectory_lines(result, verbose=True)

    assert lines[0].split()[1:4] == ["llm#1", "main", "->"]
    assert "llm#2 researcher -> get_weather" in lines[1]
    assert "llm#5 writer -> text" in lines[4]

    # The HTML timeline says it under each model call too.
    page = render_html(build_results([result]))
    named = re.findall(
        r"LLM call (\d+)</span><div class=\"sub conversation\">conversation: (\w+)", page
    )
    assert named == [
        ("1", "main"),
        ("2", "researcher"),
        ("3", "researcher"),
        ("4", "main"),
        ("5", "writer"),
        ("6", "main"),
    ]


def test_a_recording_of_several_conversations_freezes_into_llm_conversations(
    tmp_path, monkeypatch, fresh_plugins
):
    # Recorded for real: the coordinator runs under `harness record` mode, its upstream a
    # harness server answering from the example's own scripts on 127.0.0.1.
    pytest.importorskip("agents", reason="the Agents SDK is not installed")
    example = load_scenario(EXAMPLES / "agents-sdk-agents-as-tools.scenario.yaml")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    path = tmp_path / "coordinator.scenario.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            target: {python: "scenarios.external.agents.multi_agent:coordinate", timeout: 30}
            input: What's the weather in Paris?
            llm: {provider: openai, model: gpt-4o-mini, cassette: coordinator.yaml}
            """
        )
    )
    monkeypatch.chdir(tmp_path)
    served = create_app(list(example.llm.script), conversations=example.llm.conversations)
    with running_app(served) as upstream, monkeypatch.context() as m:
        m.setenv("OPENAI_BASE_URL", upstream)
        m.setenv("OPENAI_API_KEY", "sk-conversations-0123456789")
        recorded = run_scenario(path, record_mode="once")
    assert recorded.termination == "completed", recorded.final

    frozen = freeze(
        tmp_path / "coordinator.yaml", scenario=path, output=tmp_path / "f.scenario.yaml"
    )

    assert any("2 more conversation(s)" in note for note in frozen.notes), frozen.notes
    rules = yaml.safe_load(frozen.text)["llm"]["conversations"]
    assert [rule["match"] for rule in rules] == [
        {"system_contains": "You research facts with the tools."},
        {"system_contains": "You write one short sentence from the facts given."},
    ]
    (tmp_path / "f.scenario.yaml").write_text(frozen.text)
    replayed = run_scenario(tmp_path / "f.scenario.yaml")
    assert replayed.status == "passed", [e for e in replayed.expectations if not e.ok]
    assert [c.calls for c in replayed.conversations] == [[1, 4, 6], [2, 3], [5]]
