"""`harness explore --depth 1` on agents with planted bugs (tests/explore_agents/: real
SDK and framework agents, written as their docs show): each bug is found by itself, its
scenario fails the same way on 3 reruns of 3, and the agent with the bug fixed gives no
finding under the same exploration. docs/explore.md."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness.explore import ExploreOptions, explore
from harness.scenario import run_scenario
from harness.shrink import Failure

ROOT = Path(__file__).resolve().parents[1]

SCENARIO = """\
target:
  python: {agent}
  timeout: 60
input: What's the weather in Paris, and the time in Rome?
llm:
  script:
    - tool_calls: [{{get_weather: {{city: Paris}}}}]
    - tool_calls: [{{get_time: {{city: Rome}}}}]
    - content: Paris is 18C and cloudy; it is 14:00 in Rome.
"""

MCP_SCENARIO = """\
target:
  python: {agent}
  timeout: 60
input: What's the weather in Paris and in Rome?
tools:
  get_weather:
    description: Current weather for a city.
    parameters: {{city: str}}
    returns: "18C, cloudy in {{{{ args.city }}}}"
llm:
  script:
    - tool_calls: [{{get_weather: {{city: Paris}}}}]
    - tool_calls: [{{get_weather: {{city: Rome}}}}]
    - content: Paris and Rome are 18C and cloudy.
"""

HTTP = ("http_429", "http_500", "http_503", "overloaded", "timeout", "outage")


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'exploring'\n")
    (tmp_path / "cases").mkdir()
    # The agents are tests/explore_agents (imported as explore_agents).
    monkeypatch.syspath_prepend(str(ROOT / "tests"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _explore(project: Path, agent: str, faults, text: str = SCENARIO, sites=None, **options):
    name = agent.rsplit(":", 1)[1]
    path = project / "cases" / f"{name}.scenario.yaml"
    path.write_text(text.format(agent=agent), encoding="utf-8")
    options.setdefault("shrink", False)  # shrinking targets: one test below, and own loop's
    chosen = ExploreOptions(
        faults=tuple(faults),
        output=project / "explored",
        reruns=3,
        **({"sites": tuple(sites)} if sites else {}),
        **options,
    )
    (entry,) = explore([path], chosen).scenarios
    return entry


def _reproduces(project: Path, finding) -> Failure:
    """The finding's first file fails the same way on 3 reruns of 3 (the failure)."""
    path = project / finding.files[0]
    failures = {Failure.of(run_scenario(path)) for _ in range(3)}
    assert len(failures) == 1, failures
    (failure,) = failures
    assert failure.status != "passed" and set(finding.broken) <= set(failure.failing)
    assert finding.reproduced >= 1 and finding.reruns >= 3
    return failure


# (agent with the bug, the same agent fixed, the faults explored, what the finding says)
RAW = {
    "no retries": ("no_retries", HTTP, "llm_error"),
    "unguarded json.loads": ("json_loads", ("malformed_arguments", "truncated"), "error"),
    "TOOLS[name]": ("tools_lookup", ("unknown_tool",), "error"),
    "an empty answer indexed": ("empty_indexed", ("empty_reply",), "error"),
    "an endless retry loop": ("endless_retry", ("outage", "http_429"), "error"),
}


@pytest.mark.parametrize("bug", sorted(RAW))
def test_a_planted_bug_in_a_raw_openai_agent_is_found_by_itself(project, bug):
    pytest.importorskip("openai")
    function, faults, termination = RAW[bug]
    entry = _explore(project, f"explore_agents.raw_openai:{function}", faults)
    assert entry.findings, f"{bug}: nothing found ({entry.schedules})"
    for finding in entry.findings:
        assert finding.termination == termination
        _reproduces(project, finding)
        data = yaml.safe_load((project / finding.files[0]).read_text(encoding="utf-8"))
        # The faults are data in the file (shrunk or not, they stay).
        assert {f["kind"] for f in data["llm"]["faults"]} <= set(faults)
    if bug == "an endless retry loop":
        # The storm is stopped at once, not at the target's timeout.
        (finding,) = entry.findings
        assert "max_requests_per_call" in finding.broken
        assert finding.cause == "retry_storm"


def test_the_raw_openai_agent_with_every_bug_fixed_holds_under_every_model_fault(project):
    pytest.importorskip("openai")
    entry = _explore(project, "explore_agents.raw_openai:answer", ExploreOptions().faults)
    assert entry.schedules.tried >= 30
    assert entry.findings == [] and entry.schedules.held == entry.schedules.tried, [
        s for s in entry.tried if s.outcome != "held"
    ]
    assert not (project / "explored").exists() or not list((project / "explored").iterdir())


FRAMEWORKS = {
    "pydantic-ai": ("pydantic_ai", "pydantic_ai_no_retries", "pydantic_ai_fixed", HTTP),
    "agents-sdk": ("agents", "agents_sdk_unguarded", "agents_sdk_fixed", ("unknown_tool",)),
    "langgraph": ("langgraph", "langgraph_no_retries", "langgraph_fixed", HTTP[1:3]),
}


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_a_planted_bug_in_a_framework_agent_is_found_and_its_fix_holds(project, framework):
    needs, buggy, fixed, faults = FRAMEWORKS[framework]
    pytest.importorskip(needs)
    entry = _explore(project, f"explore_agents.frameworks:{buggy}", faults)
    assert entry.findings, f"{framework}: nothing found"
    _reproduces(project, entry.findings[0])
    held = _explore(project, f"explore_agents.frameworks:{fixed}", faults, write=False)
    assert held.findings == [] and held.schedules.tried == entry.schedules.tried


def test_a_tool_fault_reaching_an_agent_over_mcp_is_found_and_its_fix_holds(project):
    pytest.importorskip("mcp")
    faults = ("mcp_error", "tool_error", "tool_empty")
    agent = "explore_agents.mcp_tools:unguarded"
    entry = _explore(project, agent, faults, MCP_SCENARIO, sites=("tools", "mcp"), shrink=True)
    (finding,) = entry.findings
    assert all("mcp-error" in f for f in finding.files)  # the tool's own errors are handled
    failure = _reproduces(project, finding)
    assert failure.termination == "error"
    data = yaml.safe_load((project / finding.files[0]).read_text(encoding="utf-8"))
    assert data["tools"]["get_weather"]["errors"][0]["mcp"] == -32603
    fixed = "explore_agents.mcp_tools:answer"
    held = _explore(project, fixed, faults, MCP_SCENARIO, sites=("tools", "mcp"), write=False)
    assert held.findings == [] and held.schedules.tried == entry.schedules.tried == 6
