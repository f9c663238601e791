"""`harness freeze`: a cassette becomes a scripted scenario that passes as written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness import Agent, tool
from harness.llm.config import LLMConfig, LLMContext
from harness.llm.freeze import FreezeError, freeze, freeze_main
from harness.llm.openai_sdk import OpenAILLM
from harness.llm.server import running_server
from harness.scenario import run_scenario

FOREIGN = Path(__file__).parent / "fixtures" / "foreign-cassettes"


@pytest.fixture(autouse=True)
def _no_openai_environment(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def record(cassette: Path, steps, tools, *, api="chat", stream=False, system=None, prompt="Go."):
    config = LLMConfig(
        provider="openai", model="gpt-4o-mini", cassette=str(cassette), api=api, stream=stream
    )
    with running_server(steps) as url:
        bound = config.model_copy(update={"base_url": url}).with_context(
            LLMContext(record_mode="once")
        )
        return Agent(llm=OpenAILLM(bound), tools=tools, system=system).run(prompt)


def frozen(tmp_path: Path, cassette: Path) -> tuple[dict, object]:
    scenario = tmp_path / "frozen.scenario.yaml"
    assert freeze_main([str(cassette), "-o", str(scenario)]) == 0
    return yaml.safe_load(scenario.read_text()), run_scenario(scenario)


@tool
def lookup(city: str) -> dict:
    """Look a city up."""
    return {"city": city, "population": len(city) * 1000}


@tool
def note(text: str) -> str:
    """Write a note."""
    return "saved {{ not a template }}"


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_recorded_run_freezes_into_a_scenario_that_replays_it(tmp_path, api, stream):
    steps = [
        {
            "content": "Looking both up.",
            "tool_calls": [{"lookup": {"city": "Paris"}}, {"lookup": {"city": "Rome"}}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 9},
        },
        {"tool_calls": [{"id": "call_custom", "name": "note", "arguments": {"text": "done"}}]},
        {
            "content": "Paris 5000, Rome 4000.",
            "usage": {"prompt_tokens": 50, "completion_tokens": 6},
        },
    ]
    cassette = tmp_path / "run.yaml"
    recorded = record(cassette, steps, [lookup, note], api=api, stream=stream, system="Be brief.")
    assert recorded.termination == "completed"

    scenario, result = frozen(tmp_path, cassette)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert result.final.content == "Paris 5000, Rome 4000."
    assert scenario["agent"] == {"system": "Be brief."}
    assert scenario["input"] == "Go."
    first, second, last = scenario["llm"]["script"]
    assert [c["id"] for c in first["tool_calls"]] == ["call_1_0", "call_1_1"]
    assert second["tool_calls"] == [
        {"id": "call_custom", "name": "note", "arguments": {"text": "done"}}
    ]
    assert first["usage"] == {"prompt_tokens": 20, "completion_tokens": 9}
    assert last == {
        "content": "Paris 5000, Rome 4000.",
        "usage": {"prompt_tokens": 50, "completion_tokens": 6},
    }
    assert scenario["tools"]["lookup"]["results"] == [
        {"on_call": 1, "returns": '{"city": "Paris", "population": 5000}'},
        {"on_call": 2, "returns": '{"city": "Rome", "population": 4000}'},
    ]
    assert scenario["tools"]["lookup"]["schema"]["properties"] == {"city": {"type": "string"}}
    # A recorded text that looks like a Jinja template stays literal.
    assert result.tool_calls[-1].result == "saved {{ not a template }}"
    assert scenario["expect"]["final"] == {"equals": "Paris 5000, Rome 4000."}
    # The frozen run is the recorded run.
    assert result.transcript == recorded.conversation.messages
    assert result.parallel_groups == recorded.parallel_groups


@pytest.mark.parametrize("name", sorted(p.name for p in FOREIGN.glob("*.yaml")))
def test_foreign_cassettes_freeze_into_passing_scenarios(tmp_path, name):
    scenario, result = frozen(tmp_path, FOREIGN / name)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert result.final.content == scenario["expect"]["final"]["equals"]
    assert result.tool_calls  # each of them calls a tool before answering


def test_a_run_that_ended_in_an_http_error_freezes_with_its_error_step(tmp_path):
    cassette = tmp_path / "limited.yaml"
    steps = [
        {"tool_calls": [{"lookup": {"city": "Oslo"}}]},
        {"error": {"status": 429, "message": "Slow down"}},
    ]
    recorded = record(cassette, steps, [lookup])
    assert recorded.termination == "llm_error"
    scenario, result = frozen(tmp_path, cassette)
    assert scenario["llm"]["script"][-1] == {"error": {"status": 429, "message": "Slow down"}}
    assert result.status == "passed"
    assert result.final.error["status"] == 429


def test_freeze_prints_to_stdout_without_output(tmp_path, capsys):
    cassette = FOREIGN / "llm-test_tools-test_tool_use_chain_of_two_calls.yaml"
    assert freeze_main([str(cassette)]) == 0
    out = capsys.readouterr().out
    assert out == freeze(cassette)
    assert out.startswith("# Frozen from")


def test_freeze_rejects_what_is_not_a_cassette(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("just: text\n")
    assert freeze_main([str(bad), "-o", str(tmp_path / "x.scenario.yaml")]) == 2
    assert "not a vcrpy cassette" in capsys.readouterr().err
    assert not (tmp_path / "x.scenario.yaml").exists()
    with pytest.raises(FreezeError, match="cannot read cassette"):
        freeze(tmp_path / "missing.yaml")


def test_an_output_that_cannot_be_written_exits_3_with_one_line(tmp_path, capsys):
    cassette = FOREIGN / "llm-test_tools-test_tool_use_chain_of_two_calls.yaml"
    (tmp_path / "blocker").write_text("a file, not a folder")
    target = tmp_path / "blocker" / "x.scenario.yaml"
    assert freeze_main([str(cassette), "-o", str(target)]) == 3
    err = capsys.readouterr().err
    assert f"harness freeze: cannot write {target}" in err
    assert "Traceback" not in err
