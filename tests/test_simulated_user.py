"""Simulated users: ``user: {simulator: llm, goal, persona, stop_when, ...}`` in a ``turns:``
scenario, a model playing the user. Scripted offline from the ``llm.conversations`` rule
that matches its system prompt; on every provider, its requests recorded into the
scenario's cassette (marked ``x-harness-role: user``, like a judge's) through `harness
serve` as the upstream, and replayed offline with the same results
(docs/scenarios.md#simulated-users).
"""

from __future__ import annotations

import json

import pytest
from scenario_texts import SESSION_TESTS

from harness._messages import AssistantMessage, Conversation, ToolCall, ToolMessage, UserMessage
from harness._users import STOP, LLMUser, UserContext
from harness.scenario import load_scenario
from harness.serve import create_app, running_app

pytestmark = SESSION_TESTS

TURNS = """\
name: refund
turns:
  - {}
  - {}
  - expect: {final: {contains: refunded}}
user:
  simulator: llm
  goal: get a refund for order 7
  persona: a terse customer
  stop_when: the refund is confirmed
tools:
  refund: {parameters: {order: str}, returns: done}
expect:
  turns: 2
  final: {contains: refunded}
"""

SCRIPTED = (
    TURNS
    + """\
llm:
  script:
    - content: Which order?
    - tool_calls: [{refund: {order: "7"}}]
    - content: Order 7 is refunded.
  conversations:
    - match: {system_contains: refund for order 7}
      script:
        - content: I want a refund.
        - content: Order 7.
        - content: Thanks. <<END>>
"""
)

RECORDED = {
    "openai": ("gpt-4o-mini", "/v1"),
    "anthropic": ("claude-sonnet-4-6", ""),
    "gemini": ("gemini-2.5-flash", ""),
}


@pytest.fixture
def project(cli_project, monkeypatch):
    """An empty project as the current directory, model keys set and no vendor base URL;
    ``project.run_harness(*args)``."""
    (cli_project.path / "served").mkdir()
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("GOOGLE_API_KEY", "test")
    return cli_project


def _entries(project) -> list[dict]:
    data = json.loads((project.path / "reports/results.json").read_text())
    return [
        {k: v for k, v in s.items() if k not in ("wall_time", "wall_clock")}
        for s in data["scenarios"]
    ]


def test_a_scripted_user_speaks_from_its_conversation_rule_and_ends_the_talk(project):
    (project.path / "scenarios/refund.scenario.yaml").write_text(SCRIPTED)
    status, out = project.run_harness("run")
    assert status == 0, out
    [entry] = _entries(project)
    assert [(t["user"], t["final"]["content"]) for t in entry["turns"]] == [
        ("I want a refund.", "Which order?"),
        ("Order 7.", "Order 7 is refunded."),
    ]  # it said the conversation was over before the third turn
    assert entry["usage"]["user_requests"] == 3


def _recorded_twin(project, provider: str, url: str) -> None:
    model, suffix = RECORDED[provider]
    base = url.removesuffix("/v1") + suffix
    text = TURNS.replace("  simulator: llm\n", f"  simulator: llm\n  model: {model}\n")
    text += f"llm: {{provider: {provider}, model: {model}, base_url: '{base}'}}\n"
    (project.path / "scenarios/refund.scenario.yaml").write_text(text)


@pytest.mark.parametrize("provider", sorted(RECORDED))
def test_a_conversation_recorded_through_serve_replays_offline_the_same(project, provider):
    # The served file is the scripted scenario: the agent's replies, and the user's
    # conversation matched by the simulator's system prompt.
    (project.path / "served/refund.scenario.yaml").write_text(SCRIPTED)
    served = load_scenario(project.path / "served/refund.scenario.yaml")
    app = create_app(list(served.llm.script), conversations=served.llm.conversations)
    with running_app(app) as url:
        _recorded_twin(project, provider, url)
        status, out = project.run_harness("record", "scenarios")
        assert status == 0, out
    recorded = _entries(project)
    assert [t["user"] for t in recorded[0]["turns"]] == ["I want a refund.", "Order 7."]
    cassette = (project.path / "cassettes/refund.yaml").read_text()
    assert cassette.count("x-harness-role") == 3  # the user's three requests, marked
    # The server is gone: the replay reads the cassette alone, and gets the same.
    status, out = project.run_harness("run", "scenarios")
    assert status == 0, out
    assert _entries(project) == recorded


def test_a_scripted_agent_records_its_users_model_into_the_scenarios_cassette(project):
    (project.path / "served/refund.scenario.yaml").write_text(SCRIPTED)
    served = load_scenario(project.path / "served/refund.scenario.yaml")
    app = create_app([], conversations=served.llm.conversations)
    with running_app(app) as url:
        text = SCRIPTED.split("  conversations:")[0].replace(
            "  simulator: llm\n",
            f"  simulator: llm\n  provider: openai\n  model: gpt-4o-mini\n  base_url: '{url}'\n",
        )
        (project.path / "scenarios/refund.scenario.yaml").write_text(text)
        status, out = project.run_harness("record", "scenarios")
        assert status == 0, out
    recorded = _entries(project)
    assert (project.path / "cassettes/refund.yaml").is_file()
    status, out = project.run_harness("run", "scenarios")
    assert status == 0, out
    assert _entries(project) == recorded
    # Another goal asks otherwise: a miss that names the user's request.
    path = project.path / "scenarios/refund.scenario.yaml"
    path.write_text(path.read_text().replace("order 7", "order 8"))
    status, out = project.run_harness("run", "scenarios")
    assert status == 1, out
    assert "the simulated user's request 1 failed: cassette miss: user request 1" in out


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("  goal: get a refund for order 7\n", ""), "needs goal: what the user wants done"),
        (("system_contains: refund for order 7", "system_contains: order 9"), "add a rule"),
        (("  simulator: llm\n", "  simulator: llm\n  name: scripted\n"), "not both"),
        (("  simulator: llm\n", "  simulator: lml\n"), "unknown user simulator 'lml'"),
    ],
)
def test_a_simulated_users_problems_are_said_where_they_are(project, change, message):
    (project.path / "scenarios/refund.scenario.yaml").write_text(SCRIPTED.replace(*change))
    status, out = project.run_harness("validate", "scenarios")
    assert status == 2, out
    assert "refund.scenario.yaml:" in out and message in out


def test_a_user_on_another_provider_than_the_recorded_agent_is_refused(project):
    text = TURNS.replace("  simulator: llm\n", "  simulator: llm\n  provider: gemini\n  model: g\n")
    text += "llm: {provider: openai, model: gpt-4o-mini}\n"
    (project.path / "scenarios/refund.scenario.yaml").write_text(text)
    status, out = project.run_harness("validate", "scenarios")
    assert status == 2
    assert "records into the scenario's cassette, which provider openai writes" in out


def test_the_user_sees_the_agents_answers_as_the_other_side():
    class Source:
        async def converse(self, *args):
            raise AssertionError("not asked")

    user = LLMUser(UserContext(options={"goal": "g"}, llm=Source()))
    talk = Conversation(
        messages=[
            UserMessage(content="hi"),
            AssistantMessage(tool_calls=[ToolCall(id="c", name="t", arguments={})]),
            ToolMessage(tool_call_id="c", name="t", content="x"),
            AssistantMessage(content="hello"),
        ]
    )
    seen = user.seen_by_user(talk).to_openai()
    assert [(m["role"], m["content"]) for m in seen[1:]] == [
        ("user", seen[1]["content"]),  # the opening: write your first message
        ("assistant", "hi"),
        ("user", "hello"),
    ]
    assert "Your goal: g" in seen[0]["content"] and STOP in seen[0]["content"]
