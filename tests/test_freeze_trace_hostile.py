"""``harness freeze --trace`` on hostile files: every malformed trace is one line saying
what is wrong and where (the file's line, the place in the OTLP request, the span and the
attribute), never "internal error" and a traceback; what is read is bounded.

Each case is a valid trace (one model call, OpenInference's or the GenAI conventions')
with one thing broken, as a collector, a hand edit or an attacker would break it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from harness import cli


def _kv(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


GENAI = {
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "gpt-4o",
    "gen_ai.input.messages": json.dumps(
        [{"role": "user", "parts": [{"type": "text", "content": "Hi?"}]}]
    ),
    "gen_ai.output.messages": json.dumps(
        [{"role": "assistant", "parts": [{"type": "text", "content": "Hello."}]}]
    ),
    "gen_ai.usage.input_tokens": 3,
    "gen_ai.usage.output_tokens": 2,
}
INFERENCE = {
    "openinference.span.kind": "LLM",
    "llm.model_name": "gpt-4o",
    "llm.input_messages.0.message.role": "user",
    "llm.input_messages.0.message.content": "Hi?",
    "llm.output_messages.0.message.role": "assistant",
    "llm.output_messages.0.message.content": "Hello.",
    "llm.tools.0.tool.json_schema": json.dumps(
        {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    ),
}


def _request(attributes: dict[str, Any]) -> dict[str, Any]:
    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "00f067aa0ba902b7",
        "name": "chat gpt-4o",
        "startTimeUnixNano": "1700000000000000000",
        "attributes": [_kv(k, v) for k, v in attributes.items()],
    }
    scoped = {"scope": {"name": "test"}, "spans": [span]}
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [scoped]}]}


def _edit(attributes: dict[str, Any], change) -> str:
    """One line of OTLP JSON: the trace of ``attributes``, then ``change`` applied to it."""
    request = _request(attributes)
    change(request)
    return json.dumps(request)


def _span(request: dict[str, Any]) -> dict[str, Any]:
    return request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]


def _set(key: str, value: Any):
    """A change: the span's attribute ``key`` given the OTLP value ``value`` as it is."""

    def change(request: dict[str, Any]) -> None:
        attributes = _span(request)["attributes"]
        attributes[:] = [a for a in attributes if a["key"] != key]
        attributes.append({"key": key, "value": value})

    return change


def _string(key: str, text: str):
    return _set(key, {"stringValue": text})


def _deep(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "x"}
    for _ in range(levels):
        value = {"arrayValue": {"values": [value]}}
    return value


def _span_field(field: str, value: Any):
    def change(request: dict[str, Any]) -> None:
        if value is _DROP:
            del _span(request)[field]
        else:
            _span(request)[field] = value

    return change


_DROP = object()


def _at(path: list[Any], value: Any):
    """A change: the value at ``path`` in the request replaced."""

    def change(request: dict[str, Any]) -> None:
        at = request
        for step in path[:-1]:
            at = at[step]
        at[path[-1]] = value

    return change


RS = ["resourceSpans"]
SS = [*RS, 0, "scopeSpans"]
SP = [*SS, 0, "spans"]

# name -> (the file's text, what the one line says besides the file).
CASES: dict[str, tuple[str, str]] = {
    # -- the file ------------------------------------------------------------------------
    "not JSON": ("{{{ nope", ":1: is not an OTLP JSON trace"),
    "a JSON array": ("[1, 2]", ":1: is not an OTLP JSON trace"),
    "an empty file": ("", "holds no model call"),
    "JSON nested past any trace": ("[" * 100_000 + "]" * 100_000, ":1: is not an OTLP JSON trace"),
    "a later line broken": (
        json.dumps(_request(GENAI)) + "\n{broken\n",
        ":2: is not an OTLP JSON trace",
    ),
    # -- the OTLP request, level by level -------------------------------------------------
    "resourceSpans an object": (_edit(GENAI, _at(RS, {})), ":1: resourceSpans: expected a list"),
    "a resourceSpans entry a number": (
        _edit(GENAI, _at([*RS, 0], 7)),
        ":1: resourceSpans[0]: expected an object",
    ),
    "scopeSpans a string": (
        _edit(GENAI, _at(SS, "spans")),
        ":1: resourceSpans[0].scopeSpans: expected a list",
    ),
    "a scopeSpans entry null": (
        _edit(GENAI, _at([*SS, 0], None)),
        ":1: resourceSpans[0].scopeSpans[0]: expected an object",
    ),
    "scope a string": (
        _edit(GENAI, _at([*SS, 0, "scope"], "test")),
        ":1: resourceSpans[0].scopeSpans[0].scope: expected an object",
    ),
    "the scope's name a number": (
        _edit(GENAI, _at([*SS, 0, "scope", "name"], 5)),
        ":1: resourceSpans[0].scopeSpans[0].scope.name: expected a string",
    ),
    "spans an object": (
        _edit(GENAI, _at(SP, {"0": {}})),
        ":1: resourceSpans[0].scopeSpans[0].spans: expected a list",
    ),
    "a span a string": (
        _edit(GENAI, _at([*SP, 0], "span")),
        ":1: resourceSpans[0].scopeSpans[0].spans[0]: expected an object",
    ),
    "attributes an object": (
        _edit(GENAI, _span_field("attributes", {"gen_ai.operation.name": "chat"})),
        "spans[0].attributes: expected a list",
    ),
    "an attribute a string": (
        _edit(GENAI, _span_field("attributes", ["gen_ai.operation.name=chat"])),
        "spans[0].attributes[0]: expected an object",
    ),
    "an attribute's key a number": (
        _edit(GENAI, _span_field("attributes", [{"key": 5, "value": {"stringValue": "x"}}])),
        "spans[0].attributes[0].key: expected a string",
    ),
    "an attribute's value a string": (
        _edit(GENAI, _set("gen_ai.request.model", "gpt-4o")),
        "attributes[5].value: expected an object",
    ),
    "an intValue that is no integer": (
        _edit(GENAI, _set("gen_ai.usage.input_tokens", {"intValue": "12x"})),
        "attributes[5].value.intValue: expected an integer",
    ),
    "a bytesValue that is no base64": (
        _edit(GENAI, _set("blob", {"bytesValue": "!!not base64!!"})),
        "attributes[6].value.bytesValue: expected base64",
    ),
    "an arrayValue whose values are a number": (
        _edit(GENAI, _set("list", {"arrayValue": {"values": 5}})),
        "attributes[6].value.arrayValue.values: expected a list",
    ),
    "a kvlistValue entry a string": (
        _edit(GENAI, _set("map", {"kvlistValue": {"values": ["k"]}})),
        "attributes[6].value.kvlistValue.values[0]: expected an object",
    ),
    "values nested 200 deep": (
        _edit(GENAI, _set("deep", _deep(200))),
        "attributes[6].value: nested more than 64 deep",
    ),
    "a start time that is no number": (
        _edit(GENAI, _span_field("startTimeUnixNano", "yesterday")),
        "spans[0].startTimeUnixNano: expected nanoseconds since the epoch",
    ),
    "a negative start time": (
        _edit(GENAI, _span_field("startTimeUnixNano", -5)),
        "spans[0].startTimeUnixNano: expected nanoseconds since the epoch",
    ),
    "a traceId that is a number": (
        _edit(GENAI, _span_field("traceId", 12345)),
        "spans[0].traceId: expected a string",
    ),
    "no traceId": (
        _edit(GENAI, _span_field("traceId", _DROP)),
        "spans[0].traceId: missing (every span has one)",
    ),
    "events an object": (
        _edit(GENAI, _span_field("events", {"name": "x"})),
        "spans[0].events: expected a list",
    ),
    "an event's name a number": (
        _edit(GENAI, _span_field("events", [{"name": 3, "attributes": []}])),
        "spans[0].events[0].name: expected a string",
    ),
    # -- the model call's contents ----------------------------------------------------------
    "input messages that are not JSON": (
        _edit(GENAI, _string("gen_ai.input.messages", "[{")),
        "model call 1 (span 'chat gpt-4o', line 1): gen_ai.input.messages is not JSON",
    ),
    "input messages a JSON object": (
        _edit(GENAI, _string("gen_ai.input.messages", "{}")),
        "gen_ai.input.messages: expected a list of messages",
    ),
    "a message a number": (
        _edit(GENAI, _string("gen_ai.input.messages", "[5]")),
        "gen_ai.input.messages[0]: expected a message object",
    ),
    "a message's parts a string": (
        _edit(GENAI, _string("gen_ai.input.messages", '[{"role": "user", "parts": "Hi?"}]')),
        "gen_ai.input.messages[0].parts: expected a list",
    ),
    "a message's role a number": (
        _edit(GENAI, _string("gen_ai.input.messages", '[{"role": 1, "parts": []}]')),
        "gen_ai.input.messages[0].role: expected a string",
    ),
    "a part a number": (
        _edit(GENAI, _string("gen_ai.output.messages", '[{"role": "assistant", "parts": [5]}]')),
        "gen_ai.output.messages[0].parts[0]: expected an object",
    ),
    "a tool call's id a list": (
        _edit(
            GENAI,
            _string(
                "gen_ai.output.messages",
                json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [{"type": "tool_call", "id": [1], "name": "f"}],
                        }
                    ]
                ),
            ),
        ),
        "gen_ai.output.messages[0].parts[0].id: expected a string",
    ),
    "system instructions a number": (
        _edit(GENAI, _string("gen_ai.system_instructions", "5")),
        "gen_ai.system_instructions: expected a list of parts",
    ),
    "tool definitions not JSON": (
        _edit(GENAI, _string("gen_ai.tool.definitions", "[{")),
        "gen_ai.tool.definitions is not JSON",
    ),
    "a tool definition a number": (
        _edit(GENAI, _string("gen_ai.tool.definitions", "[5]")),
        "gen_ai.tool.definitions[0]: expected a tool object",
    ),
    "a tool name a number": (
        _edit(GENAI, _string("gen_ai.tool.definitions", '[{"name": 5}]')),
        "gen_ai.tool.definitions[0].name: expected a string",
    ),
    "usage that is no number": (
        _edit(GENAI, _string("gen_ai.usage.input_tokens", "many")),
        "gen_ai.usage.input_tokens: expected a number of tokens",
    ),
    "an OpenInference schema that is not JSON": (
        _edit(INFERENCE, _string("llm.tools.0.tool.json_schema", "{")),
        "llm.tools.0.tool.json_schema is not JSON",
    ),
    "an OpenInference schema a list": (
        _edit(INFERENCE, _string("llm.tools.0.tool.json_schema", "[1]")),
        "llm.tools.0.tool.json_schema: expected a tool object",
    ),
    "an OpenInference role a number": (
        _edit(INFERENCE, _set("llm.input_messages.0.message.role", {"intValue": "3"})),
        "llm.input_messages.0.message.role: expected a string",
    ),
    "an OpenInference content an object": (
        _edit(
            INFERENCE,
            _set("llm.output_messages.0.message.content", {"kvlistValue": {"values": []}}),
        ),
        "llm.output_messages.0.message.content: expected a string",
    ),
    "a gen_ai.choice event whose message is not JSON": (
        _edit(
            {"gen_ai.operation.name": "chat"},
            _span_field(
                "events",
                [
                    {"name": "gen_ai.user.message", "attributes": [_kv("content", "Hi?")]},
                    {"name": "gen_ai.choice", "attributes": [_kv("message", "{not json")]},
                ],
            ),
        ),
        "gen_ai.choice event: message is not JSON",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_hostile_trace_is_one_line_saying_what_and_where(tmp_path, capsys, name):
    text, says = CASES[name]
    trace = tmp_path / "hostile.json"
    trace.write_text(text, encoding="utf-8")
    code = cli.main(["freeze", "--trace", str(trace), "-o", str(tmp_path / "out.scenario.yaml")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1, err
    assert err.startswith(f"harness freeze: {trace}"), err
    assert "internal error" not in err and "Traceback" not in err
    assert says in err, err
    assert not (tmp_path / "out.scenario.yaml").exists()


def test_each_case_breaks_a_trace_that_freezes_whole(tmp_path):
    # The cases are hostile for what they change, not for what they start from.
    from harness.freeze import freeze

    for attributes in (GENAI, INFERENCE):
        trace = tmp_path / "whole.json"
        trace.write_text(json.dumps(_request(copy.deepcopy(attributes))), encoding="utf-8")
        assert "Hello." in freeze(trace=trace).text


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("a folder", "it is not a regular file"),
        ("not UTF-8", "is not UTF-8 text"),
    ],
)
def test_a_file_that_cannot_be_a_trace_is_one_line(tmp_path, capsys, name, says):
    trace = tmp_path / "trace.json"
    if name == "a folder":
        trace.mkdir()
    else:
        trace.write_bytes(b'{"resourceSpans": [\xff]}')
    assert cli.main(["freeze", "--trace", str(trace)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err


def test_a_device_is_refused_without_reading_it(capsys):
    assert cli.main(["freeze", "--trace", "/dev/zero"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "it is not a regular file" in err, err


def test_a_line_past_the_bound_is_refused_before_it_is_read_whole(tmp_path, capsys):
    # One request holding an attribute of 33 MiB: refused at the bound, not parsed.
    from harness.freeze._otlp import MAX_LINE

    trace = tmp_path / "huge.json"
    huge = _request({**GENAI, "junk": "x" * (MAX_LINE + 1024)})
    trace.write_text(json.dumps(huge), encoding="utf-8")
    assert cli.main(["freeze", "--trace", str(trace)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"{trace}:1: the line is longer than {MAX_LINE // 2**20} MiB" in err
    assert Path(trace).stat().st_size > MAX_LINE
