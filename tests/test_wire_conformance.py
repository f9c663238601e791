"""One script served to the real SDK clients of every wire gives the same run.

A target agent on the ``openai`` SDK (Chat Completions) and one on the ``anthropic`` SDK
(the Messages API), each whole and streamed, with the SDKs' own retries, are run against
harness's server on 127.0.0.1 on the same scripts: parallel calls, a tool error, a 429 then
success, malformed arguments, a streamed reply with reasoning, stagnation stop. The runs
harness rebuilds from what crossed the boundary (tool_calls / tool messages on one wire,
tool_use / tool_result blocks on the other) must agree on the trajectory, the tool results
and the termination.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

pytest.importorskip("anthropic", reason="the Messages API's client is the anthropic SDK")

from harness.scenario import run_scenario

AGENT = '''
import json
import os
import anthropic
import openai

CHAT_TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}]
MESSAGES_TOOLS = [{"name": "lookup", "input_schema": CHAT_TOOLS[0]["function"]["parameters"]}]


def lookup(text):
    """The one tool: an error text for arguments that are not {"q": ...}."""
    try:
        q = json.loads(text)["q"]
    except (ValueError, KeyError, TypeError) as exc:
        return f"error: bad arguments ({type(exc).__name__})"
    if q == "missing":
        return "error: nothing is called missing"
    return "found " + q


def chat(question, stream=False):
    client = openai.OpenAI(max_retries=2)
    messages = [{"role": "user", "content": question}]
    while True:
        if stream:
            with client.chat.completions.stream(model="m", messages=messages, tools=CHAT_TOOLS) as s:
                for _ in s:
                    pass
                message = s.get_final_completion().choices[0].message
        else:
            reply = client.chat.completions.create(model="m", messages=messages, tools=CHAT_TOOLS)
            message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True, exclude={"parsed"}))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            result = lookup(call.function.arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def chat_stream(question):
    return chat(question, stream=True)


def _arguments(block):
    return block.input if isinstance(block.input, str) else json.dumps(block.input)


def messages(question, stream=False):
    client = anthropic.Anthropic(max_retries=2)
    turns = [{"role": "user", "content": question}]
    asked = {"model": "m", "max_tokens": 1024, "tools": MESSAGES_TOOLS}
    while True:
        if stream:
            with client.messages.stream(messages=turns, **asked) as s:
                for _ in s:
                    pass
                message = s.get_final_message()
        else:
            message = client.messages.create(messages=turns, **asked)
        turns.append({"role": "assistant", "content": message.content})
        calls = [b for b in message.content if b.type == "tool_use"]
        if not calls:
            return "".join(b.text for b in message.content if b.type == "text")
        results = []
        for block in calls:
            text = lookup(_arguments(block))
            results.append({"type": "tool_result", "tool_use_id": block.id, "content": text,
                            "is_error": text.startswith("error:")})
        turns.append({"role": "user", "content": results})


def messages_stream(question):
    return messages(question, stream=True)


def responses(question):
    client = openai.OpenAI(max_retries=2)
    tools = [{"type": "function", **CHAT_TOOLS[0]["function"]}]
    items = [{"role": "user", "content": question}]
    while True:
        response = client.responses.create(model="m", input=items, tools=tools)
        items += [item.model_dump(exclude_none=True) for item in response.output]
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        items += [{"type": "function_call_output", "call_id": c.call_id,
                   "output": lookup(c.arguments)} for c in calls]


def any_wire(question):
    """The agent on the API harness names (HARNESS_WIRE, a wire matrix's combination)."""
    agent = {"openai-chat": chat, "openai-responses": responses, "anthropic": messages}
    return agent[os.environ["HARNESS_WIRE"]](question)


def always_chat(question):
    return chat(question)
'''

CLIENTS = ["chat", "chat_stream", "messages", "messages_stream"]

CASES = {
    "parallel calls": """\
        llm:
          script:
            - tool_calls: [{lookup: {q: one}}, {lookup: {q: two}}]
            - content: Both found.
        """,
    "a tool error": """\
        llm:
          script:
            - tool_calls: [{lookup: {q: missing}}]
            - content: It is missing.
        """,
    "a 429 then success": """\
        llm:
          script:
            - error: {status: 429, message: Slow down}
            - tool_calls: [{lookup: {q: one}}]
            - content: Found after a retry.
        """,
    "malformed arguments": """\
        llm:
          script:
            - tool_calls: [{name: lookup, raw_arguments: '{q: one}'}]
            - content: The arguments were cut.
        """,
    "reasoning": """\
        llm:
          script:
            - reasoning: One lookup will do.
              tool_calls: [{lookup: {q: one}}]
            - reasoning: That answers it.
              content: Found it.
        """,
    "stagnation stop": """\
        agent:
          stagnation: {window: 3}
        llm:
          script:
            - tool_calls: [{lookup: {q: one}}]
              repeat: 8
            - content: never
        """,
}


@pytest.fixture
def project(tmp_path, monkeypatch, fresh_plugins):
    """A project folder with the agents module, named after the test (imports are cached)."""
    name = "agent_" + "".join(c if c.isalnum() else "_" for c in tmp_path.name)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / f"{name}.py").write_text(AGENT)
    monkeypatch.chdir(tmp_path)
    for variable in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
    ):
        monkeypatch.delenv(variable, raising=False)
    yield tmp_path, name
    sys.modules.pop(name, None)


def observed(result) -> dict:
    """What must be the same on every wire."""
    return {
        "termination": result.termination,
        "llm_calls": result.llm_calls,
        "iterations": result.iterations,
        "calls": [
            (c.id, c.name, c.arguments, c.result, c.status, c.group, c.iteration)
            for c in result.tool_calls
        ],
        "parallel_groups": result.parallel_groups,
        "final": result.final.content,
        "error": result.final.error,
        "data": result.final.data,
        "failed": [
            (e["call"], e["status"], e["message"])
            for e in result.events
            if e["event"] == "llm_failed"
        ],
    }


def run_case(folder, module: str, client: str, case: str):
    stop = "  on_stagnation: stop\n" if case == "stagnation stop" else ""
    text = f"target:\n  python: {module}:{client}\n  timeout: 60\n{stop}input: look it up\n"
    path = folder / f"{client}.scenario.yaml"
    path.write_text(text + textwrap.dedent(CASES[case]))
    return run_scenario(path)


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_script_gives_the_same_run_on_every_wire_and_client(project, case):
    folder, module = project
    runs = {client: observed(run_case(folder, module, client, case)) for client in CLIENTS}
    reference = runs["chat"]
    if case == "malformed arguments":
        # The anthropic SDK's stream helper parses a call's streamed input itself and
        # raises on text that is no JSON: that client fails where the others hand the text
        # to the tool. harness observes the failure, with the call it never ran.
        failed = runs.pop("messages_stream")
        assert failed["termination"] == "error"
        assert failed["error"].exception == "ValueError"
        assert "Unable to parse tool parameter JSON" in failed["error"].message
        assert failed["calls"] == [("call_1_0", "lookup", {}, None, "not_run", 1, 1)]
        assert reference["calls"][0][3] == "error: bad arguments (JSONDecodeError)"
    for client, run in runs.items():
        assert run == reference, client
    ending = {"stagnation stop": "stagnation"}.get(case, "completed")
    assert reference["termination"] == ending
    assert reference["calls"], reference


WIRES = ["openai-chat", "openai-responses", "anthropic"]
MATRIX = """\
name: conformance
matrix:
  wire: [openai-chat, openai-responses, anthropic]
target:
  python: {module}:{fn}
  timeout: 60
input: look both up
llm:
  script:
    - tool_calls: [{{lookup: {{q: one}}}}, {{lookup: {{q: two}}}}]
    - content: Both found.
"""


def test_a_wire_matrix_serves_the_script_on_each_wire_to_the_agent(project):
    from harness.scenario import expand_matrix, load_scenario, scenario_id

    folder, module = project
    path = folder / "conformance.scenario.yaml"
    path.write_text(MATRIX.format(module=module, fn="any_wire"))
    variants = expand_matrix(load_scenario(path))
    assert [str(scenario_id(v)).split("::")[1] for v in variants] == [
        f"conformance[wire={wire}]" for wire in WIRES
    ]
    runs = [run_scenario(v) for v in variants]
    assert [r.status for r in runs] == ["passed"] * 3
    first = observed(runs[0])
    assert first["calls"] == [
        ("call_1_0", "lookup", {"q": "one"}, "found one", "ok", 1, 1),
        ("call_1_1", "lookup", {"q": "two"}, "found two", "ok", 1, 1),
    ]
    assert all(observed(r) == first for r in runs[1:])
    assert [r.matrix for r in runs] == [{"wire": wire} for wire in WIRES]


def test_an_agent_on_another_wire_than_its_combinations_is_refused(project):
    from harness.scenario import expand_matrix, load_scenario

    folder, module = project
    path = folder / "conformance.scenario.yaml"
    path.write_text(MATRIX.format(module=module, fn="always_chat"))
    runs = [run_scenario(v) for v in expand_matrix(load_scenario(path))]
    assert [r.termination for r in runs] == ["completed", "error", "error"]
    assert "this run serves the anthropic wire only (matrix wire: anthropic)" in (
        runs[2].final.error.message
    )


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        ("{wire: [anthropic, claude]}", "matrix.wire.1: 'claude': no model wire is called"),
        ("{wire: [anthropic, anthropic]}", "'anthropic' is listed twice"),
    ],
)
def test_bad_wire_matrices_are_load_errors_at_their_line(project, matrix, message):
    from harness.errors import HarnessError
    from harness.scenario import load_scenario

    folder, module = project
    text = MATRIX.format(module=module, fn="any_wire").replace(
        "matrix:\n  wire: [openai-chat, openai-responses, anthropic]\n", f"matrix: {matrix}\n"
    )
    path = folder / "bad.scenario.yaml"
    path.write_text(text)
    with pytest.raises(HarnessError) as caught:
        load_scenario(path)
    assert message in str(caught.value)


def test_a_wire_matrix_needs_a_target(project):
    from harness.errors import HarnessError
    from harness.scenario import load_scenario

    folder, _ = project
    path = folder / "own.scenario.yaml"
    path.write_text(
        "name: own\nmatrix: {wire: [anthropic]}\ninput: hi\nllm:\n  script:\n    - content: hi\n"
    )
    with pytest.raises(HarnessError, match=r":2: matrix.wire: a wire matrix serves one script"):
        load_scenario(path)
