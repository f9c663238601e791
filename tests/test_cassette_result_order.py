"""Results of parallel calls match whatever order they finished in (docs/recording.md#matching).

A client that runs a reply's calls concurrently sends their results in the order they
finished (LlamaIndex's FunctionAgent collects its tool results so): the recording and a
replay then send the same results in another order. Which result answers which call is
what the request asks, so results that name their call match in any order; results that
name no call (a Gemini function response by name only) answer by their place, which still
counts.
"""

from __future__ import annotations

import copy

import pytest

from harness.cassettes._matching import BodyKeyer


def gemini(first: str, second: str, ids: bool = True) -> dict:
    def call(call_id: str, city: str) -> dict:
        return {"functionCall": {"name": "lookup", "args": {"city": city}, "id": call_id}}

    def result(call_id: str) -> dict:
        answer = {"name": "lookup", "response": {"result": f"found {call_id}"}}
        return {"functionResponse": {**answer, **({"id": call_id} if ids else {})}}

    return {
        "contents": [
            {"role": "user", "parts": [{"text": "Paris and Rome?"}]},
            {"role": "model", "parts": [call("c_1", "Paris"), call("c_2", "Rome")]},
            {"role": "user", "parts": [result(first), result(second)]},
        ]
    }


def anthropic(first: str, second: str) -> dict:
    def result(call_id: str) -> dict:
        return {"type": "tool_result", "tool_use_id": call_id, "content": f"found {call_id}"}

    uses = [
        {"type": "tool_use", "id": "tu_1", "name": "lookup", "input": {"city": "Paris"}},
        {"type": "tool_use", "id": "tu_2", "name": "lookup", "input": {"city": "Rome"}},
    ]
    return {
        "model": "claude-sonnet-4-5",
        "messages": [
            {"role": "user", "content": "Paris and Rome?"},
            {"role": "assistant", "content": uses},
            {"role": "user", "content": [result(first), result(second)]},
        ],
    }


@pytest.mark.parametrize(
    ("body", "first", "second"),
    [(gemini, "c_1", "c_2"), (anthropic, "tu_1", "tu_2")],
    ids=["gemini", "anthropic"],
)
def test_results_naming_their_calls_match_in_any_order(body, first, second):
    keyer = BodyKeyer()
    assert keyer.key(body(first, second)) == keyer.key(body(second, first))
    # Still a miss: a result answering another call than recorded.
    swapped = body(first, second)
    items = swapped.get("contents") or swapped["messages"]
    parts = items[-1].get("parts") or items[-1]["content"]
    changed = copy.deepcopy(parts[0])
    if "functionResponse" in changed:
        changed["functionResponse"]["response"] = {"result": "found elsewhere"}
    else:
        changed["content"] = "found elsewhere"
    parts[0] = changed
    assert keyer.key(swapped) != keyer.key(body(first, second))


def test_results_by_name_only_answer_by_their_place():
    keyer = BodyKeyer()
    assert keyer.key(gemini("c_1", "c_2", ids=False)) != keyer.key(gemini("c_2", "c_1", ids=False))


RACING_AGENT = """
import os

from google import genai
from google.genai import types

CONFIG = types.GenerateContentConfig(
    tools=[
        types.Tool(
            function_declarations=[
                types.FunctionDeclaration(
                    name="lookup",
                    description="Look a city up.",
                    parameters_json_schema={
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                    },
                )
            ]
        )
    ],
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
)


def answer(question):
    client = genai.Client()
    contents = [types.Content(role="user", parts=[types.Part(text=question)])]
    while True:
        reply = client.models.generate_content(
            model="gemini-2.5-flash", contents=contents, config=CONFIG
        )
        if not reply.function_calls:
            return reply.text
        contents.append(reply.candidates[0].content)
        parts = [
            types.Part(
                function_response=types.FunctionResponse(
                    id=call.id, name=call.name, response={"result": f"{call.args['city']} found"}
                )
            )
            for call in reply.function_calls
        ]
        if os.environ.get("FINISHED_FIRST") == "last":  # as if the last call finished first
            parts.reverse()
        contents.append(types.Content(role="user", parts=parts))
"""
SCRIPT = [
    {"tool_calls": [{"lookup": {"city": "Paris"}}, {"lookup": {"city": "Rome"}}]},
    {"content": "Both found."},
]


def test_a_replay_whose_parallel_results_finished_in_another_order_is_the_same_run(
    tmp_path, monkeypatch, fresh_plugins
):
    """Recorded with the results in call order, replayed with them reversed and in order:
    both replays match the recording, and their results are the same."""
    pytest.importorskip("google.genai")
    import json

    from harness.scenario import run_scenario
    from harness.serve import running_server

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / "racing_agent.py").write_text(RACING_AGENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "racing.scenario.yaml"
    path.write_text(
        "target: {python: 'racing_agent:answer', timeout: 60}\n"
        "input: Paris and Rome?\n"
        "llm: {provider: gemini, model: gemini-2.5-flash, cassette: racing.yaml}\n"
        "expect: {termination: completed, llm_calls: 2, final: {equals: Both found.}}\n"
    )
    with running_server(SCRIPT) as url:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", url.removesuffix("/v1"))
        monkeypatch.setenv("GEMINI_API_KEY", "sk-upstream-key-0123456789")
        recorded = run_scenario(path, record_mode="once")
    monkeypatch.delenv("GOOGLE_GEMINI_BASE_URL")
    monkeypatch.delenv("GEMINI_API_KEY")
    assert recorded.status == "passed", recorded.final

    monkeypatch.setenv("FINISHED_FIRST", "last")
    reversed_run = run_scenario(path)
    monkeypatch.delenv("FINISHED_FIRST")
    in_order = run_scenario(path)

    assert reversed_run.status == "passed", (reversed_run.final, reversed_run.failed_expectations)
    assert in_order.status == "passed", (in_order.final, in_order.failed_expectations)

    def written(result):
        data = json.loads(result.model_dump_json())
        return {k: v for k, v in data.items() if k not in ("wall_time", "wall_clock", "duration")}

    assert written(reversed_run) == written(in_order)


def test_freeze_compares_the_results_of_parallel_calls_in_the_order_of_the_calls():
    # Freeze's replay check and its run splitting compare conversations in this shape
    # (harness.freeze._recorded.shape): a recording whose parallel results arrived in one
    # order and a frozen run that sends them in the other are the same run (LlamaIndex's
    # FunctionAgent froze now and then into "would not replay the recording").
    from harness.freeze._recorded import shape
    from harness.wires import GEMINI

    def body(first: str, second: str) -> dict:
        calls = [{"functionCall": {"name": c, "args": {}, "id": f"id-{c}"}} for c in "ab"]
        results = [
            {"functionResponse": {"name": c, "id": f"id-{c}", "response": {"r": c}}}
            for c in (first, second)
        ]
        return {
            "contents": [
                {"role": "user", "parts": [{"text": "both"}]},
                {"role": "model", "parts": calls},
                {"role": "user", "parts": results},
            ]
        }

    in_order, finished_first = GEMINI.normalized(body("a", "b")), GEMINI.normalized(body("b", "a"))
    assert in_order != finished_first
    assert shape(in_order) == shape(finished_first)
    # What each result says still counts: another answer to a call is another run.
    changed = tuple(
        (*item[:2], '{"r": "other"}') if item[:2] == ("result", "id-a") else item
        for item in finished_first
    )
    assert shape(changed) != shape(in_order)
