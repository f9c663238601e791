"""The Gemini wire (docs/wires.md#gemini): harness serve answering the real google-genai
client, targets on it observed as runs, and its JSON read the way the API means it.

The clients are the official ``google-genai`` SDK, pydantic-ai's GoogleModel and Google
ADK, talking over HTTP to harness's server on 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness._modelwires import wire_for
from harness.scenario import run_scenario
from harness.scenario._loader import load_scenario_text
from harness.serve import running_server
from harness.wires import GEMINI
from harness.wires._neutral import WireError, read_sse

genai = pytest.importorskip("google.genai")
types = pytest.importorskip("google.genai.types")

ROOT = Path(__file__).resolve().parents[1]
WEATHER = {
    "name": "get_weather",
    "description": "Current weather for a city.",
    "parametersJsonSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


@pytest.fixture(autouse=True)
def _examples_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))


def run_text(text: str):
    """Run a target scenario written here, as if it were beside the examples."""
    scenario = load_scenario_text(text, ROOT / "scenarios" / "external" / "t.scenario.yaml")
    return run_scenario(scenario)


def target(fn: str, script: str, extra: str = "") -> str:
    return (
        f"name: t\ntarget: {{python: 'scenarios.external.agents.{fn}', timeout: 30}}\n"
        f"input: What's the weather in Paris?\n{extra}llm:\n  script:\n{script}"
    )


def client(url: str, **options):
    root = url.removesuffix("/v1")
    return genai.Client(api_key="k", http_options=types.HttpOptions(base_url=root, **options))


def config():
    tool = types.Tool(function_declarations=[types.FunctionDeclaration(**_snake(WEATHER))])
    return types.GenerateContentConfig(
        tools=[tool],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


def _snake(declaration):
    return {
        "name": declaration["name"],
        "description": declaration["description"],
        "parameters_json_schema": declaration["parametersJsonSchema"],
    }


def ask(c, text="weather?", **kwargs):
    contents = [types.Content(role="user", parts=[types.Part(text=text)])]
    return c.models.generate_content(
        model="gemini-2.5-flash", contents=contents, config=config(), **kwargs
    )


# -- serving the real client ------------------------------------------------------------------


@pytest.mark.parametrize("version", ["v1beta", "v1"])
def test_both_api_versions_are_served(version):
    with running_server([{"content": "hello"}]) as url:
        c = client(url, api_version=version)
        assert ask(c).text == "hello"


def test_errors_are_googles_error_bodies_with_their_status():
    steps = [
        {"error": {"status": 429, "message": "Resource has been exhausted"}},
        {"content": "hello"},
    ]
    with running_server(steps) as url:
        c = client(url)
        with pytest.raises(genai.errors.ClientError) as raised:
            ask(c)
        error = raised.value
        assert (error.code, error.status, error.message) == (
            429,
            "RESOURCE_EXHAUSTED",
            "Resource has been exhausted",
        )
        # The same request again (a retry) gets the reply.
        assert ask(c).text == "hello"


def test_a_step_calling_a_tool_the_request_does_not_offer_is_refused_in_googles_form():
    with running_server([{"tool_calls": [{"get_time": {"city": "Rome"}}]}]) as url:
        c = client(url)
        with pytest.raises(genai.errors.ClientError) as raised:
            ask(c)
    assert raised.value.code == 400
    assert raised.value.status == "INVALID_ARGUMENT"
    assert "calls get_time, but the request offers only get_weather" in raised.value.message


def test_a_streamed_reply_arrives_in_pieces_and_ends_with_its_finish_reason_and_usage():
    usage = {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
    steps = [
        {"content": "It is 18C in Paris.", "usage": usage},
        {"tool_calls": [{"get_weather": {"city": "Paris"}}, {"get_weather": {"city": "Rome"}}]},
    ]
    with running_server(steps) as url:
        c = client(url)
        contents = [types.Content(role="user", parts=[types.Part(text="weather?")])]
        chunks = list(
            c.models.generate_content_stream(
                model="gemini-2.5-flash", contents=contents, config=config()
            )
        )
        assert len(chunks) > 1
        assert "".join(chunk.text or "" for chunk in chunks) == "It is 18C in Paris."
        assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
        assert chunks[-1].usage_metadata.total_token_count == 13
        contents += [chunks[0].candidates[0].content, contents[0]]
        calls = [
            call
            for chunk in c.models.generate_content_stream(
                model="gemini-2.5-flash", contents=contents, config=config()
            )
            for call in chunk.function_calls or []
        ]
    assert [(call.id, call.name, call.args) for call in calls] == [
        ("call_2_0", "get_weather", {"city": "Paris"}),
        ("call_2_1", "get_weather", {"city": "Rome"}),
    ]


def test_malformed_arguments_are_answered_as_a_malformed_function_call():
    steps = [{"tool_calls": [{"name": "get_weather", "raw_arguments": '{"city": "Par'}]}]
    with running_server(steps) as url:
        reply = ask(client(url))
    candidate = reply.candidates[0]
    assert candidate.finish_reason == types.FinishReason.MALFORMED_FUNCTION_CALL
    assert reply.function_calls is None


def _thinking_config(include: bool):
    return config().model_copy(
        update={"thinking_config": types.ThinkingConfig(include_thoughts=include)}
    )


@pytest.mark.parametrize("streamed", [False, True])
def test_a_steps_reasoning_is_a_thought_part_when_asked_and_signs_the_first_call(streamed):
    steps = [{"reasoning": "Paris first.", "tool_calls": [{"get_weather": {"city": "Paris"}}] * 2}]
    contents = [types.Content(role="user", parts=[types.Part(text="weather?")])]
    with running_server(steps) as url:
        c = client(url)
        replies = []
        # The same conversation twice is a retry: the same reply, with and without thoughts.
        for include in (True, False):
            asked = {"model": "m", "contents": contents, "config": _thinking_config(include)}
            if streamed:
                chunks = c.models.generate_content_stream(**asked)
                replies.append([part for chunk in chunks for part in chunk.parts or []])
            else:
                replies.append(c.models.generate_content(**asked).parts)
    thought, first, second = replies[0]
    assert (thought.thought, thought.text) == (True, "Paris first.")
    # The signature is bytes to the SDK, on the first call only; a client that does
    # not ask for thoughts (the API's default) gets the signature and no thought.
    assert first.function_call.name == "get_weather" and first.thought_signature
    assert second.function_call and second.thought_signature is None
    assert [p.thought_signature for p in replies[1]] == [first.thought_signature, None]


GEMINI_3 = "gemini-3-pro-preview"


def _unsigned(content):
    """A model turn rebuilt from its calls' names and arguments alone, as a client that
    keeps only those does: the thought signature is gone."""
    calls = [types.Part(function_call=p.function_call) for p in content.parts]
    return types.Content(role="model", parts=calls)


def _answered(content):
    parts = [
        types.Part(
            function_response=types.FunctionResponse(
                id=p.function_call.id, name=p.function_call.name, response={"result": "18C"}
            )
        )
        for p in content.parts
    ]
    return types.Content(role="user", parts=parts)


def test_gemini_3_signs_every_call_and_refuses_one_sent_back_unsigned_in_the_current_turn():
    steps = [
        {"tool_calls": [{"get_weather": {"city": "Paris"}}]},
        {"tool_calls": [{"get_weather": {"city": "Rome"}}]},
        {"content": "done"},
    ]
    asked = types.Content(role="user", parts=[types.Part(text="weather?")])
    with running_server(steps) as url:
        c = client(url)

        def send(model, contents):
            return c.models.generate_content(model=model, contents=contents, config=config())

        first = send(GEMINI_3, [asked]).candidates[0].content
        # The step has no reasoning: a Gemini 3 model signs its call all the same.
        assert first.parts[0].thought_signature
        kept = [asked, first, _answered(first)]
        second = send(GEMINI_3, kept).candidates[0].content  # sent back as it came
        assert second.parts[0].function_call.args == {"city": "Rome"}
        with pytest.raises(genai.errors.ClientError) as raised:
            send(GEMINI_3, [asked, _unsigned(first), _answered(first)])
        # An unsigned call of an earlier turn (a user message since) is not checked, and
        # a model before Gemini 3 checks nothing and signs nothing without reasoning.
        later = [asked, _unsigned(first), _answered(first), asked]
        assert send(GEMINI_3, later).candidates  # answered, not refused
        earlier = send("gemini-2.5-flash", [asked]).candidates[0].content
        assert earlier.parts[0].thought_signature is None
        assert send("gemini-2.5-flash", [asked, _unsigned(first), _answered(first)]).candidates

    error = raised.value
    assert (error.code, error.status) == (400, "INVALID_ARGUMENT")
    assert "Function call `get_weather` in contents[1] is missing a `thought_signature`" in (
        error.message
    )


@pytest.mark.parametrize(
    "fn",
    [
        "gemini_sdk:answer",
        "gemini_sdk:answer_streaming",
        "pydantic_ai_google:answer",
        "adk_agent:answer",
    ],
)
def test_the_clients_send_gemini_3s_signatures_back(fn, monkeypatch):
    from harness.wires import _gemini_serving as gemini_serving

    monkeypatch.setenv("HARNESS_EXAMPLE_GEMINI_MODEL", GEMINI_3)
    paths: list[str] = []
    served = gemini_serving.served_request

    def seen(body, path=""):  # the server's own reading, the path it was given kept
        paths.append(path)
        return served(body, path)

    monkeypatch.setattr(gemini_serving, "served_request", seen)
    script = (
        "    - tool_calls: [{get_weather: {city: Paris}}, {get_time: {city: Paris}}]\n"
        "    - tool_calls: [{get_weather: {city: Rome}}]\n"
        "    - content: done\n"
    )
    result = run_text(target(fn, script))

    assert len(paths) == 3 and all(f"/models/{GEMINI_3}:" in p for p in paths), paths
    assert (result.termination, result.final.content) == ("completed", "done")
    assert [(c.name, c.status) for c in result.tool_calls] == [
        ("get_weather", "ok"),
        ("get_time", "ok"),
        ("get_weather", "ok"),
    ]


def test_harnesss_own_loop_sends_gemini_3s_signatures_back(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    # A project of its own: the run's recording goes to its cassettes/, never the repo's
    # (where a kept one would make this run a replay).
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 't'\n")
    steps = [
        {"tool_calls": [{"get_weather": {"city": "Paris"}}, {"get_weather": {"city": "Rome"}}]},
        {"tool_calls": [{"get_weather": {"city": "Oslo"}}]},
        {"content": "done"},
    ]
    with running_server(steps) as url:
        text = (
            "name: own\ninput: weather?\n"
            f"llm: {{provider: gemini, model: {GEMINI_3}, base_url: '{url.removesuffix('/v1')}'}}\n"
            "tools:\n  get_weather: {parameters: {city: str}, returns: 18C}\n"
        )
        scenario = load_scenario_text(text, tmp_path / "own.scenario.yaml")
        result = run_scenario(scenario, record_mode="once")  # recorded: a live run

    assert (tmp_path / "cassettes" / "own.yaml").is_file()  # recorded now, not replayed
    assert (result.termination, result.final.content) == ("completed", "done")
    assert [c.arguments["city"] for c in result.tool_calls] == ["Paris", "Rome", "Oslo"]


# -- targets on the Gemini wire ---------------------------------------------------------------


def test_a_429_then_the_reply_is_one_llm_call_that_failed_and_one_that_did_not():
    script = (
        "    - error: {status: 429, message: Resource has been exhausted}\n"
        "    - content: It is 18C in Paris.\n"
    )
    result = run_text(target("gemini_sdk:answer_with_retries", script))

    assert result.termination == "completed"
    assert result.final.content == "It is 18C in Paris."
    assert result.llm_calls == 2
    failed = [e for e in result.events if e.event == "llm_failed"]
    assert [(e.status, e.message) for e in failed] == [(429, "Resource has been exhausted")]


def test_an_error_step_the_client_does_not_retry_ends_the_run_in_llm_error():
    script = "    - error: {status: 503, message: The model is overloaded}\n"
    result = run_text(target("gemini_sdk:answer", script))

    assert result.termination == "llm_error"
    assert result.final.error == {
        "type": "http_error",
        "message": "The model is overloaded",
        "status": 503,
    }


def test_stagnation_stop_refuses_the_request_after_the_repeated_plan():
    script = "    - tool_calls: [{get_weather: {city: Paris}}]\n      repeat: 8\n"
    extra = "agent: {stagnation: {window: 3}}\n"
    text = target("gemini_sdk:answer", script, extra).replace(
        "timeout: 30}", "timeout: 30, on_stagnation: stop}"
    )
    result = run_text(text)

    assert result.termination == "stagnation"
    assert result.llm_calls == 5
    assert [c.status for c in result.tool_calls] == ["ok"] * 4
    assert result.final.data["stagnation"] is True


def test_calls_without_ids_are_matched_to_their_results_by_order_and_name():
    # The API's older models give calls no id; the client answers by name, in order.
    script = (
        "    - tool_calls:\n"
        "        - {name: get_weather, arguments: {city: Paris}, id: null}\n"
        "        - {name: get_time, arguments: {city: Paris}, id: null}\n"
        "        - {name: get_weather, arguments: {city: Rome}, id: null}\n"
        "    - content: done\n"
    )
    clients = ["gemini_sdk:answer", "pydantic_ai_google:answer", "adk_agent:answer"]
    for fn in clients:
        result = run_text(target(fn, script))
        calls = [(c.id, c.name, c.result, c.status) for c in result.tool_calls]
        assert calls[0][1:] == ("get_weather", "18C, cloudy in Paris", "ok"), fn
        assert calls[1][1:] == ("get_time", "14:00 in Paris", "ok"), fn
        assert calls[2][1:] == ("get_weather", "24C, sunny in Rome", "ok"), fn
        assert [c[0] for c in calls] == [
            "call_0_get_weather",
            "call_1_get_time",
            "call_2_get_weather",
        ]


def test_pydantic_ais_own_limit_ends_the_run_at_max_iterations():
    script = (
        "    - tool_calls: [{get_weather: {city: Paris}}]\n"
        "    - tool_calls: [{get_weather: {city: Rome}}, {get_weather: {city: Oslo}}]\n"
        "    - content: done\n"
    )
    result = run_text(target("pydantic_ai_google:answer_within_two_requests", script))

    assert result.termination == "max_iterations"
    assert result.final.error["exception"] == "UsageLimitExceeded"
    assert result.llm_calls == 2
    assert [c.status for c in result.tool_calls] == ["ok", "not_run", "not_run"]


# -- the wire's JSON ----------------------------------------------------------------------------


def test_function_responses_answer_the_calls_of_the_model_turn_before_them():
    contents = [
        {"role": "user", "parts": [{"text": "weather?"}]},
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                {"functionCall": {"name": "get_weather", "args": {"city": "Rome"}}},
                {"functionCall": {"name": "get_time", "args": {"city": "Rome"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                # Out of order, and one with an id the client made up.
                {"functionResponse": {"name": "get_time", "response": {"result": "14:00"}}},
                {"function_response": {"name": "get_weather", "response": {"result": "18C"}}},
                {
                    "functionResponse": {
                        "id": "pyd_ai_1",
                        "name": "get_weather",
                        "response": {"return_value": "24C"},
                    }
                },
            ],
        },
    ]
    results = {key: found.text for key, found in GEMINI.tool_results(contents).items()}
    assert results["call_2_get_time"] == "14:00"
    assert results["call_0_get_weather"] == "18C"
    assert results["call_1_get_weather"] == "24C"
    assert results["pyd_ai_1"] == "24C"
    messages = GEMINI.messages(contents)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "tool", "tool"]
    assert [m.tool_call_id for m in messages[2:]] == [
        "call_2_get_time",
        "call_0_get_weather",
        "call_1_get_weather",
    ]


def test_a_reply_and_its_stream_read_alike():
    whole = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "thinking...", "thought": True},
                        {"text": "Let me look."},
                        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                    ],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 10,
            "candidatesTokenCount": 5,
            "thoughtsTokenCount": 3,
            "totalTokenCount": 18,
        },
    }
    reply = GEMINI.read_reply(whole, False)
    assert reply.content == "Let me look."
    assert reply.tool_calls == [("call_0_get_weather", "get_weather", '{"city": "Paris"}')]
    assert reply.finish_reason == "tool_calls"
    assert reply.usage == {"prompt_tokens": 10, "completion_tokens": 8, "total_tokens": 18}
    assert reply.reasoning == [{"text": "thinking...", "thought": True}]
    stream = (
        'data: {"candidates": [{"content": {"role": "model", "parts": [{"text": "Let "}]}}]}\r\n\r\n'
        'data: {"candidates": [{"content": {"role": "model", "parts": [{"text": "me look."}, '
        '{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]}, '
        '"finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 10, '
        '"candidatesTokenCount": 8, "totalTokenCount": 18}}\r\n\r\n'
    )
    streamed = GEMINI.read_reply(read_sse(stream), True)
    assert (streamed.content, streamed.tool_calls, streamed.finish_reason, streamed.usage) == (
        reply.content,
        reply.tool_calls,
        reply.finish_reason,
        reply.usage,
    )
    assert streamed.cut_off is None
    cut = GEMINI.read_reply(read_sse(stream.split("\r\n\r\n")[0]), True)
    assert cut.cut_off == "no finishReason"


def test_the_wire_is_found_by_path_and_refuses_a_request_without_contents():
    assert wire_for("/v1beta/models/gemini-2.5-flash:generateContent") is GEMINI
    assert wire_for("/v1/models/gemini-2.5-flash:streamGenerateContent") is GEMINI
    assert wire_for("/v1/models/gemini-2.5-flash") is None
    with pytest.raises(WireError) as raised:
        GEMINI.served_request({}, 1, "/v1beta/models/m:generateContent")
    assert raised.value.status == 400
    assert GEMINI.render_error(WireError(429, "slow down")) == {
        "error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}
    }


@pytest.mark.parametrize("streamed", [False, True])
def test_a_reply_cut_at_its_length_is_served_as_max_tokens(streamed):
    with running_server([{"content": "It is 18C in", "finish_reason": "length"}]) as url:
        c = client(url)
        if streamed:
            contents = [types.Content(role="user", parts=[types.Part(text="weather?")])]
            chunks = list(
                c.models.generate_content_stream(
                    model="gemini-2.5-flash", contents=contents, config=config()
                )
            )
            finish = chunks[-1].candidates[0].finish_reason
        else:
            finish = ask(c).candidates[0].finish_reason
    assert finish == types.FinishReason.MAX_TOKENS


def test_a_streamed_requests_error_array_is_read_as_its_one_error():
    # The API answers a failed :streamGenerateContent with a one-item JSON array.
    error = {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED"}
    read = GEMINI.read_error(429, [{"error": error}])
    assert (read.status, read.message, read.code) == (429, "Quota exceeded", "RESOURCE_EXHAUSTED")
