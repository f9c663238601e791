"""One script served to the real SDK clients of every wire gives the same run
(docs/wires.md#conformance).

Agents on the ``openai`` SDK (Chat Completions and the Responses API), the ``anthropic`` SDK
(the Messages API: whole, its stream helper and its raw event stream) and the
``google-genai`` SDK (the Gemini API), each whole and streamed, with the SDKs' own retries
and a turn limit of their own, are run against harness's server on 127.0.0.1 on the same
scripts: parallel calls, a tool error, a 429 then success, malformed arguments, a streamed
reply with reasoning, stagnation stop, the loop's own limit. The runs harness rebuilds from
what crossed the boundary must agree on the trajectory, the tool results and the
termination; where a client differs by its SDK's or its API's own doing, the test says
what it does instead.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

pytest.importorskip("anthropic", reason="the Messages API's client is the anthropic SDK")
pytest.importorskip("google.genai", reason="the Gemini API's client is the google-genai SDK")

from harness.scenario import run_scenario

AGENT = '''
import json
import os

import anthropic
import openai
from google import genai
from google.genai import types

PARAMETERS = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
CHAT_TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": PARAMETERS}}]
RESPONSES_TOOLS = [{"type": "function", "name": "lookup", "parameters": PARAMETERS}]
MESSAGES_TOOLS = [{"name": "lookup", "input_schema": PARAMETERS}]
GEMINI_CONFIG = types.GenerateContentConfig(
    tools=[types.Tool(function_declarations=[
        types.FunctionDeclaration(name="lookup", parameters_json_schema=PARAMETERS)])],
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    thinking_config=types.ThinkingConfig(include_thoughts=True),
)
# Each loop's own limit on model requests, as agent frameworks have one.
MAX_TURNS = 6
# The model's reasoning texts each loop was given (thinking blocks, thought parts).
THOUGHTS = []


class MaxTurnsExceeded(Exception):
    """The loop's own limit (named as the Agents SDK names its own)."""


def limit():
    return MaxTurnsExceeded(f"Max turns ({MAX_TURNS}) exceeded")


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
    for _ in range(MAX_TURNS):
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
    raise limit()


def chat_stream(question):
    return chat(question, stream=True)


def responses(question, stream=False):
    """A stateless loop (store off): every output item goes back in ``input``, reasoning
    items with their encrypted content, as the API asks of reasoning models."""
    client = openai.OpenAI(max_retries=2)
    items = [{"role": "user", "content": question}]
    asked = {"model": "m", "tools": RESPONSES_TOOLS, "store": False,
             "include": ["reasoning.encrypted_content"], "reasoning": {"summary": "auto"}}
    for _ in range(MAX_TURNS):
        if stream:
            with client.responses.stream(input=items, **asked) as s:
                for _ in s:
                    pass
                response = s.get_final_response()
        else:
            response = client.responses.create(input=items, **asked)
        items += [item.model_dump(exclude_none=True, exclude={"parsed_arguments"})
                  for item in response.output]
        THOUGHTS.extend(part.text for item in response.output if item.type == "reasoning"
                        for part in item.summary)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        items += [{"type": "function_call_output", "call_id": c.call_id,
                   "output": lookup(c.arguments)} for c in calls]
    raise limit()


def responses_stream(question):
    return responses(question, stream=True)


def _events(client, turns, asked):
    """The content blocks of the raw event stream (``messages.create(stream=True)``): a
    call's input is the text its ``input_json_delta`` pieces add up to."""
    blocks = []
    for event in client.messages.create(messages=turns, stream=True, **asked):
        if event.type == "content_block_start":
            blocks.append(event.content_block.model_dump(exclude_none=True))
            if event.content_block.type == "tool_use":
                blocks[-1]["input"] = ""
        elif event.type == "content_block_delta":
            block, delta = blocks[event.index], event.delta
            if delta.type == "text_delta":
                block["text"] += delta.text
            elif delta.type == "input_json_delta":
                block["input"] += delta.partial_json
            elif delta.type == "thinking_delta":
                block["thinking"] += delta.thinking
            elif delta.type == "signature_delta":
                block["signature"] = delta.signature
    return blocks


def _sent_back(block):
    """A block as the next request carries it: a call's input as an object when its
    text is JSON (else as the text it is)."""
    if block["type"] != "tool_use" or not isinstance(block["input"], str):
        return block
    try:
        return {**block, "input": json.loads(block["input"] or "{}")}
    except ValueError:
        return block


def messages(question, stream=None):
    """``stream``: None for whole replies, "helper" for the SDK's ``messages.stream``,
    "events" for the raw event stream."""
    client = anthropic.Anthropic(max_retries=2)
    turns = [{"role": "user", "content": question}]
    asked = {"model": "m", "max_tokens": 1024, "tools": MESSAGES_TOOLS}
    for _ in range(MAX_TURNS):
        if stream == "events":
            content = _events(client, turns, asked)
        elif stream == "helper":
            with client.messages.stream(messages=turns, **asked) as s:
                for _ in s:
                    pass
                content = [b.model_dump(exclude_none=True, warnings=False)
                           for b in s.get_final_message().content]
        else:
            message = client.messages.create(messages=turns, **asked)
            content = [b.model_dump(exclude_none=True, warnings=False) for b in message.content]
        THOUGHTS.extend(b["thinking"] for b in content if b["type"] == "thinking")
        turns.append({"role": "assistant", "content": [_sent_back(b) for b in content]})
        calls = [b for b in content if b["type"] == "tool_use"]
        if not calls:
            return "".join(b["text"] for b in content if b["type"] == "text")
        results = []
        for block in calls:
            given = block["input"]
            text = lookup((given or "{}") if isinstance(given, str) else json.dumps(given))
            results.append({"type": "tool_result", "tool_use_id": block["id"], "content": text,
                            "is_error": text.startswith("error:")})
        turns.append({"role": "user", "content": results})
    raise limit()


def messages_stream(question):
    return messages(question, stream="helper")


def messages_events(question):
    return messages(question, stream="events")


def _gemini_results(calls):
    """A user turn answering each call by id and name (an error under "error")."""
    parts = []
    for call in calls:
        text = lookup(json.dumps(call.args or {}))
        response = {"error": text} if text.startswith("error:") else {"result": text}
        answer = types.FunctionResponse(id=call.id, name=call.name, response=response)
        parts.append(types.Part(function_response=answer))
    return types.Content(role="user", parts=parts)


def gemini(question, stream=False):
    """The model turn goes back as it came, thought parts and signatures included (the
    SDK retries a 429 only when told to)."""
    retry = types.HttpRetryOptions(
        attempts=3, initial_delay=0.01, max_delay=0.01, http_status_codes=[429])
    client = genai.Client(http_options=types.HttpOptions(retry_options=retry))
    contents = [types.Content(role="user", parts=[types.Part(text=question)])]
    for _ in range(MAX_TURNS):
        if stream:
            parts = []
            for chunk in client.models.generate_content_stream(
                    model="m", contents=contents, config=GEMINI_CONFIG):
                parts += chunk.parts or []
        else:
            reply = client.models.generate_content(model="m", contents=contents, config=GEMINI_CONFIG)
            parts = reply.parts or []
        THOUGHTS.extend(part.text for part in parts if part.thought)
        contents.append(types.Content(role="model", parts=parts))
        calls = [part.function_call for part in parts if part.function_call]
        if not calls:
            return "".join(part.text for part in parts if part.text and not part.thought)
        contents.append(_gemini_results(calls))
    raise limit()


def gemini_stream(question):
    return gemini(question, stream=True)


def any_wire(question):
    """The agent on the API harness names (HARNESS_WIRE, a wire matrix's combination)."""
    agent = {"openai-chat": chat, "openai-responses": responses, "anthropic": messages,
             "gemini": gemini}
    return agent[os.environ["HARNESS_WIRE"]](question)


def always_chat(question):
    return chat(question)
'''

# The legs: each wire's SDK, whole and streamed. messages_stream is the anthropic SDK's
# stream helper, messages_events its raw event stream (both documented by the SDK).
CLIENTS = [
    "chat",
    "chat_stream",
    "responses",
    "responses_stream",
    "messages",
    "messages_stream",
    "messages_events",
    "gemini",
    "gemini_stream",
]

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
    "the framework's own limit": """\
        llm:
          script:
            - tool_calls: [{lookup: {q: one}}]
            - tool_calls: [{lookup: {q: two}}]
            - tool_calls: [{lookup: {q: three}}]
            - tool_calls: [{lookup: {q: four}}]
            - tool_calls: [{lookup: {q: five}}]
            - tool_calls: [{lookup: {q: six}}]
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
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "GOOGLE_GEMINI_BASE_URL",
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


# Where a leg differs from the others by its SDK's or its API's own behaviour, not harness's:
# the (case, client) pairs, each checked by check_own_difference.
OWN_DIFFERENCES = {
    ("malformed arguments", "messages_stream"),
    ("malformed arguments", "gemini"),
    ("malformed arguments", "gemini_stream"),
}
ENDINGS = {"stagnation stop": "stagnation", "the framework's own limit": "max_iterations"}


def check_own_difference(case: str, client: str, run: dict, result) -> None:
    """Arguments that are no JSON: the anthropic SDK's stream helper parses a call's
    streamed input itself and raises, so the call never runs; the Gemini API cannot carry
    them at all (a call's args are an object), so the reply is the API's answer to a call
    the model could not form, ``finishReason: MALFORMED_FUNCTION_CALL`` with no parts, and
    the loop ends with no call and no text."""
    assert case == "malformed arguments"
    if client == "messages_stream":
        assert run["termination"] == "error"
        assert run["error"].exception == "ValueError"
        assert "Unable to parse tool parameter JSON" in run["error"].message
        assert run["calls"] == [("call_1_0", "lookup", {}, None, "not_run", 1, 1)]
        return
    assert (run["termination"], run["llm_calls"], run["calls"]) == ("completed", 1, [])
    assert run["final"] == ""
    finishes = [e["finish_reason"] for e in result.events if e["event"] == "llm_response"]
    assert finishes == ["malformed_function_call"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_script_gives_the_same_run_on_every_wire_and_client(project, case):
    folder, module = project
    runs, thoughts = {}, {}
    for client in CLIENTS:
        result = run_case(folder, module, client, case)
        runs[client] = observed(result)
        thoughts[client] = list(sys.modules[module].THOUGHTS)
        sys.modules[module].THOUGHTS.clear()
        if (case, client) in OWN_DIFFERENCES:
            check_own_difference(case, client, runs.pop(client), result)
    # A tool that failed (its result says "error: ..."): the Messages and Gemini APIs carry
    # the failure's signal (is_error, a response's "error" key) and the call is observed
    # failed; Chat Completions and the Responses API have none (docs/wires.md#tool-failures)
    # and it reads ok. Apart from that status the runs agree.
    for client, run in runs.items():
        signalled = client.startswith(("messages", "gemini"))
        for c in run["calls"]:
            if str(c[3]).startswith("error:"):
                assert c[4] == ("error" if signalled else "ok"), (client, c)
        run["calls"] = [
            (*c[:4], "ran" if str(c[3]).startswith("error:") else c[4], *c[5:])
            for c in run["calls"]
        ]
    reference = runs["chat"]
    for client, run in runs.items():
        assert run == reference, client
    assert reference["termination"] == ENDINGS.get(case, "completed")
    assert reference["calls"], reference
    if case == "malformed arguments":
        # The clients that hand the text to the tool: its error says so.
        assert reference["calls"][0][3] == "error: bad arguments (JSONDecodeError)"
    if case == "the framework's own limit":
        assert reference["error"].exception == "MaxTurnsExceeded"
        assert reference["llm_calls"] == 6
    # The reasoning reaches the clients of the wires that carry its text: Responses
    # reasoning summaries, Anthropic thinking blocks, Gemini thought parts (each asked
    # for as the API wants); Chat Completions has no place for it.
    said = ["One lookup will do.", "That answers it."] if case == "reasoning" else []
    assert thoughts == {client: [] if "chat" in client else said for client in CLIENTS}


WIRES = ["openai-chat", "openai-responses", "anthropic", "gemini"]
MATRIX = """\
name: conformance
matrix:
  wire: [openai-chat, openai-responses, anthropic, gemini]
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
    assert [r.status for r in runs] == ["passed"] * 4
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
    assert [r.termination for r in runs] == ["completed", "error", "error", "error"]
    assert "this run serves the anthropic wire only (matrix wire: anthropic)" in (
        runs[2].final.error.message
    )
    assert "this run serves the gemini wire only (matrix wire: gemini)" in (
        runs[3].final.error.message
    )


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        ("{wire: [anthropic, claude]}", "matrix.wire.1: 'claude': no model wire is called"),
        ("{wire: [anthropic, anthropic]}", "'anthropic' is listed twice"),
    ],
)
def test_bad_wire_matrices_are_load_errors_at_their_line(project, matrix, message):
    from harness._errors import HarnessError
    from harness.scenario import load_scenario

    folder, module = project
    text = MATRIX.format(module=module, fn="any_wire").replace(
        "matrix:\n  wire: [openai-chat, openai-responses, anthropic, gemini]\n",
        f"matrix: {matrix}\n",
    )
    path = folder / "bad.scenario.yaml"
    path.write_text(text)
    with pytest.raises(HarnessError) as caught:
        load_scenario(path)
    assert message in str(caught.value)


def test_a_wire_matrix_needs_a_target(project):
    from harness._errors import HarnessError
    from harness.scenario import load_scenario

    folder, _ = project
    path = folder / "own.scenario.yaml"
    path.write_text(
        "name: own\nmatrix: {wire: [anthropic]}\ninput: hi\nllm:\n  script:\n    - content: hi\n"
    )
    with pytest.raises(HarnessError, match=r":2: matrix.wire: a wire matrix serves one script"):
        load_scenario(path)
