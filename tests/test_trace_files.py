"""Trace files at the edges of what ``harness freeze --trace`` takes: one past the size
bound, refused before a byte is read.

Each test failed against a hand-made mutant that the other freeze tests let pass
(scripts/mutation.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import yaml

from harness import cli


def test_a_trace_file_past_the_size_bound_is_refused_before_it_is_read(tmp_path, capsys):
    # Sparse: 257 MiB on paper, nothing on disk. Refused by its size, not read line by
    # line until a line turns out too long.
    from harness.freeze._otlp import MAX_FILE

    trace = tmp_path / "huge.json"
    with trace.open("wb") as handle:
        handle.write(b'{"resourceSpans": []}\n')
        os.truncate(handle.fileno(), MAX_FILE + 2**20)
    assert cli.main(["freeze", "--trace", str(trace)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "it is larger than 256 MiB: split it" in err, err


def _trace(tmp_path, attributes: list[dict], scope: str = "test") -> str:
    span = {
        "traceId": "0af7651916cd43dd8448eb211c80319c",
        "spanId": "00f067aa0ba902b7",
        "name": "chat gpt-4o",
        "startTimeUnixNano": "1700000000000000000",
        "attributes": attributes,
    }
    scoped = {"scope": {"name": scope}, "spans": [span]}
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [scoped]}]}))
    return str(path)


def _text(key: str, value: str) -> dict:
    return {"key": key, "value": {"stringValue": value}}


ASKED = [
    _text("gen_ai.operation.name", "chat"),
    _text("gen_ai.request.model", "gpt-4o"),
    _text(
        "gen_ai.input.messages",
        json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi?"}]}]),
    ),
]


def test_a_bool_attribute_given_as_text_is_refused_not_read_as_true(tmp_path, capsys):
    # "false" is a true value to Python: read as given, it would say the opposite.
    path = _trace(tmp_path, [*ASKED, {"key": "flag", "value": {"boolValue": "false"}}])
    assert cli.main(["freeze", "--trace", path]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "boolValue: expected true or false, got" in err, err


def test_a_model_call_the_trace_holds_no_answer_to_is_frozen_as_a_failed_call(tmp_path):
    # The instrumentation recorded the request and error.type, no answer: the frozen run
    # fails at that call as the real one did, with the error's type.
    from harness.freeze import freeze

    path = _trace(tmp_path, [*ASKED, _text("error.type", "APITimeoutError")])
    text = freeze(trace=Path(path)).text
    step = yaml.safe_load(text)["llm"]["script"][0]
    assert step == {"error": {"status": 500, "message": "APITimeoutError"}}


def test_a_harness_trace_without_contents_names_the_flag_that_records_them(tmp_path, capsys):
    # harness run --otel without --otel-content writes no messages: freeze says so, and
    # says the flag, not another instrumentation's setting.
    path = _trace(tmp_path, ASKED[:2], scope="harness")
    assert cli.main(["freeze", "--trace", path]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "harness run records them with --otel-content" in err, err
