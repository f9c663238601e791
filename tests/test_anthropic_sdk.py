"""The `anthropic` LLM source: the official SDK over HTTP to `harness serve`'s Messages
API, recorded into a vcrpy cassette and replayed with the server gone and no key."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

pytest.importorskip("anthropic", reason="provider anthropic needs the anthropic SDK")

from harness import Agent, tool
from harness._errors import HarnessError
from harness._plugins import default_plugins
from harness.llm._config import LLMConfig, LLMContext
from harness.providers.anthropic import AnthropicLLM
from harness.serve import running_server

# Nothing listens here: a replay that tried the network would get a connection error.
OFFLINE = "http://127.0.0.1:9"
# A key shaped like Anthropic's: it must reach no written file, whole or in pieces.
SECRET = "sk-ant-api03-" + "Zq7" * 30


@pytest.fixture(autouse=True)
def _no_anthropic_environment(monkeypatch):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"72F and sunny in {city}"


WEATHER = [
    {
        "content": "Checking both cities.",
        "reasoning": "Two cities: ask for both at once.",
        "tool_calls": [{"get_weather": {"city": "SF"}}, {"get_weather": {"city": "LA"}}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 12},
    },
    {"content": "Sunny in both.", "usage": {"prompt_tokens": 80, "completion_tokens": 5}},
]


def root(url: str) -> str:
    """The SDK's base URL is the server's root (it adds /v1/messages)."""
    return url.removesuffix("/v1")


def make_llm(
    cassette: Path, mode: str = "none", base_url: str | None = OFFLINE, **config
) -> AnthropicLLM:
    llm_config = LLMConfig(
        provider="anthropic",
        model="claude-sonnet-4-6",
        cassette=str(cassette),
        base_url=base_url,
        **config,
    )
    context = LLMContext(scenario_id="tests/weather.scenario.yaml::weather", record_mode=mode)
    return AnthropicLLM(llm_config.with_context(context))


def comparable(result) -> dict:
    return result.model_dump(exclude={"wall_time"})


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_record_through_serve_then_replay_offline_without_a_key(tmp_path, monkeypatch, stream):
    cassette = tmp_path / "weather.yaml"
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    with running_server(WEATHER) as url:
        recording = make_llm(cassette, "once", root(url), stream=stream)
        recorded = Agent(llm=recording, tools=[get_weather]).run("Weather in SF and LA?")
    assert recorded.termination == "completed", recorded.final
    assert recorded.final.content == "Sunny in both."
    assert recorded.parallel_groups == [["get_weather", "get_weather"]]
    assert [m.content for m in recorded.conversation.messages if m.role == "tool"] == [
        "72F and sunny in SF",
        "72F and sunny in LA",
    ]
    assert recorded.usage["prompt_tokens"] == 120
    written = cassette.read_text()
    assert "/v1/messages" in written
    assert SECRET not in written and SECRET[-20:] not in written

    monkeypatch.delenv("ANTHROPIC_API_KEY")
    replaying = make_llm(cassette, "none", stream=stream)
    replayed = Agent(llm=replaying, tools=[get_weather]).run("Weather in SF and LA?")
    assert comparable(replayed) == comparable(recorded)
    stats = replaying.stats
    assert (stats.requests, stats.played, replaying.remaining) == (2, 2, 0)
    assert stats.fallbacks == 0


def test_rate_limit_is_the_runs_llm_error_with_the_apis_message(tmp_path):
    cassette = tmp_path / "limited.yaml"
    steps = [{"error": {"status": 429, "message": "Rate limited"}}, {"content": "never"}]
    with running_server(steps) as url:
        result = Agent(llm=make_llm(cassette, "once", root(url)), tools=[get_weather]).run("hi")
    expected = {"type": "http_error", "message": "Rate limited", "status": 429}
    assert (result.termination, result.final.error) == ("llm_error", expected)
    assert len(yaml.safe_load(cassette.read_text())["interactions"]) == 1
    replayed = Agent(llm=make_llm(cassette), tools=[get_weather]).run("hi")
    assert replayed.final.error == expected


def test_base_url_comes_from_anthropic_base_url_when_the_scenario_has_none(tmp_path, monkeypatch):
    with running_server([{"content": "from the environment"}]) as url:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", root(url))
        result = Agent(llm=make_llm(tmp_path / "env.yaml", "once", None)).run("hi")
    assert result.final.content == "from the environment"


def test_recording_without_anthropics_key_is_refused_before_any_request(tmp_path, monkeypatch):
    # No base_url: the SDK's default is Anthropic's public API, which takes no request
    # without ANTHROPIC_API_KEY. OPENAI_API_KEY is unset too, so a source that checked
    # another vendor's key would be refused as well (with that key's name), never sent.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cassette = tmp_path / "nokey.yaml"
    llm = make_llm(cassette, "once", None)
    result = Agent(llm=llm).run("hi")
    line = (
        "recording needs ANTHROPIC_API_KEY: it is not set, and api.anthropic.com refuses "
        "requests without a key; nothing was recorded (set the key, or base_url / "
        "ANTHROPIC_BASE_URL for another endpoint)"
    )
    assert result.termination == "llm_error"
    assert (result.final.error["type"], result.final.error["message"]) == (
        "recording_refused",
        line,
    )
    assert llm.refused == line
    llm.close()
    assert not cassette.exists()


def test_the_sdk_sources_are_siblings_on_one_base():
    # A source that inherited another would carry that SDK's cases (its errors, its
    # key's name in messages): each holds only its own SDK.
    from harness.providers._recorded import RecordedSource
    from harness.providers.gemini import GeminiLLM
    from harness.providers.openai import OpenAILLM

    sources = (OpenAILLM, AnthropicLLM, GeminiLLM)
    for source in sources:
        assert issubclass(source, RecordedSource), source
        assert [
            other for other in sources if other is not source and issubclass(source, other)
        ] == []


def test_model_is_required():
    with pytest.raises(HarnessError, match=r"provider anthropic needs llm\.model"):
        AnthropicLLM(LLMConfig(provider="anthropic"))


@pytest.mark.hooks("harness_register_llms")
def test_anthropic_is_a_built_in_llm_provider():
    # Registered by harness.providers.anthropic's harness_register_llms, like any plugin's.
    assert default_plugins().llm_factory("anthropic") is AnthropicLLM
    assert "anthropic" in default_plugins().registered["harness.providers.anthropic"].llms


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_our_anthropic_cassette_freezes_into_a_scenario_that_passes(
    tmp_path, monkeypatch, capsys, stream
):
    from harness.cli import main
    from harness.scenario import run_scenario

    cassette = tmp_path / "weather.yaml"
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    with running_server(WEATHER) as url:
        llm = make_llm(cassette, "once", root(url), stream=stream)
        Agent(llm=llm, tools=[get_weather]).run("Weather in SF and LA?")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    out = tmp_path / "frozen.scenario.yaml"
    # freeze runs what it writes offline and refuses a scenario that would not send the
    # recorded requests: a written file is its replay proof.
    assert main(["freeze", str(cassette), "-o", str(out)]) == 0
    assert SECRET not in out.read_text() + capsys.readouterr().err
    result = run_scenario(out)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert result.final.content == "Sunny in both."
    assert result.parallel_groups == [["get_weather", "get_weather"]]


def test_serve_refuses_a_last_reply_whose_thinking_came_back_changed():
    import anthropic

    steps = [
        {"reasoning": "Look it up first.", "tool_calls": [{"get_weather": {"city": "SF"}}]},
        {"content": "Sunny."},
    ]
    tools = [{"name": "get_weather", "input_schema": {"type": "object"}}]
    with running_server(steps) as url:
        client = anthropic.Anthropic(base_url=root(url), api_key="unused", max_retries=0)
        asked = {"model": "m", "max_tokens": 64, "tools": tools}
        turns: list = [{"role": "user", "content": "Weather?"}]
        first = client.messages.create(messages=turns, **asked)
        thinking, call = first.content[0], first.content[-1]
        assert (thinking.type, thinking.thinking, call.type) == (
            "thinking",
            "Look it up first.",
            "tool_use",
        )
        changed = {**thinking.model_dump(), "thinking": "Something else."}
        result = {"type": "tool_result", "tool_use_id": call.id, "content": "72F"}
        back = [
            *turns,
            {"role": "assistant", "content": [changed, call.model_dump()]},
            {"role": "user", "content": [result]},
        ]
        with pytest.raises(anthropic.BadRequestError, match=r"Invalid `signature` in `thinking`"):
            client.messages.create(messages=back, **asked)
        back[1] = {"role": "assistant", "content": first.content}
        assert client.messages.create(messages=back, **asked).content[0].text == "Sunny."


def test_serve_answers_the_sdks_errors_and_count_tokens_in_the_apis_form():
    import anthropic

    steps = [
        {"error": {"status": 529, "message": "Overloaded"}},
        {"error": {"status": 429, "message": "Slow down"}},
        {"content": "Fine."},
    ]
    with running_server(steps) as url:
        client = anthropic.Anthropic(base_url=root(url), api_key="unused", max_retries=0)
        asked = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
        # count_tokens picks no reply: the script is where it was.
        counted = client.messages.count_tokens(model="m", messages=asked["messages"])
        assert counted.input_tokens >= 1
        with pytest.raises(anthropic.InternalServerError) as overloaded:
            client.messages.create(**asked)
        assert overloaded.value.status_code == 529
        assert overloaded.value.body["error"] == {
            "type": "overloaded_error",
            "message": "Overloaded",
        }
        with pytest.raises(anthropic.RateLimitError) as limited:
            client.messages.create(**asked)
        assert limited.value.body["error"]["type"] == "rate_limit_error"
        with pytest.raises(anthropic.BadRequestError) as refused:
            # No max_tokens, which the API requires (sent as it is, past the SDK's types).
            client.post("/v1/messages", body={"model": "m", "messages": []}, cast_to=object)
        assert refused.value.body["error"]["type"] == "invalid_request_error"
        assert client.messages.create(**asked).content[0].text == "Fine."


def test_only_the_last_replys_thinking_is_checked_as_the_api_checks_it():
    import anthropic

    steps = [
        {"reasoning": "Paris first.", "tool_calls": [{"get_weather": {"city": "Paris"}}]},
        {"reasoning": "Now Rome.", "tool_calls": [{"get_weather": {"city": "Rome"}}]},
        {"content": "Both sunny."},
    ]
    tools = [{"name": "get_weather", "input_schema": {"type": "object"}}]
    with running_server(steps) as url:
        client = anthropic.Anthropic(base_url=root(url), api_key="unused", max_retries=0)
        asked = {"model": "m", "max_tokens": 64, "tools": tools}
        turns: list = [{"role": "user", "content": "Weather?"}]
        for _ in range(2):
            reply = client.messages.create(messages=turns, **asked)
            result = {"type": "tool_result", "tool_use_id": reply.content[-1].id, "content": "ok"}
            turns += [
                {"role": "assistant", "content": [b.model_dump() for b in reply.content]},
                {"role": "user", "content": [result]},
            ]
        first, last = turns[1]["content"][0], turns[3]["content"][0]
        assert (first["thinking"], last["thinking"]) == ("Paris first.", "Now Rome.")
        # An earlier reply's thinking is stripped by the API, not checked: a change passes.
        first["thinking"] = "Edited."
        assert client.messages.create(messages=turns, **asked).content[0].text == "Both sunny."
        # The last reply's must come back as it was signed.
        first["thinking"], last["thinking"] = "Paris first.", "Edited."
        with pytest.raises(anthropic.BadRequestError, match=r"messages\.3\.content\.0"):
            client.messages.create(messages=turns, **asked)


def test_a_streamed_message_says_its_output_tokens_at_the_end():
    import anthropic

    with running_server(WEATHER) as url:
        client = anthropic.Anthropic(base_url=root(url), api_key="unused", max_retries=0)
        tools = [{"name": "get_weather", "input_schema": {"type": "object"}}]
        asked = {"model": "m", "max_tokens": 64, "tools": tools}
        with client.messages.stream(
            messages=[{"role": "user", "content": "Weather?"}], **asked
        ) as stream:
            events = list(stream)
            final = stream.get_final_message()
    started = next(e for e in events if e.type == "message_start")
    # message_start counts none yet; message_delta gives the reply's output tokens.
    assert started.message.usage.output_tokens == 0
    assert (final.usage.input_tokens, final.usage.output_tokens) == (40, 12)
