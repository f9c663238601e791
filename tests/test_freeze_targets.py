"""Freezing targets, recorded for real through harness's proxy (the upstream another
harness server on 127.0.0.1): the tools harness serves a target over MCP become stubs
with per-call results, and what the target itself did wrong is said as its own error.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.scenario import run_scenario
from harness.serve import running_server

ROOT = Path(__file__).resolve().parents[1]

AGENTS = """
from pathlib import Path

import openai


def _ask(question):
    client = openai.OpenAI(max_retries=0)
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
    )
    return reply.choices[0].message.content


def get_weather(city: str) -> str:
    '''Current weather for a city.'''
    if city == "Rome":
        raise RuntimeError("weather service unavailable")
    return f"18C, cloudy in {city}"


def react(question):
    # A ReAct text loop, as agents without tool calling write it (smolagents' CodeAgent
    # too): the model's action is text, its observation goes back as a user message.
    client = openai.OpenAI(max_retries=0)
    messages = [{"role": "user", "content": question}]
    while True:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        text = reply.choices[0].message.content
        if text.startswith("Final Answer:"):
            return text.removeprefix("Final Answer:").strip()
        city = text.removeprefix("Action: lookup ").strip()
        messages += [
            {"role": "assistant", "content": text},
            {"role": "user", "content": f"Observation: {get_weather(city)}"},
        ]


def raising(question):
    answer = _ask(question)
    raise ValueError(f"cannot parse {answer!r}")


def third_run_fails(question):
    # Keeps a count of its runs in a file: the third one finds the disk "full".
    calls = Path("runs.txt")
    calls.write_text(calls.read_text() + "." if calls.exists() else ".")
    answer = _ask(question)
    if len(calls.read_text()) == 3:
        raise OSError("No space left on device: 'answers.db'")
    return answer
"""

MCP_SCENARIO = """\
target:
  python: scenarios.mcp.agents.pydantic_ai_mcp:answer
  timeout: 60
input: What's the weather in Paris and in Rome?
tools:
  get_weather:
    description: Current weather for a city.
    parameters: {city: str}
    returns: "18C, cloudy in {{ args.city }}"
    latency: 0.5
    errors: [FAILURE]
llm: {provider: openai, model: gpt-4o-mini, cassette: mcp.yaml}
"""

# The second call's failure, served over MCP -> what the recorded run saw, and the frozen
# stub's entry for that call.
FAILURES = {
    "isError": (
        '{on_call: 2, raise: "weather service unavailable"}',
        "ToolError: weather service unavailable",
        (
            "results",
            {"on_call": 2, "returns": "ToolError: weather service unavailable", "is_error": True},
        ),
    ),
    "json-rpc": (
        '{on_call: 2, raise: "rate limited", mcp: -32000}',
        "rate limited",
        ("errors", {"on_call": 2, "raise": "rate limited", "mcp": -32000}),
    ),
}

MCP_STEPS = [
    # A call the served tool refuses (no city): it never reaches the stub, which counts
    # the calls it runs.
    {"tool_calls": [{"get_weather": {"town": "Paris"}}]},
    {"tool_calls": [{"get_weather": {"city": "Paris"}}]},
    {"tool_calls": [{"get_weather": {"city": "Rome"}}]},
    {"content": "Paris is 18C and cloudy; the weather service failed for Rome."},
]


@pytest.fixture
def project(tmp_path, monkeypatch, fresh_plugins):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / "freeze_targets_agents.py").write_text(AGENTS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    # This test's copy of the agents, not an earlier test's (its file is in this project).
    monkeypatch.delitem(sys.modules, "freeze_targets_agents", raising=False)
    # The example agents import as `scenarios.mcp.agents...` from the repository.
    monkeypatch.syspath_prepend(str(ROOT))
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _line(text: str) -> int:
    """The line of AGENTS holding ``text``."""
    return next(n for n, line in enumerate(AGENTS.splitlines(), 1) if text in line)


def _record(monkeypatch, path: Path, steps: list) -> object:
    with running_server(steps) as upstream, monkeypatch.context() as m:
        m.setenv("OPENAI_BASE_URL", upstream)
        m.setenv("OPENAI_API_KEY", "sk-targets-0123456789")
        return run_scenario(path, record_mode="once")


@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_the_tools_served_over_mcp_freeze_into_stubs_with_per_call_results(
    project, monkeypatch, capsys, failure
):
    pytest.importorskip("pydantic_ai.mcp")
    given, seen, (kind, entry) = FAILURES[failure]
    path = project / "mcp.scenario.yaml"
    path.write_text(MCP_SCENARIO.replace("FAILURE", given))
    recorded = _record(monkeypatch, path, MCP_STEPS)
    assert recorded.status == "passed", recorded.final
    statuses = [(c.name, c.status, c.result) for c in recorded.tool_calls]
    assert statuses[0][:2] == ("get_weather", "invalid")
    assert statuses[1:] == [
        ("get_weather", "ok", "18C, cloudy in Paris"),
        ("get_weather", "error", seen),
    ]

    out = project / "frozen.scenario.yaml"
    assert main(["freeze", "--scenario", str(path), "-o", str(out)]) == 0, capsys.readouterr()
    frozen = yaml.safe_load(out.read_text())
    # The agent still gets its tools over MCP: stubs answering each call as it was answered,
    # shown to it as they were (description, schema, latency).
    stub = frozen["tools"]["get_weather"]
    assert stub["description"] == "Current weather for a city."
    assert stub["parameters"] == {"city": "str"}
    assert stub["latency"] == 0.5
    first = {"on_call": 1, "returns": "18C, cloudy in Paris"}
    assert stub["results"] == [first, entry] if kind == "results" else [first]
    assert stub.get("errors", []) == ([entry] if kind == "errors" else [])
    assert "returns" not in stub

    replayed = run_scenario(out)
    assert replayed.status == "passed", (replayed.final, replayed.expectations)
    assert [(c.name, c.status, c.result) for c in replayed.tool_calls] == statuses
    assert replayed.final.content == recorded.final.content
    assert replayed.sim_time == recorded.sim_time == 1.0  # two calls ran, 0.5 s each


def test_a_real_tool_served_over_mcp_freezes_into_a_stub_shown_as_it_was(project, monkeypatch):
    pytest.importorskip("pydantic_ai.mcp")
    path = project / "mcp.scenario.yaml"
    path.write_text(
        MCP_SCENARIO.split("tools:")[0]
        + "tools:\n  get_weather: {use: 'freeze_targets_agents:get_weather'}\n"
        + "llm: {provider: openai, model: gpt-4o-mini, cassette: mcp.yaml}\n"
    )
    recorded = _record(monkeypatch, path, MCP_STEPS[1:])
    assert [c.status for c in recorded.tool_calls] == ["ok", "error"]

    out = project / "frozen.scenario.yaml"
    assert main(["freeze", "--scenario", str(path), "-o", str(out)]) == 0
    stub = yaml.safe_load(out.read_text())["tools"]["get_weather"]
    # No `use:` left: the function's description and schema, as the agent was shown them.
    assert "use" not in stub
    assert stub["description"] == "Current weather for a city."
    assert stub["schema"]["required"] == ["city"]
    assert stub["results"][1] == {
        "on_call": 2,
        "returns": "RuntimeError: weather service unavailable",
        "is_error": True,
    }
    replayed = run_scenario(out)
    assert replayed.status == "passed", (replayed.final, replayed.expectations)
    assert [(c.status, c.result) for c in replayed.tool_calls] == [
        (c.status, c.result) for c in recorded.tool_calls
    ]


def test_a_target_that_raises_is_refused_with_its_own_error(project, monkeypatch, capsys):
    path = project / "raising.scenario.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            target: {python: "freeze_targets_agents:raising", timeout: 30}
            input: Weather in Paris?
            llm: {provider: openai, model: gpt-4o-mini, cassette: raising.yaml}
            """
        )
    )
    assert _record(monkeypatch, path, [{"content": "18C"}]).termination == "error"

    assert main(["freeze", "--scenario", str(path), "-o", "frozen.scenario.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert (
        "the target's run ends in error (ValueError: cannot parse '18C' "
        f"(freeze_targets_agents.py:{_line('raise ValueError')} in raising))" in err
    )
    assert "fix the target and record again" in err and "a plugin" not in err


def test_a_target_that_fails_on_the_check_run_is_named_not_harness(project, monkeypatch, capsys):
    path = project / "flaky.scenario.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            target: {python: "freeze_targets_agents:third_run_fails", timeout: 30}
            input: Weather in Paris?
            llm: {provider: openai, model: gpt-4o-mini, cassette: flaky.yaml}
            """
        )
    )
    # Run 1 records, run 2 is the frozen run freeze takes the expectations from, run 3 the
    # check that the frozen scenario passes: the target fails there, on its own.
    assert _record(monkeypatch, path, [{"content": "18C"}]).status == "passed"

    assert main(["freeze", "--scenario", str(path), "-o", "frozen.scenario.yaml"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "a bug in harness" not in err and "please report" not in err
    assert "the target ran differently when the frozen scenario was run again" in err
    assert (
        "this one ended error: OSError: No space left on device: 'answers.db' "
        "(freeze_targets_agents.py:" in err
    )
    assert not (project / "frozen.scenario.yaml").exists()


def test_a_text_loops_own_user_turns_are_one_run(project, monkeypatch, capsys):
    """A target given one input whose client answers each plain reply with a user turn
    of its own (a ReAct text loop, smolagents): one run, frozen whole, not the last turn."""
    path = project / "react.scenario.yaml"
    path.write_text(
        "target: {python: 'freeze_targets_agents:react', timeout: 30}\n"
        "input: Weather in Paris?\n"
        "llm: {provider: openai, model: gpt-4o-mini, cassette: react.yaml}\n"
    )
    steps = [{"content": "Action: lookup Paris"}, {"content": "Final Answer: 18C in Paris."}]
    assert _record(monkeypatch, path, steps).status == "passed"

    assert main(["freeze", "--scenario", str(path), "-o", "frozen.scenario.yaml"]) == 0, (
        capsys.readouterr().err
    )
    frozen = yaml.safe_load((project / "frozen.scenario.yaml").read_text())
    assert [step["content"] for step in frozen["llm"]["script"]] == [s["content"] for s in steps]
    result = run_scenario(project / "frozen.scenario.yaml")
    assert result.status == "passed" and result.final.content == "18C in Paris."
