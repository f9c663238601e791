"""Freezing what a client chained on the Responses API (``previous_response_id``) and a
reply that calls a tool its request never offered, each recorded for real: the openai
SDK's agent runs as a target under ``harness record`` mode, its upstream another harness
server on 127.0.0.1.
"""

from __future__ import annotations

import textwrap

import pytest

from harness.freeze import FreezeError, freeze
from harness.scenario import run_scenario
from harness.serve import running_server

AGENT = """
import openai

TOOLS = [{"type": "function", "name": "lookup", "description": "Looks a city up.",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                         "required": ["city"]}}]


def chained(question):
    client = openai.OpenAI(max_retries=0)
    first = client.responses.create(
        model="gpt-4o-mini", instructions="Answer with the tools.", input=question, tools=TOOLS
    )
    call = next(item for item in first.output if item.type == "function_call")
    # Chained: only the new items, and no instructions (the API keeps the earlier ones
    # in the conversation, not as this response's).
    second = client.responses.create(
        model="gpt-4o-mini",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id,
                "output": "Paris: 18C, cloudy"}],
        tools=TOOLS,
    )
    return second.output_text


def made_up(question):
    client = openai.OpenAI(max_retries=0)
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
    )
    # The model called a tool this agent never offered: it stops there.
    return str(reply.choices[0].message.tool_calls[0].function.name)
"""


@pytest.fixture
def project(tmp_path, monkeypatch, fresh_plugins):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / "chained_freeze_agent.py").write_text(AGENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _record(project, monkeypatch, function: str, steps: list) -> object:
    path = project / f"{function}.scenario.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            target: {{python: "chained_freeze_agent:{function}", timeout: 30}}
            input: Weather in Paris?
            llm: {{provider: openai, model: gpt-4o-mini, cassette: {function}.yaml}}
            """
        )
    )
    with running_server(steps) as upstream, monkeypatch.context() as m:
        m.setenv("OPENAI_BASE_URL", upstream)
        m.setenv("OPENAI_API_KEY", "sk-chained-0123456789")
        result = run_scenario(path, record_mode="once")
    assert result.termination == "completed", result.final
    return project / f"{function}.yaml"


def test_a_chained_request_without_instructions_changes_no_system_text(project, monkeypatch):
    steps = [
        {"tool_calls": [{"lookup": {"city": "Paris"}}]},
        {"content": "It is 18C and cloudy in Paris."},
    ]
    cassette = _record(project, monkeypatch, "chained", steps)

    frozen = freeze(cassette, output=project / "frozen.scenario.yaml")

    assert not [n for n in frozen.notes if "system text" in n], frozen.notes
    assert "Answer with the tools." in frozen.text


def test_a_call_to_a_tool_never_offered_is_said_to_be_made_up_first(project, monkeypatch):
    steps = [{"tool_calls": [{"lookup": {"city": "Paris"}}], "unknown_tools": True}]
    cassette = _record(project, monkeypatch, "made_up", steps)

    try:
        frozen = freeze(cassette, output=project / "frozen.scenario.yaml")
    except FreezeError as refused:
        said = str(refused)
    else:
        said = " ".join(frozen.notes)
    assert "never offered lookup" in said
    assert said.index("never offered") < said.find("output tool") or "output tool" not in said
