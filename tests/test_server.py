"""`harness serve`: an OpenAI-compatible server on uvicorn, answering from a script.

Everything goes over real HTTP on 127.0.0.1, through the official openai SDK where
a client would use it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import openai
import pytest

from harness._errors import HarnessError
from harness.llm._script import ScriptStep
from harness.serve import create_app, running_app, running_server


def http(method: str, url: str, body: bytes | None = None) -> tuple[int, bytes]:
    """A plain HTTP request (the standard library: the SDK's HTTP client differs by version)."""
    request = urllib.request.Request(url, data=body, method=method)
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def reset(url: str) -> int:
    """POST /v1/reset."""
    return http("POST", f"{url}/reset")[0]


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
RESPONSES_WEATHER_TOOL = {"type": "function", **WEATHER_TOOL["function"]}
USER = {"role": "user", "content": "Weather in SF and LA?"}

PARALLEL = [
    {
        "content": "Checking both.",
        "tool_calls": [{"get_weather": {"city": "SF"}}, {"get_weather": {"city": "LA"}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 7},
    },
    {"content": "Sunny in both.", "usage": {"prompt_tokens": 30, "completion_tokens": 4}},
]


def client(url: str, **kwargs) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key="sk-test", **kwargs)


def after_first_reply(message) -> list[dict]:
    """The conversation after the first reply and its two tool results."""
    calls = [
        {"id": c.id, "type": "function", "function": c.function.model_dump()}
        for c in message.tool_calls
    ]
    return [
        USER,
        {"role": "assistant", "content": message.content, "tool_calls": calls},
        {"role": "tool", "tool_call_id": calls[0]["id"], "content": "72F"},
        {"role": "tool", "tool_call_id": calls[1]["id"], "content": "75F"},
    ]


def test_chat_completion_with_parallel_tool_calls_and_usage():
    with running_server(PARALLEL) as url, client(url) as sdk:
        first = sdk.chat.completions.create(model="m", messages=[USER], tools=[WEATHER_TOOL])
        choice = first.choices[0]
        assert choice.finish_reason == "tool_calls"
        assert choice.message.content == "Checking both."
        assert [
            (c.id, c.function.name, json.loads(c.function.arguments))
            for c in choice.message.tool_calls
        ] == [
            ("call_1_0", "get_weather", {"city": "SF"}),
            ("call_1_1", "get_weather", {"city": "LA"}),
        ]
        assert first.usage.model_dump(
            include={"prompt_tokens", "completion_tokens", "total_tokens"}
        ) == {
            "prompt_tokens": 12,
            "completion_tokens": 7,
            "total_tokens": 19,
        }
        second = sdk.chat.completions.create(
            model="m", messages=after_first_reply(choice.message), tools=[WEATHER_TOOL]
        )
        assert second.choices[0].message.content == "Sunny in both."
        assert second.choices[0].finish_reason == "stop"


def test_streamed_chat_completion_accumulates_to_the_same_reply():
    with running_server(PARALLEL) as url, client(url) as sdk:
        chunks = list(
            sdk.chat.completions.create(
                model="m",
                messages=[USER],
                tools=[WEATHER_TOOL],
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    arguments: dict[int, str] = {}
    ids: dict[int, str] = {}
    for chunk in chunks:
        for choice in chunk.choices:
            for call in choice.delta.tool_calls or []:
                ids.setdefault(call.index, call.id)
                arguments[call.index] = arguments.get(call.index, "") + (
                    call.function.arguments or ""
                )
    assert content == "Checking both."
    assert ids == {0: "call_1_0", 1: "call_1_1"}
    assert {i: json.loads(a) for i, a in arguments.items()} == {
        0: {"city": "SF"},
        1: {"city": "LA"},
    }
    # More than one chunk per call: clients must really accumulate.
    assert sum(1 for c in chunks if c.choices and c.choices[0].delta.tool_calls) > 2
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == 19


def test_position_comes_from_the_request_not_from_server_state():
    steps = [{"content": "one"}, {"content": "two"}, {"content": "three"}]
    with running_server(steps) as url, client(url) as sdk:

        def ask(assistant_turns: int) -> str:
            messages = [USER]
            for i in range(assistant_turns):
                messages += [
                    {"role": "assistant", "content": f"r{i}"},
                    {"role": "user", "content": "more"},
                ]
            reply = sdk.chat.completions.create(model="m", messages=messages)
            return reply.choices[0].message.content

        # Any order, any number of times: k assistant replies in the input -> step k+1.
        assert [ask(2), ask(0), ask(1), ask(0), ask(2)] == ["three", "one", "two", "one", "three"]


def test_error_step_fails_one_attempt_and_the_retry_gets_the_reply():
    steps = [{"error": {"status": 429, "message": "Rate limited"}}, {"content": "Done."}]
    with running_server(steps) as url:
        with client(url, max_retries=0) as sdk:
            with pytest.raises(openai.RateLimitError) as caught:
                sdk.chat.completions.create(model="m", messages=[USER])
            assert caught.value.status_code == 429
            assert caught.value.body == {
                "message": "Rate limited",
                "type": "rate_limit_error",
                "param": None,
                "code": None,
            }
            # The retry (same conversation) gets the reply the error stood before.
            reply = sdk.chat.completions.create(model="m", messages=[USER])
            assert reply.choices[0].message.content == "Done."
            # /v1/reset forgets the attempts: the error happens again.
            assert reset(url) == 204
            with pytest.raises(openai.RateLimitError):
                sdk.chat.completions.create(model="m", messages=[USER])
        # The SDK's own retries absorb the error, as they would a real 429.
        reset(url)
        with client(url, max_retries=1) as sdk:
            reply = sdk.chat.completions.create(model="m", messages=[USER])
            assert reply.choices[0].message.content == "Done."


def test_attempts_are_counted_per_conversation():
    steps = [
        {"content": "hi"},
        {"error": {"status": 500, "message": "boom"}},
        {"content": "second"},
    ]
    with running_server(steps) as url, client(url, max_retries=0) as sdk:
        base = [USER, {"role": "assistant", "content": "hi"}]
        a = [*base, {"role": "user", "content": "a"}]
        b = [*base, {"role": "user", "content": "b"}]
        # Each conversation fails once at position 2, independently of the other.
        for messages in (a, b):
            with pytest.raises(openai.InternalServerError, match="boom"):
                sdk.chat.completions.create(model="m", messages=messages)
        for messages in (a, b):
            assert (
                sdk.chat.completions.create(model="m", messages=messages).choices[0].message.content
                == "second"
            )


def test_timeout_step_holds_the_response_past_the_client_timeout():
    steps = [{"error": "timeout"}, {"content": "late"}]
    with running_server(steps, max_delay=5) as url:
        with (
            client(url, max_retries=0, timeout=0.3) as sdk,
            pytest.raises(openai.APITimeoutError),
        ):
            sdk.chat.completions.create(model="m", messages=[USER])
        # The retry, by a client with time to wait (a loaded machine may take 0.3 s).
        with client(url, max_retries=0) as sdk:
            reply = sdk.chat.completions.create(model="m", messages=[USER])
            assert reply.choices[0].message.content == "late"
        # A client that waits longer than --max-delay gets a 504.
        reset(url)
    with running_server(steps, max_delay=0.2) as url, client(url, max_retries=0) as sdk:
        with pytest.raises(openai.APIStatusError) as caught:
            sdk.chat.completions.create(model="m", messages=[USER])
        assert caught.value.status_code == 504


def test_a_timeout_step_released_by_shutdown_says_so():
    # Woken by the shutdown itself, not by uvicorn's grace period or the 20 s max delay:
    # the answer says so (no stopwatch needed).
    app = create_app([ScriptStep(error="timeout")], max_delay=20)
    answers = []
    body = json.dumps({"model": "m", "messages": [USER]}).encode()
    with running_app(app) as url:
        waiting = threading.Thread(
            target=lambda: answers.append(http("POST", f"{url}/chat/completions", body))
        )
        waiting.start()
        deadline = time.monotonic() + 30
        while not app.state.script.attempts:  # the request is being held
            assert time.monotonic() < deadline, "the request never reached the server"
            time.sleep(0.01)
    waiting.join(10)
    ((status, payload),) = answers
    message = json.loads(payload)["error"]["message"]
    assert status == 504
    assert message.startswith("timeout step: the server is shutting down: the response was ")
    assert "of 20 s" in message and "held for 20 s" not in message


def test_script_exhausted_is_a_client_error():
    with running_server([{"content": "only"}]) as url, client(url, max_retries=0) as sdk:
        messages = [
            USER,
            {"role": "assistant", "content": "only"},
            {"role": "user", "content": "and?"},
        ]
        with pytest.raises(openai.BadRequestError, match="script exhausted"):
            sdk.chat.completions.create(model="m", messages=messages)


def test_models_and_unknown_endpoints():
    with running_server([{"content": "x"}]) as url, client(url, max_retries=0) as sdk:
        assert [m.id for m in sdk.models.list()] == ["harness-script"]
        with pytest.raises(openai.NotFoundError, match="not an endpoint of harness serve"):
            sdk.embeddings.create(model="m", input="x")
        status, body = http("POST", f"{url}/chat/completions", b"{not json")
        assert status == 400
        assert json.loads(body)["error"]["type"] == "invalid_request_error"


# -- Responses API ------------------------------------------------------------------------------

MULTIPLY = {
    "type": "function",
    "name": "multiply",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    },
}


@pytest.mark.parametrize("stream", [False, True])
def test_responses_api_function_call_round_trip(stream):
    steps = [
        {
            "tool_calls": [{"multiply": {"a": 6, "b": 7}}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 2},
        },
        {"content": "6 * 7 = 42"},
    ]
    with running_server(steps) as url, client(url) as sdk:

        def create(items):
            if not stream:
                return sdk.responses.create(model="m", input=items, tools=[MULTIPLY])
            events = list(
                sdk.responses.create(model="m", input=items, tools=[MULTIPLY], stream=True)
            )
            assert events[0].type == "response.created"
            deltas = "".join(
                e.delta
                for e in events
                if e.type
                in ("response.function_call_arguments.delta", "response.output_text.delta")
            )
            final = events[-1]
            assert final.type == "response.completed"
            done = [i for i in final.response.output if i.type in ("function_call", "message")]
            assert deltas == "".join(getattr(i, "arguments", "") or i.content[0].text for i in done)
            return final.response

        first = create([{"role": "user", "content": "6*7?"}])
        (call,) = first.output
        assert (call.type, call.call_id, call.name, json.loads(call.arguments)) == (
            "function_call",
            "call_1_0",
            "multiply",
            {"a": 6, "b": 7},
        )
        assert (first.usage.input_tokens, first.usage.output_tokens) == (9, 2)
        items = [
            {"role": "user", "content": "6*7?"},
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "42"},
        ]
        assert create(items).output_text == "6 * 7 = 42"


def test_responses_api_demands_reasoning_items_back_when_include_asks():
    steps = [{"tool_calls": [{"multiply": {"a": 6, "b": 7}}]}, {"content": "42"}]
    include = ["reasoning.encrypted_content"]
    with running_server(steps) as url, client(url, max_retries=0) as sdk:
        first = sdk.responses.create(model="m", input="6*7?", tools=[MULTIPLY], include=include)
        reasoning, call = first.output
        assert reasoning.type == "reasoning" and reasoning.encrypted_content
        output = {"type": "function_call_output", "call_id": call.call_id, "output": "42"}
        call_item = {
            "type": "function_call",
            "call_id": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
        }
        with pytest.raises(openai.BadRequestError, match="reasoning items must be sent back"):
            sdk.responses.create(
                model="m",
                input=[{"role": "user", "content": "6*7?"}, call_item, output],
                include=include,
            )
        reasoning_item = reasoning.to_dict(mode="json", exclude_none=True)
        items = [{"role": "user", "content": "6*7?"}, reasoning_item, call_item, output]
        assert sdk.responses.create(model="m", input=items, include=include).output_text == "42"


# -- the command --------------------------------------------------------------------------------


def _start_cli(scenario: Path, *extra: str) -> tuple[subprocess.Popen, str]:
    code = "import sys; from harness.cli import main; sys.exit(main(['serve', *sys.argv[1:]]))"
    process = subprocess.Popen(
        [sys.executable, "-c", code, str(scenario), "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=scenario.parent,
    )
    line = process.stdout.readline()
    if "http://" not in line:
        process.kill()
        raise AssertionError(f"no URL printed: {line!r} {process.stderr.read()}")
    return process, line.split(" at ", 1)[1].split()[0]


SCENARIO = """\
input: hello
llm:
  script:
    - content: Hello from the script.
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_command_answers_and_stops_cleanly_on_a_signal(tmp_path, sig):
    scenario = tmp_path / "hello.scenario.yaml"
    scenario.write_text(SCENARIO)
    process, url = _start_cli(scenario)
    try:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        with client(url) as sdk:
            reply = sdk.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}]
            )
        assert reply.choices[0].message.content == "Hello from the script."
    finally:
        process.send_signal(sig)
        out, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert "stopped" in out
    assert "Traceback" not in err


def test_serve_command_rejects_a_bad_scenario(tmp_path):
    bad = tmp_path / "bad.scenario.yaml"
    bad.write_text("input: hi\nllm:\n  script:\n    - contnet: typo\n")
    code = "import sys; from harness.cli import main; sys.exit(main(['serve', *sys.argv[1:]]))"
    result = subprocess.run(
        [sys.executable, "-c", code, str(bad), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "contnet" in result.stderr and "Traceback" not in result.stderr


def test_serve_listens_on_loopback_only_by_default(tmp_path):
    scenario = tmp_path / "hello.scenario.yaml"
    scenario.write_text(SCENARIO)
    process, url = _start_cli(scenario)
    try:
        assert url.startswith("http://127.0.0.1:")
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)


def test_serve_command_on_a_busy_port_is_bad_input_in_one_line(tmp_path):
    scenario = tmp_path / "hello.scenario.yaml"
    scenario.write_text(SCENARIO)
    process, url = _start_cli(scenario)
    port = url.split(":")[2].split("/")[0]
    try:
        second = subprocess.run(
            [sys.executable, "-m", "harness.cli", "serve", str(scenario), "--port", port],
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)
    assert second.returncode == 2, second.stderr
    assert second.stderr.splitlines() == [
        f"harness serve: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]


def test_running_app_serves_a_wrapped_app():
    app = create_app([])
    with running_app(app) as url:
        status, body = http("GET", f"{url}/models")
        assert status == 200
        assert json.loads(body)["data"][0]["id"] == "harness-script"


def test_a_bad_step_is_a_clear_error_before_the_server_starts():
    bad = [{"content": "ok"}, {"contnt": "typo"}]
    with (
        pytest.raises(HarnessError, match=r"^script step 2: contnt: Extra inputs"),
        running_server(bad),
    ):
        pass


# -- as the real API does it ------------------------------------------------------------------


def _post(url: str, path: str, body: dict) -> tuple[int, bytes]:
    return http("POST", f"{url}{path}", json.dumps(body).encode())


def test_error_step_attempts_are_counted_per_endpoint():
    # The same conversation on both APIs: each endpoint takes the 429 once.
    steps = [{"error": {"status": 429, "message": "Rate limited"}}, {"content": "ok"}]
    chat = {"model": "m", "messages": [USER]}
    responses = {"model": "m", "input": [USER]}
    with running_server(steps) as url:
        assert _post(url, "/chat/completions", chat)[0] == 429
        assert _post(url, "/responses", responses)[0] == 429
        assert _post(url, "/chat/completions", chat)[0] == 200
        assert _post(url, "/responses", responses)[0] == 200


def _sse(payload: bytes) -> list[dict]:
    lines = payload.decode().splitlines()
    return [json.loads(line[6:]) for line in lines if line.startswith("data: {")]


def test_a_streamed_tool_call_reply_opens_with_null_content_and_a_text_reply_with_empty():
    steps = [{"tool_calls": [{"get_weather": {"city": "SF"}}]}, {"content": "Sunny."}]
    body = {"model": "m", "messages": [USER], "stream": True, "tools": [WEATHER_TOOL]}
    with running_server(steps) as url:
        first = _sse(_post(url, "/chat/completions", body)[1])[0]["choices"][0]["delta"]
        assert first == {"role": "assistant", "content": None}
        answered = [
            USER,
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1_0",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "SF"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1_0", "content": "72F"},
        ]
        text = _sse(_post(url, "/chat/completions", {**body, "messages": answered})[1])
        assert text[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}


def test_a_streamed_function_call_item_is_added_in_progress():
    steps = [{"tool_calls": [{"get_weather": {"city": "SF"}}]}]
    body = {"model": "m", "input": [USER], "stream": True, "tools": [RESPONSES_WEATHER_TOOL]}
    with running_server(steps) as url:
        events = _sse(_post(url, "/responses", body)[1])
    added = [e["item"] for e in events if e.get("type") == "response.output_item.added"]
    assert [(i["type"], i["status"]) for i in added] == [("function_call", "in_progress")]
    done = [e["item"] for e in events if e.get("type") == "response.output_item.done"]
    assert [i["status"] for i in done] == ["completed"]


def test_a_model_can_be_retrieved_by_id():
    with running_server([{"content": "hi"}]) as url, client(url) as sdk:
        model = sdk.models.retrieve("gpt-4o-mini")
    assert (model.id, model.object, model.owned_by) == ("gpt-4o-mini", "model", "harness")


def test_interleaved_responses_input_counts_model_rounds_not_function_calls():
    # [user, call A, output A, call B, output B], A and B from one reply: the real API
    # takes this layout; it is one model round, so the next step answers.
    steps = [
        {"tool_calls": [{"get_weather": {"city": "SF"}}, {"get_weather": {"city": "LA"}}]},
        {"content": "Both sunny."},
    ]
    with running_server(steps) as url, client(url) as sdk:
        first = sdk.responses.create(model="m", input=[USER], tools=[RESPONSES_WEATHER_TOOL])
        calls = [item for item in first.output if item.type == "function_call"]
        assert len(calls) == 2
        interleaved: list = [USER]
        for call in calls:
            interleaved.append(
                {
                    "type": "function_call",
                    "id": call.id,
                    "call_id": call.call_id,
                    "name": call.name,
                    "arguments": call.arguments,
                }
            )
            interleaved.append(
                {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}
            )
        second = sdk.responses.create(model="m", input=interleaved)
    assert second.output_text == "Both sunny."
