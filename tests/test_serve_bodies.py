"""harness serve reads a request body as json.loads does, decoding only what the bodies
it read before did not hold (harness.serve._bodies; docs/performance.md#serving-every-wire)."""

from __future__ import annotations

import json

import httpx
import pytest

from harness.serve import running_server
from harness.serve._bodies import BodyReader


def _history(n: int) -> list[dict]:
    items: list[dict] = [{"role": "user", "parts": [{"text": "look up every key"}]}]
    for i in range(n):
        call = {"functionCall": {"id": f"c{i}", "name": "lookup", "args": {"key": f"k{i}"}}}
        items.append({"role": "model", "parts": [call]})
        answer = {"functionResponse": {"id": f"c{i}", "name": "lookup", "response": {"v": i}}}
        items.append({"role": "user", "parts": [answer]})
    return items


TOOLS = [{"functionDeclarations": [{"name": "lookup", "parametersJsonSchema": {}}]}]


def _body(n: int) -> bytes:
    return json.dumps({"contents": _history(n), "tools": TOOLS}).encode()


def test_a_growing_history_reads_as_json_loads_and_keeps_the_items_read():
    reader = BodyReader()
    before = None
    for n in range(6):
        raw = _body(n)
        value = reader.read(raw)
        assert value == json.loads(raw)
        if before is not None:
            # The items the last body held are taken from its reading, not decoded again.
            assert all(a is b for a, b in zip(before["contents"], value["contents"], strict=False))
            assert value["contents"] is not before["contents"]  # (a list of its own)
        before = value


@pytest.mark.parametrize(
    "raw",
    [
        # Edited history: the item changed is decoded again, the ones before it are not.
        json.dumps({"contents": [*_history(2)[:3], {"role": "user", "parts": []}]}),
        # Whitespace anywhere JSON allows it, keys repeated (the last one wins), nesting.
        ' { "contents" : [ {"a": 1} , {"b" : [1, {"c": "]"}]} ] , "contents": [{"z": 0}] } ',
        '{"contents": [{"a": 1}, 2, 3], "n": 1e400, "m": NaN, "s": "\\u00e9\\n"}',
        '{"contents": [{"a": 1}, {"b": 2}]}\n',
        '{"contents": [], "tools": []}',
        "{}",
        '{"a": 1, "contents": [{"a": 1}, {"b": 2}, 12]}',
        '{"a": 1, "contents": [{"a": 1}, {"b": 2}, 123]}',
    ],
)
def test_any_body_reads_as_json_loads(raw):
    reader = BodyReader()
    for first in (_body(1), _body(2), raw.encode()):
        reader.read(first)
    assert reader.read(raw.encode()) == json.loads(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"contents": [{"a": 1}, {"b": 2}',  # cut off
        b'{"contents": [{"a": 1},]}',  # a trailing comma
        b'{"contents": [{"a": 1}]} x',  # something after the object
        b'{"contents": [{"a": 1}] "b": 2}',
        b"[1, 2]",
        b'"text"',
        b"\xff\xfe",
    ],
)
def test_a_body_that_is_no_json_object_fails_as_json_loads_does(raw):
    reader = BodyReader()
    reader.read(b'{"contents": [{"a": 1}]}')
    try:
        expected = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        with pytest.raises(type(exc)):
            reader.read(raw)
    else:
        assert reader.read(raw) == expected


def test_conversations_taking_turns_each_continue_their_own():
    reader = BodyReader()
    other = [{"role": "user", "parts": [{"text": "another task"}]}]
    for n in range(4):
        mine = _body(n)
        theirs = json.dumps({"contents": other * (n + 1)}).encode()
        assert reader.read(mine) == json.loads(mine)
        assert reader.read(theirs) == json.loads(theirs)


def test_serve_answers_a_whole_gemini_run_read_incrementally():
    # The server over real HTTP: each request carries the whole history, as an agent's
    # does; every answer is the script's next step.
    steps = [{"tool_calls": [{"lookup": {"key": f"k{i}"}}]} for i in range(4)]
    steps.append({"content": "done"})
    with running_server(steps) as url, httpx.Client(timeout=60) as client:
        root = url.removesuffix("/v1")
        for n in range(5):
            sent = client.post(
                f"{root}/v1beta/models/m:generateContent",
                content=_body(n),
                headers={"content-type": "application/json"},
            )
            assert sent.status_code == 200, sent.text
            parts = sent.json()["candidates"][0]["content"]["parts"]
            if n < 4:
                assert parts[0]["functionCall"]["args"] == {"key": f"k{n}"}
            else:
                assert parts[0]["text"] == "done"


def _nested(depth: int) -> dict:
    value: dict = {"text": "deep"}
    for _ in range(depth):
        value = {"inner": value}
    return value


def test_the_bounds_check_what_is_new_in_a_conversations_body_and_keep_no_refused_one():
    # serve's bounds (harness.serve._bounds) decode and check only the new part of a
    # conversation's body: a bad item arriving late is refused all the same, and a body
    # refused is not kept, so the next body sharing its history is checked again.
    from harness.serve._bounds import json_problem

    reader = BodyReader()
    for n in range(3):
        assert json_problem(_body(n), 100, reader) == (None, json.loads(_body(n)))
    history = _history(3)
    deep = {"contents": [*history, {"role": "user", "parts": [_nested(120)]}], "tools": TOOLS}
    lone = {"contents": [*history, {"role": "user", "parts": [{"text": "\ud83d"}]}]}
    for body in (deep, lone):
        raw = json.dumps(body).encode()
        problem, value = json_problem(raw, 100, reader)
        assert problem is not None and value is None
        assert problem.startswith(("its JSON is nested deeper than 100", "it holds a lone"))
        again = json.dumps({**body, "model": "m"}).encode()  # the same history once more
        assert json_problem(again, 100, reader)[0] == problem
    assert "at contents[7].parts[0].text" in json_problem(json.dumps(lone).encode(), 100)[0]
    # A lone surrogate as raw bytes (not a \u escape) is refused too.
    raw = _body(2)[:-1] + b', "x": "\xed\xa0\xbd"}'
    assert "surrogate" in str(json_problem(raw, 100, BodyReader())[0])
