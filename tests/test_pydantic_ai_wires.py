"""Conformance (docs/wires.md#conformance): one script served to pydantic-ai on each of its
model classes, OpenAIChatModel, OpenAIResponsesModel, AnthropicModel and GoogleModel, gives
the same run: the same tool calls with the same arguments and results, in the same parallel
groups, the same number of model requests, the same ending and answer.

The clients are pydantic-ai's own models over the official SDKs, talking over HTTP to
harness's server on 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness._modelwires import wire_named
from harness.scenario import expand_matrix, run_scenario
from harness.scenario._loader import load_scenario_text
from harness.scenario._matrix import matrix_field

pytest.importorskip("pydantic_ai")

ROOT = Path(__file__).resolve().parents[1]
WIRES = ["openai-chat", "openai-responses", "anthropic", "gemini"]
SDKS = {
    "openai-chat": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "gemini": "google.genai",
}
# The wire each leg needs harness serve to answer, by its registered name.
SERVED = {
    "openai-chat": "chat",
    "openai-responses": "responses",
    "anthropic": "anthropic",
    "gemini": "gemini",
}


def _served(name: str) -> bool:
    try:
        wire_named(name)
    except KeyError:
        return False
    return True


SCRIPT = """\
  script:
    - tool_calls: [{get_weather: {city: Paris}}]
    - tool_calls: [{get_weather: {city: Rome}}, {get_time: {city: Rome}}]
    - content: Paris is 18C and cloudy; Rome is 24C and sunny, and it is 14:00 there.
      usage: {prompt_tokens: 90, completion_tokens: 20, total_tokens: 110}
"""
EXPECT = """\
expect:
  termination: completed
  llm_calls: 3
  tool_calls: {sequence: [get_weather, get_weather, get_time], exact: true}
  parallel_groups: [[get_weather, get_time]]
  final: {contains: Rome is 24C}
  script_consumed: true
"""


@pytest.fixture(autouse=True)
def _examples_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))


def _missing(wire: str) -> str | None:
    """Why this leg cannot run here, or None."""
    import importlib.util

    if importlib.util.find_spec(SDKS[wire]) is None:
        return f"{SDKS[wire]} is not installed (pip install 'pydantic-ai-slim[{wire}]')"
    if not _served(SERVED[wire]):
        return f"harness serve does not answer the {wire} wire in this build"
    return None


def trajectory(result) -> dict:
    """What a user compares across wires: the run without ids, timings or raw requests."""
    return {
        "calls": [(c.name, c.arguments, c.result) for c in result.tool_calls],
        "groups": result.parallel_groups,
        "llm_calls": result.llm_calls,
        "termination": result.termination,
        "final": result.final.content,
        "status": result.status,
    }


def scenario_text(target: str, extra: str = "") -> str:
    return (
        f"name: pydantic-ai-wires\n{extra}"
        f"target: {{python: 'scenarios.external.agents.pydantic_ai_wires:{target}', "
        "timeout: 30}\ninput: What's the weather in Paris, and the weather and time in Rome?\n"
        f"llm:\n{SCRIPT}{EXPECT}"
    )


def run_text(text: str):
    return load_scenario_text(text, ROOT / "scenarios" / "external" / "t.scenario.yaml")


@pytest.fixture(scope="module")
def on_chat_completions():
    return trajectory(run_scenario(run_text(scenario_text("openai_chat"))))


@pytest.mark.parametrize("wire", WIRES)
def test_pydantic_ai_gives_the_same_run_on_every_model_class(wire, on_chat_completions):
    missing = _missing(wire)
    if missing is not None:
        pytest.skip(missing)
    result = run_scenario(run_text(scenario_text(wire.replace("-", "_"))))
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert trajectory(result) == on_chat_completions


def test_one_matrix_scenario_runs_it_on_every_wire():
    if matrix_field("wire") is None:
        pytest.skip("the matrix key `wire` is not in this build (it comes with the Anthropic wire)")
    for wire in WIRES:
        missing = _missing(wire)
        if missing is not None:
            pytest.skip(missing)
    scenario = run_text(scenario_text("answer", f"matrix: {{wire: [{', '.join(WIRES)}]}}\n"))
    runs = [run_scenario(combination) for combination in expand_matrix(scenario)]
    assert [r.matrix for r in runs] == [{"wire": wire} for wire in WIRES]
    assert all(r.status == "passed" for r in runs)
    assert len({repr(trajectory(r)) for r in runs}) == 1
