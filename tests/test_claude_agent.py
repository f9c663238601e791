"""The Claude Agent SDK as a target (docs/external.md#claude-agent-sdk-and-google-adk):
the example scenarios/external/claude-agent runs the SDK's Claude Code CLI against harness
serve's Anthropic Messages wire, and the run is observed like any other client's.

The SDK's wheel bundles the CLI; the CLI reaches harness through ANTHROPIC_BASE_URL on
127.0.0.1, with its non-essential traffic turned off.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.scenario import run_scenario

pytest.importorskip("claude_agent_sdk", reason="the example needs claude-agent-sdk")

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "scenarios" / "external" / "claude-agent.scenario.yaml"


@pytest.fixture(autouse=True)
def _examples_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))


def test_claude_code_is_observed_as_a_run_of_its_mcp_tool_calls():
    """One call, then two in one reply, then the answer: each call's arguments and the
    result the SDK's MCP tool returned (read from the next request's tool_result)."""
    result = run_scenario(EXAMPLE)

    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert (result.termination, result.llm_calls, result.iterations) == ("completed", 3, 3)
    calls = [(c.name, c.arguments, c.result, c.status, c.group) for c in result.tool_calls]
    assert calls == [
        ("mcp__tools__get_weather", {"city": "Paris"}, "18C, cloudy in Paris", "ok", 1),
        ("mcp__tools__get_weather", {"city": "Rome"}, "24C, sunny in Rome", "ok", 2),
        ("mcp__tools__get_time", {"city": "Rome"}, "14:00 in Rome", "ok", 2),
    ]
    assert result.parallel_groups == [["mcp__tools__get_weather", "mcp__tools__get_time"]]
    assert result.final.content == (
        "Paris is 18C and cloudy; Rome is 24C and sunny, and it is 14:00 there."
    )
    assert result.usage == {"prompt_tokens": 90, "completion_tokens": 20, "total_tokens": 110}
