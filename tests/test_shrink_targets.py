"""``harness shrink`` on what is not harness's own loop: targets (real SDK agents served
the scenario's model on their own wire, rerun in this process), a scenario frozen from a
real instrumentation's OpenTelemetry trace, and a recorded scenario whose cassette holds
interactions the failure does not need (docs/shrink.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from harness import cli
from harness.scenario import run_scenario
from harness.scenario._loader import load_scenario_text
from harness.shrink import Failure, shrink, verify

ROOT = Path(__file__).resolve().parents[1]

# The example agents of scenarios/external, one per wire: each runs get_weather and
# get_time itself, in a loop of requests to the served model.
AGENTS = {
    "openai-chat": ("scenarios.external.agents.raw_sdk:answer", "openai"),
    "anthropic-messages": ("scenarios.external.agents.raw_anthropic:answer", "anthropic"),
    "gemini": ("scenarios.external.agents.gemini_sdk:answer", "google.genai"),
}

TARGET = """\
# the agent under test
target:
  python: {agent}
  timeout: 60
input: What's the weather in Paris and Rome, and the time in Rome?
llm:
  script:
    - tool_calls: [{{get_weather: {{city: Paris}}}}]
    - tool_calls: [{{get_weather: {{city: Rome}}}}]
    - content: Let me look at Oslo too.
      tool_calls: [{{get_weather: {{city: Oslo}}}}]
    # the guard breaks here: the time is never to be asked
    - tool_calls: [{{get_time: {{city: Rome}}}}]
    - tool_calls: [{{get_weather: {{city: Paris}}}}]
    - content: Paris is 18C and Rome 24C; it is 14:00 in Rome.
expect:
  termination: completed
  llm_calls: 6
  never_called: [get_time]
  final: {{contains: Rome}}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'shrinking'\n")
    (tmp_path / "cases").mkdir()
    # The example agents import from this repository's root.
    monkeypatch.syspath_prepend(str(ROOT))
    return tmp_path


@pytest.mark.parametrize("wire", sorted(AGENTS))
def test_a_target_on_each_wire_shrinks_to_the_call_that_breaks_the_guard(project, wire):
    agent, needs = AGENTS[wire]
    pytest.importorskip(needs)
    source = project / "cases" / f"{wire}.scenario.yaml"
    source.write_text(TARGET.format(agent=agent), encoding="utf-8")
    original = Failure.of(run_scenario(source))
    assert original.failing == ("never_called",), original

    out = project / "cases" / f"{wire}-small.scenario.yaml"
    result = shrink(source, output=out)
    result.write()
    data = yaml.safe_load(out.read_text(encoding="utf-8"))
    # The call that breaks the guard, its argument shortened away (it does not matter).
    assert [list(c) for c in data["llm"]["script"][0]["tool_calls"]] == [["get_time"]]
    assert len(data["llm"]["script"]) <= 2
    assert data["expect"] == {"never_called": ["get_time"]}
    assert data["target"]["python"] == agent
    assert "# the agent under test" in out.read_text(encoding="utf-8")
    assert result.reduction >= 0.7, (result.before, result.after)
    rerun = run_scenario(load_scenario_text(out.read_text(encoding="utf-8"), out))
    assert Failure.of(rerun) == original
    assert verify(result)


def test_a_scenario_frozen_from_an_opentelemetry_trace_shrinks(project, monkeypatch):
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra")
    trace = project / "run.trace.json"
    recorded = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "trace_recorders.py"), "openai-v2", str(trace)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert recorded.returncode == 0, recorded.stderr
    monkeypatch.chdir(project)
    frozen = project / "cases" / "frozen.scenario.yaml"
    assert cli.main(["freeze", "--trace", str(trace), "-o", str(frozen)]) == 0
    # The production run called get_time; a new guard says it must not.
    data = yaml.safe_load(frozen.read_text(encoding="utf-8"))
    data["expect"]["never_called"] = ["get_time"]
    frozen.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    original = Failure.of(run_scenario(frozen))
    assert original.failing == ("never_called",)

    out = project / "cases" / "frozen-small.scenario.yaml"
    result = shrink(frozen, output=out)
    result.write()
    small = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert list(small["tools"]) == ["get_time"]
    calls = [c["name"] for s in small["llm"]["script"] for c in s.get("tool_calls", [])]
    assert calls == ["get_time"]
    assert small["expect"] == {"never_called": ["get_time"]}
    assert result.after.total < result.before.total / 2
    assert verify(result, runs=2)


def test_a_recorded_scenario_keeps_only_the_interactions_it_replays(project):
    cassette = yaml.safe_load(
        (ROOT / "cassettes" / "recorded" / "weather-chat.yaml").read_text(encoding="utf-8")
    )
    # Two interactions more than the run asks for (another run's, say).
    extra = [dict(i) for i in cassette["interactions"]]
    for interaction in extra:
        interaction["request"] = {
            **interaction["request"],
            "parsed_body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "?"}]},
        }
    cassette["interactions"] = [extra[0], *cassette["interactions"], extra[1]]
    (project / "cases" / "weather.yaml").write_text(yaml.safe_dump(cassette), encoding="utf-8")
    scenario = (ROOT / "scenarios" / "recorded" / "weather-chat.scenario.yaml").read_text()
    scenario = scenario.replace("final: {contains: Paris}", "final: {contains: Tokyo}")
    scenario = scenario.replace(
        "  model: gpt-4o-mini\n", "  model: gpt-4o-mini\n  cassette: weather.yaml\n"
    )
    source = project / "cases" / "weather.scenario.yaml"
    source.write_text(scenario, encoding="utf-8")

    out = project / "cases" / "weather-small.scenario.yaml"
    assert cli.main(["shrink", str(source)]) == 2  # its cassette copy needs a place
    assert cli.main(["shrink", str(source), "-o", str(out), "--keep", "final.contains"]) == 0
    copy = project / "cases" / "weather-small.cassette.yaml"
    kept = yaml.safe_load(copy.read_text(encoding="utf-8"))["interactions"]
    assert len(kept) == 2 and len(cassette["interactions"]) == 4
    small = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert small["llm"]["cassette"] == "weather-small.cassette.yaml"
    assert small["expect"] == {"final": {"contains": "Tokyo"}}
    assert Failure.of(run_scenario(out)).failing == ("final.contains",)
