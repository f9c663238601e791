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


@pytest.mark.parametrize(
    "kind",
    [
        "openai-v2",
        "openinference",
        "pydantic-ai",
        # OpenInference's spans of the other vendors' SDKs: Anthropic's tools as
        # input_schema, google-genai's model turns as role model and its calls without ids.
        "openinference-anthropic",
        "openinference-google-genai",
        # ... and its function responses sent by name only (no id), which the trace
        # writes without the call's id: matched by place and name.
        "openinference-google-genai-by-name",
    ],
)
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


# -- what each reader must get right (each test fails when its reader is broken) ----------


def _genai_span(n: int, trace_id: str, start: int, said: list, answer: dict, **extra) -> dict:
    """A span of the current GenAI conventions: ``said`` the input messages, ``answer``
    the output message."""
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.input.messages": json.dumps(said),
        "gen_ai.output.messages": json.dumps([answer]),
        **extra,
    }
    return {
        "traceId": trace_id,
        "spanId": f"{n + 1:016x}",
        "name": "chat gpt-4o",
        "startTimeUnixNano": str(start),
        "attributes": [_attribute(k, v) for k, v in attributes.items()],
    }


USER = {"role": "user", "parts": [{"type": "text", "content": "What is a harness?"}]}
CALL = {
    "role": "assistant",
    "parts": [{"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"word": "x"}}],
}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "s"}]}
STRAPS = {"role": "assistant", "parts": [{"type": "text", "content": "Straps."}]}
T0 = 1_700_000_000_000_000_000


def _write(tmp_path: Path, spans: list[dict], name: str = "t.json") -> Path:
    trace = tmp_path / name
    request = {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "x"}, "spans": spans}]}]}
    trace.write_text(json.dumps(request), encoding="utf-8")
    return trace


def test_calls_are_taken_in_the_order_they_started_not_the_files(tmp_path):
    # An exporter writes a span when it ends: the answer's span can come first in the file.
    first = _genai_span(0, "a" * 32, T0, [USER], CALL)
    second = _genai_span(1, "a" * 32, T0 + 10, [USER, CALL, RESULT], STRAPS)
    frozen = freeze(trace=_write(tmp_path, [second, first]), output=tmp_path / "o.scenario.yaml")
    script = yaml.safe_load(frozen.text)["llm"]["script"]
    assert [sorted(step) for step in script] == [["tool_calls"], ["content"]]


def test_calls_each_a_trace_of_their_own_are_one_run(tmp_path):
    # A client instrumented with no agent span around it: a trace per model call.
    first = _genai_span(0, "a" * 32, T0, [USER], CALL)
    second = _genai_span(1, "b" * 32, T0 + 10, [USER, CALL, RESULT], STRAPS)
    frozen = freeze(trace=_write(tmp_path, [first, second]), output=tmp_path / "o.scenario.yaml")
    assert (frozen.runs, len(yaml.safe_load(frozen.text)["llm"]["script"])) == (1, 2)
    assert "each model call is a trace of its own" in frozen.notes[0]
    # Two traces of two calls each are two runs.
    second = _genai_span(1, "a" * 32, T0 + 10, [USER, CALL, RESULT], STRAPS)
    third = _genai_span(2, "b" * 32, T0 + 20, [USER], CALL)
    fourth = _genai_span(3, "b" * 32, T0 + 30, [USER, CALL, RESULT], STRAPS)
    spans = [first, second, third, fourth]
    assert freeze(trace=_write(tmp_path, spans), output=tmp_path / "o.scenario.yaml").runs == 2


@pytest.mark.parametrize(
    ("prompt", "completion"),
    [
        ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"),
        ("llm.token_count.prompt", "llm.token_count.completion"),
    ],
)
def test_usage_is_read_as_the_prompts_and_the_completions(tmp_path, prompt, completion):
    span = _genai_span(0, "a" * 32, T0, [USER], STRAPS, **{prompt: 120, completion: 7})
    frozen = freeze(trace=_write(tmp_path, [span]), output=tmp_path / "o.scenario.yaml")
    (step,) = yaml.safe_load(frozen.text)["llm"]["script"]
    assert step["usage"] == {"prompt_tokens": 120, "completion_tokens": 7}


def test_the_older_tool_message_event_answers_the_call_its_id_names(tmp_path):
    # gen_ai.tool.message events name the call they answer by `id`.
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
    calls = json.dumps(
        [
            {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "lookup", "arguments": "{}"}},
        ]
    )
    user = ("gen_ai.user.message", {"content": "Look two up."})
    first = _span(
        0, chat, [user, ("gen_ai.choice", {"message": json.dumps({"tool_calls": calls})})]
    )
    # Each result names the call it answers by `id`.
    second = _span(
        1,
        chat,
        [
            user,
            ("gen_ai.assistant.message", {"tool_calls": calls}),
            ("gen_ai.tool.message", {"id": "c1", "content": "first"}),
            ("gen_ai.tool.message", {"id": "c2", "content": "second"}),
            ("gen_ai.choice", {"message": json.dumps({"content": "Done."})}),
        ],
    )
    frozen = freeze(trace=_write(tmp_path, [first, second]), output=tmp_path / "o.scenario.yaml")
    tools = yaml.safe_load(frozen.text)["tools"]
    assert tools["lookup"]["results"] == [
        {"on_call": 1, "returns": "first"},
        {"on_call": 2, "returns": "second"},
    ]


def test_a_trace_whose_calls_do_not_fit_its_own_schemas_names_no_scenario(tmp_path):
    # The hint of a cassette (re-record, --scenario) is no use for a trace.
    tools = json.dumps(
        [
            {
                "name": "lookup",
                "parameters": {
                    "type": "object",
                    "properties": {"word": {"type": "integer"}},
                    "required": ["word"],
                },
            }
        ]
    )
    extra = {"gen_ai.tool.definitions": tools}
    first = _genai_span(0, "a" * 32, T0, [USER], CALL, **extra)
    second = _genai_span(1, "a" * 32, T0 + 10, [USER, CALL, RESULT], STRAPS, **extra)
    with pytest.raises(FreezeError) as refused:
        freeze(trace=_write(tmp_path, [first, second]))
    said = str(refused.value)
    # How it ended, with the validation's own words.
    assert "ends (validation_error: lookup (c1): word: 'x' is not of type 'integer')" in said
    assert "does not fit the tool's schema as the trace gives it" in said
    assert "--scenario" not in said and "re-record" not in said and "--record-mode" not in said


@pytest.mark.parametrize("said", ["length", "max_tokens", "MAX_TOKENS"])
def test_a_reply_cut_at_its_token_limit_is_read_so_in_every_vendors_words(tmp_path, said):
    # OpenAI's `length`, Anthropic's `max_tokens`, Gemini's `MAX_TOKENS`: the frozen step
    # says the reply was cut (its run's final.data.truncated follows from it).
    answer = {"role": "assistant", "parts": [{"type": "text", "content": "Straps and"}]}
    span = _genai_span(0, "a" * 32, T0, [USER], {**answer, "finish_reason": said})
    frozen = freeze(trace=_write(tmp_path, [span]), output=tmp_path / "o.scenario.yaml")
    (step,) = yaml.safe_load(frozen.text)["llm"]["script"]
    assert step["finish_reason"] == "length"
