"""Scenario files with sub-agents (``agents:``, ``{agent: NAME}``) and code tools
(``{code: {...}}``): running them, results.json, and `harness validate` errors."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from harness._errors import ScenarioError
from harness._results import build_results, load_results
from harness.cli import main
from harness.scenario import load_scenario, run_scenario

REPO = Path(__file__).resolve().parent.parent

NESTED = """\
name: nested
input: Plan the trip.
tools:
  planner_agent: {agent: planner}
agents:
  planner:
    description: Plans a trip.
    tools:
      weather_agent: {agent: weather}
    llm:
      script:
        - tool_calls: [{weather_agent: {task: Weather in Oslo?}}]
        - content: Pack a coat.
  weather:
    agent: {max_iterations: 2}
    tools:
      get_weather:
        parameters: {city: str}
        returns: "cold in {{ args.city }}"
    llm:
      script:
        - tool_calls: [{get_weather: {city: Oslo}}]
          latency: 0.5
        - content: never reached
llm:
  script:
    - tool_calls: [{planner_agent: {task: Plan a trip to Oslo.}}]
    - content: Pack a coat.
expect:
  termination: completed
  final: {equals: Pack a coat.}
"""


def write(tmp_path: Path, text: str, name: str = "case.scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_sub_runs_are_kept_nested_in_results_json(tmp_path):
    result = run_scenario(write(tmp_path, NESTED))
    assert result.status == "passed"
    results = build_results([result])
    data = json.loads(results.to_json())
    (call,) = data["scenarios"][0]["tool_calls"]
    sub = call["sub_run"]
    assert (sub["agent"], sub["depth"], sub["termination"]) == ("planner_agent", 1, "completed")
    assert (sub["iterations"], sub["llm_calls"]) == (4, 2)
    assert sub["final"]["content"] == "Pack a coat."
    (inner_call,) = sub["tool_calls"]
    assert inner_call["status"] == "error" and inner_call["is_error"] is True
    assert inner_call["result"].startswith(
        "sub-agent 'weather_agent' ended max_iterations: Max iterations reached ("
    )
    inner = inner_call["sub_run"]
    assert (inner["agent"], inner["depth"], inner["termination"]) == (
        "weather_agent",
        2,
        "max_iterations",
    )
    # The innermost calls made no sub-run: the key is absent, as on every ordinary call.
    assert [c["name"] for c in inner["tool_calls"]] == ["get_weather"]
    assert "sub_run" not in inner["tool_calls"][0]
    # Wall-clock time stays out of sub-runs (a baseline of them is reproducible); the
    # simulated time of the sub-runs is the parent call's duration.
    assert "wall_time" not in sub and "wall_time" not in inner
    assert (call["sim_start"], call["sim_end"]) == (0.0, 0.5)
    # results.json reads back with its sub-runs.
    path = tmp_path / "results.json"
    results.write(path)
    loaded = load_results(path).scenarios[0].tool_calls[0].sub_run
    assert loaded.tool_calls[0].sub_run.termination == "max_iterations"


def test_results_without_sub_agents_have_no_sub_run_key(tmp_path):
    text = NESTED.replace("planner_agent: {agent: planner}", "planner_agent: {returns: ok}")
    data = json.loads(build_results([run_scenario(write(tmp_path, text))]).to_json())
    assert all("sub_run" not in c for c in data["scenarios"][0]["tool_calls"])


def test_the_example_scenarios_pass():
    for name in (
        "agents/coordinator",
        "code/compute",
        "code/infinite-loop",
        "code/network-blocked",
    ):
        result = run_scenario(REPO / "scenarios" / f"{name}.scenario.yaml")
        assert result.status == "passed", (name, result.expectations)


def test_the_coordinator_goes_on_after_a_failed_sub_agent():
    result = run_scenario(REPO / "scenarios/agents/coordinator.scenario.yaml")
    researcher, fetcher = result.tool_calls
    assert (researcher.status, fetcher.status) == ("ok", "error")
    assert fetcher.sub_run.termination == "max_iterations"
    assert fetcher.sub_run.iterations == 4
    assert result.termination == "completed"


def test_a_sub_agent_shared_by_two_tools_is_built_once(tmp_path):
    text = """\
    input: go
    tools:
      a: {agent: helper}
      b: {agent: helper}
    agents:
      helper:
        llm:
          script:
            - content: first
            - content: second
    llm:
      script:
        - tool_calls: [{a: {task: one}}]
        - tool_calls: [{b: {task: two}}]
        - content: done
    """
    result = run_scenario(write(tmp_path, text))
    # One agent, one script: the second call goes on where the first stopped.
    assert [c.result for c in result.tool_calls] == ["first", "second"]


# (description, file text, line, field, fragment of the message)
BAD = [
    (
        "unknown agent name",
        "tools:\n  helper: {agent: helpr}\nagents:\n  helper_agent: {}\n  helpr2: {}\n",
        2,
        "tools.helper.agent",
        "unknown agent 'helpr' (did you mean 'helpr2'?); agents: helper_agent, helpr2",
    ),
    (
        "agent tool without an agents section",
        "tools:\n  helper: {agent: someone}\n",
        2,
        "tools.helper.agent",
        "unknown agent 'someone'; agents: none (define them under a top-level agents:)",
    ),
    (
        "bad sandbox name",
        "tools:\n  python:\n    code: {sandbox: firejail}\n",
        3,
        "tools.python.code.sandbox",
        "expected 'auto', 'process', 'bubblewrap' or 'docker'",
    ),
    (
        "zero timeout",
        "tools:\n  python:\n    code: {sandbox: process, timeout: 0}\n",
        3,
        "tools.python.code.timeout",
        "expected more than 0, got 0",
    ),
    (
        "code tool with returns",
        "tools:\n  python:\n    code: {sandbox: process}\n    returns: 1\n",
        2,
        "tools.python",
        "a tool with `code:` runs the model's code, with fixed arguments: remove returns",
    ),
    (
        "agent and use at once",
        "tools:\n  helper:\n    agent: a\n    use: 'os:getcwd'\nagents:\n  a: {}\n",
        2,
        "tools.helper",
        "a tool is one thing: give one of use, agent",
    ),
    (
        "a sub-agent that reaches itself",
        "tools:\n  go: {agent: a}\nagents:\n  a:\n    tools:\n      call_b: {agent: b}\n"
        "  b:\n    tools:\n      call_a: {agent: a}\n",
        9,
        "agents.b.tools.call_a.agent",
        "agent 'a' reaches itself (a -> b -> a)",
    ),
    (
        "a sub-agent's script calls a tool it does not have",
        "agents:\n  a:\n    tools:\n      t: {returns: 1}\n    llm:\n      script:\n"
        "        - tool_calls: [{u: {}}]\n",
        7,
        "agents.a.llm.script.0.tool_calls.0",
        "calls tool 'u', which agent 'a' does not have",
    ),
    (
        "a sub-agent's unknown planner",
        "agents:\n  a:\n    agent: {planner: nosuch}\n",
        3,
        "agents.a.agent.planner",
        "nosuch",
    ),
    (
        "a sub-agent's unknown setting",
        "agents:\n  a:\n    agent: {max_iteration: 3}\n",
        3,
        "agents.a.agent.max_iteration",
        "unknown key 'max_iteration' (did you mean 'max_iterations'?)",
    ),
    (
        "a sub-agent's stub template error",
        "agents:\n  a:\n    tools:\n      t: {returns: '{{ args.x '}\n",
        4,
        "agents.a.tools.t.returns",
        "template",
    ),
    (
        "a recorded sub-agent without its own cassette",
        "agents:\n  a:\n    llm: {provider: openai, model: gpt-4o-mini}\n",
        3,
        "agents.a.llm",
        "a recorded sub-agent needs a cassette of its own",
    ),
    (
        "a bad agent name",
        "agents:\n  'two words': {}\n",
        2,
        "agents.two words",
        "use 1 to 64 letters",
    ),
]


@pytest.mark.parametrize(
    ("kind", "text", "line", "field", "fragment"), BAD, ids=[c[0] for c in BAD]
)
def test_bad_agents_and_code_tools_name_line_and_field(
    tmp_path, capsys, kind, text, line, field, fragment
):
    path = write(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    prefix = f"{path.as_posix()}:{line}: {field}: "
    matching = [m for m in message.splitlines() if m.startswith(prefix)]
    assert matching, f"no line starts with {prefix!r} in:\n{message}"
    assert any(fragment in m for m in matching), message
    assert main(["validate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert fragment in out + err and "Traceback" not in out + err


def test_a_backend_that_cannot_run_here_is_a_load_error(tmp_path):
    from harness.sandbox import get_sandbox
    from harness.sandbox._base import SandboxError

    try:
        get_sandbox("docker")
    except SandboxError as exc:
        reason = str(exc)
    else:
        pytest.skip("a Docker engine answers here: docker is usable")
    path = write(tmp_path, "tools:\n  python:\n    code: {sandbox: docker}\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert f"{path.as_posix()}:3: tools.python.code.sandbox: {reason}" in str(info.value)


def _blocks(path: Path, language: str, after: str = "") -> list[str]:
    text = path.read_text(encoding="utf-8")
    return re.findall(rf"```{language}\n(.*?)```", text[text.index(after) :], re.S)


def test_the_docs_examples_run_as_they_say(tmp_path):
    (python,) = _blocks(REPO / "docs/agents.md", "python")
    exec(compile(python, "docs/agents.md", "exec"), {})
    scenarios = [
        *_blocks(REPO / "docs/agents.md", "yaml"),
        _blocks(REPO / "README.md", "yaml", after="## Agents made of agents")[0],
    ]
    for i, text in enumerate(scenarios):
        result = run_scenario(write(tmp_path, text, f"doc{i}.scenario.yaml"))
        assert result.status == "passed", (i, result.expectations)
        assert result.tool_calls[0].sub_run.termination == "completed"
