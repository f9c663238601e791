"""``harness freeze --trace``: a production trace of an agent run becomes a scenario.

The traces are recorded here, for real: the OpenTelemetry openai-v2 instrumentation and
OpenInference's around an OpenAI SDK tool loop, and pydantic-ai's own instrumentation
around a pydantic-ai agent, each against ``harness serve`` and exported to a file as a
collector writes it (tests/trace_recorders.py, in a process of its own).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from trace_recorders import QUESTION, STEPS, SYSTEM

from harness import cli
from harness.freeze import FreezeError, freeze
from harness.scenario import run_scenario

pytest.importorskip("opentelemetry.sdk", reason="the otel extra")
RECORDER = Path(__file__).with_name("trace_recorders.py")
ANSWER = STEPS[-1]["content"]


def _record(kind: str, where: Path) -> Path:
    out = where / f"{kind}.trace.json"
    done = subprocess.run(
        [sys.executable, str(RECORDER), kind, str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ANSWER  # the agent ran to its answer
    return out


@pytest.mark.parametrize("kind", ["openai-v2", "openinference", "pydantic-ai"])
def test_a_real_instrumentations_trace_freezes_into_a_scenario_that_replays_it(
    kind, tmp_path, monkeypatch, capsys
):
    trace = _record(kind, tmp_path)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "frozen.scenario.yaml"
    assert cli.main(["freeze", "--trace", str(trace), "-o", str(out)]) == 0
    data = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert data["input"] == QUESTION
    assert data["agent"]["system"] == SYSTEM
    script = data["llm"]["script"]
    assert [
        [(c["id"], c["name"], c["arguments"]) for c in s.get("tool_calls", [])] for s in script
    ] == [[(c["id"], c["name"], c["arguments"]) for c in s.get("tool_calls", [])] for s in STEPS]
    assert script[-1]["content"] == ANSWER
    tools = data["tools"]
    assert tools["get_weather"]["results"] == [
        {"on_call": 1, "returns": "20C"},
        {"on_call": 2, "returns": "14C"},
    ]
    assert tools["get_time"]["results"] == [{"on_call": 1, "returns": "12:00 in Paris"}]
    if kind == "openai-v2":  # its spans hold no tool definitions
        assert "no tool definitions" in capsys.readouterr().err
        assert tools["get_time"]["schema"]["properties"] == {"city": {}}
    else:  # the trace's own schemas
        assert tools["get_time"]["description"] == "The time in a city."
        assert tools["get_time"]["schema"]["properties"] == {"city": {"type": "string"}}

    result = run_scenario(out)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert [(c.name, c.arguments) for c in result.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "London"}),
        ("get_time", {"city": "Paris"}),
    ]
    assert result.final.content == ANSWER


def test_a_trace_without_message_contents_is_refused_saying_which_setting_records_them(
    tmp_path, monkeypatch, capsys
):
    trace = _record("openai-v2-no-content", tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["freeze", "--trace", str(trace)]) == 2
    err = capsys.readouterr().err
    (line,) = err.splitlines()
    assert "carry no message contents" in line
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only" in line
    assert not list(tmp_path.glob("*.scenario.yaml"))


def _attribute(key: str, value: object) -> dict:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def test_the_older_numbered_genai_attributes_are_read(tmp_path):
    """``gen_ai.prompt.N`` / ``gen_ai.completion.N``, as OpenLLMetry's instrumentations
    write them (tools under ``llm.request.functions.N``)."""
    calls = [
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "llm.request.functions.0.name": "lookup",
            "llm.request.functions.0.description": "Look a word up.",
            "llm.request.functions.0.parameters": json.dumps(
                {"type": "object", "properties": {"word": {"type": "string"}}}
            ),
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "What is a harness?",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.finish_reason": "tool_calls",
            "gen_ai.completion.0.tool_calls.0.id": "call_1",
            "gen_ai.completion.0.tool_calls.0.name": "lookup",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"word": "harness"}',
        },
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "What is a harness?",
            "gen_ai.prompt.1.role": "assistant",
            "gen_ai.prompt.1.tool_calls.0.id": "call_1",
            "gen_ai.prompt.1.tool_calls.0.name": "lookup",
            "gen_ai.prompt.1.tool_calls.0.arguments": '{"word": "harness"}',
            "gen_ai.prompt.2.role": "tool",
            "gen_ai.prompt.2.tool_call_id": "call_1",
            "gen_ai.prompt.2.content": "a set of straps",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "A set of straps.",
            "gen_ai.completion.0.finish_reason": "stop",
        },
    ]
    spans = [
        {
            "traceId": "0af7651916cd43dd8448eb211c80319c",
            "spanId": f"{n + 1:016x}",
            "name": "openai.chat",
            "kind": 3,
            "startTimeUnixNano": str(1_700_000_000_000_000_000 + n),
            "endTimeUnixNano": str(1_700_000_000_000_000_000 + n),
            "attributes": [_attribute(k, v) for k, v in attributes.items()],
        }
        for n, attributes in enumerate(calls)
    ]
    request = {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}]}
    trace = tmp_path / "older.json"
    trace.write_text(json.dumps(request), encoding="utf-8")
    out = tmp_path / "older.scenario.yaml"
    frozen = freeze(trace=trace, output=out)
    data = yaml.safe_load(frozen.text)
    assert data["input"] == "What is a harness?"
    assert data["tools"]["lookup"]["description"] == "Look a word up."
    assert data["tools"]["lookup"]["results"] == [{"on_call": 1, "returns": "a set of straps"}]
    out.write_text(frozen.text, encoding="utf-8")
    assert run_scenario(out).status == "passed"


def test_a_file_that_is_not_an_otlp_trace_is_one_line_naming_it(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"resourceSpans": []}\nnot json\n', encoding="utf-8")
    with pytest.raises(FreezeError, match=r"bad.json:2: is not an OTLP JSON trace"):
        freeze(trace=bad)
    empty = tmp_path / "empty.json"
    empty.write_text('{"resourceSpans": []}', encoding="utf-8")
    with pytest.raises(FreezeError, match="holds no model call"):
        freeze(trace=empty)


def _span(n: int, attributes: dict, events: list) -> dict:
    return {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": f"{n + 1:016x}",
        "name": "chat gpt-4o",
        "startTimeUnixNano": str(1_700_000_000_000_000_000 + n),
        "attributes": [_attribute(k, v) for k, v in attributes.items()],
        "events": [
            {"name": name, "attributes": [_attribute(k, v) for k, v in given.items()]}
            for name, given in events
        ],
    }


def test_messages_carried_by_span_events_are_read(tmp_path):
    """The GenAI conventions' events: the older one per message (``gen_ai.user.message``,
    ``gen_ai.choice``, ...) and the current ``gen_ai.client.inference.operation.details``."""
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
    call = [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "lookup", "arguments": '{"word": "harness"}'},
        }
    ]
    first = _span(
        0,
        chat,
        [
            ("gen_ai.system.message", {"content": "Be brief."}),
            ("gen_ai.user.message", {"content": "What is a harness?"}),
            (
                "gen_ai.choice",
                {"finish_reason": "tool_calls", "message": json.dumps({"tool_calls": call})},
            ),
        ],
    )
    details = {
        "gen_ai.system_instructions": json.dumps([{"type": "text", "content": "Be brief."}]),
        "gen_ai.input.messages": json.dumps(
            [
                {"role": "user", "parts": [{"type": "text", "content": "What is a harness?"}]},
                {
                    "role": "assistant",
                    "parts": [
                        {
                            "type": "tool_call",
                            "id": "c1",
                            "name": "lookup",
                            "arguments": {"word": "harness"},
                        }
                    ],
                },
                {
                    "role": "tool",
                    "parts": [{"type": "tool_call_response", "id": "c1", "response": "straps"}],
                },
            ]
        ),
        "gen_ai.output.messages": json.dumps(
            [
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": "Straps."}],
                    "finish_reason": "stop",
                }
            ]
        ),
    }
    second = _span(1, chat, [("gen_ai.client.inference.operation.details", details)])
    trace = tmp_path / "events.json"
    request = {"resourceSpans": [{"scopeSpans": [{"spans": [first, second]}]}]}
    trace.write_text(json.dumps(request), encoding="utf-8")
    out = tmp_path / "events.scenario.yaml"
    frozen = freeze(trace=trace, output=out)
    data = yaml.safe_load(frozen.text)
    assert data["agent"]["system"] == "Be brief." and data["input"] == "What is a harness?"
    assert data["tools"]["lookup"]["results"] == [{"on_call": 1, "returns": "straps"}]
    assert data["llm"]["script"][-1]["content"] == "Straps."
    out.write_text(frozen.text, encoding="utf-8")
    assert run_scenario(out).status == "passed"


@pytest.mark.usefixtures("fresh_plugins")
@pytest.mark.filterwarnings("ignore:Benchmarks are automatically disabled")
def test_harness_own_trace_with_contents_freezes_back_into_the_same_run(tmp_path, monkeypatch):
    """``--otel-content`` puts the contents on the spans: the trace freezes back."""
    from scenario_texts import PASSING

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "greet.scenario.yaml").write_text(PASSING)
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", "greet.scenario.yaml", "--otel", "bare.json"]) == 0
    with pytest.raises(FreezeError, match="carry no message contents"):
        freeze(trace="bare.json")
    assert cli.main(["run", "greet.scenario.yaml", "--otel", "t.json", "--otel-content"]) == 0
    frozen = freeze(trace="t.json", output="frozen.scenario.yaml")
    Path("frozen.scenario.yaml").write_text(frozen.text, encoding="utf-8")
    result = run_scenario("frozen.scenario.yaml")
    assert result.status == "passed"
    assert [(c.name, c.arguments) for c in result.tool_calls] == [("get_weather", {"city": "SF"})]
    assert result.final.content == "It is 72F in SF."


@pytest.mark.usefixtures("fresh_plugins")
@pytest.mark.filterwarnings("ignore:Benchmarks are automatically disabled")
def test_a_file_of_several_runs_freezes_the_last_or_the_one_asked_for(tmp_path, monkeypatch):
    """A trace per run (a suite's file, a collector's): ``--run N`` picks, as for cassettes."""
    from scenario_texts import PASSING

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "a.scenario.yaml").write_text(PASSING)
    other = PASSING.replace("name: greet", "name: paris").replace("city: SF", "city: Paris")
    (tmp_path / "b.scenario.yaml").write_text(other.replace("in SF", "in Paris"))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["run", ".", "--otel", "t.json", "--otel-content"]) == 0
    last = freeze(trace="t.json", output="b.scenario.yaml")
    assert last.runs == 2 and last.run == 2
    assert "holds 2 runs" in last.notes[0] and "--run N picks another" in last.notes[0]
    assert yaml.safe_load(last.text)["expect"]["final"] == {"equals": "It is 72F in Paris."}
    first = freeze(trace="t.json", run=1, output="a.scenario.yaml")
    assert yaml.safe_load(first.text)["expect"]["final"] == {"equals": "It is 72F in SF."}
    with pytest.raises(FreezeError, match=r"--run 3: t\.json holds 2 run"):
        freeze(trace="t.json", run=3)
