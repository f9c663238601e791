"""The `openai` LLM source: the real SDK over HTTP to `harness serve`, recorded and replayed.

Recording goes through a real server on 127.0.0.1; replay happens with the server
stopped and the base URL pointing at a closed port, so a replay that touched the
network would fail.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness import Agent, tool
from harness._errors import HarnessError
from harness._plugins import default_plugins
from harness.llm._config import LLMConfig, LLMContext
from harness.providers.openai import OpenAILLM
from harness.serve import running_server

# Nothing listens here: a replay that tried the network would get a connection error.
OFFLINE = "http://127.0.0.1:9/v1"


@pytest.fixture(autouse=True)
def _no_openai_environment(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"72F and sunny in {city}"


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


WEATHER = [
    {
        "content": "Checking both cities.",
        "tool_calls": [{"get_weather": {"city": "SF"}}, {"get_weather": {"city": "LA"}}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 12},
    },
    {"content": "Sunny in both.", "usage": {"prompt_tokens": 80, "completion_tokens": 5}},
]


def make_llm(
    cassette: Path, mode: str = "none", base_url: str | None = OFFLINE, **config
) -> OpenAILLM:
    llm_config = LLMConfig(
        provider="openai", model="gpt-4o-mini", cassette=str(cassette), base_url=base_url, **config
    )
    context = LLMContext(scenario_id="tests/weather.scenario.yaml::weather", record_mode=mode)
    return OpenAILLM(llm_config.with_context(context))


def comparable(result) -> dict:
    return result.model_dump(exclude={"wall_time"})


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_record_then_replay_offline_gives_the_same_run(tmp_path, api, stream):
    cassette = tmp_path / "weather.yaml"
    with running_server(WEATHER) as url:
        recording = make_llm(cassette, "once", url, api=api, stream=stream)
        recorded = Agent(llm=recording, tools=[get_weather]).run("Weather in SF and LA?")
    assert recorded.termination == "completed"
    assert recorded.final.content == "Sunny in both."
    assert recorded.parallel_groups == [["get_weather", "get_weather"]]
    assert [c.id for c in recorded.tool_calls] == ["call_1_0", "call_1_1"]
    assert recorded.usage == {"prompt_tokens": 120, "completion_tokens": 17, "total_tokens": 137}
    assert cassette.is_file()

    replaying = make_llm(cassette, "none", api=api, stream=stream)
    replayed = Agent(llm=replaying, tools=[get_weather]).run("Weather in SF and LA?")
    assert comparable(replayed) == comparable(recorded)
    stats = replaying.stats
    assert (stats.requests, stats.played, replaying.remaining) == (2, 2, 0)
    # The key announced from the conversation equals the key of the bytes sent.
    assert stats.fallbacks == 0


def test_http_error_ends_the_run_with_its_status_and_message(tmp_path):
    cassette = tmp_path / "limited.yaml"
    steps = [{"error": {"status": 429, "message": "Rate limited"}}, {"content": "never"}]
    with running_server(steps) as url:
        result = Agent(llm=make_llm(cassette, "once", url), tools=[get_weather]).run("hi")
    expected = {"type": "http_error", "message": "Rate limited", "status": 429}
    assert (result.termination, result.final.error) == ("llm_error", expected)
    # max_retries=0 under a cassette: one request, the 429, is what was recorded.
    assert len(yaml.safe_load(cassette.read_text())["interactions"]) == 1
    replayed = Agent(llm=make_llm(cassette), tools=[get_weather]).run("hi")
    assert comparable(replayed) == comparable(result)


def test_timeout_ends_the_run_in_llm_error(tmp_path):
    cassette = tmp_path / "slow.yaml"
    with running_server([{"error": "timeout"}], max_delay=5) as url:
        llm = make_llm(cassette, "once", url, timeout=0.3)
        result = Agent(llm=llm, tools=[get_weather]).run("hi")
    assert result.termination == "llm_error"
    assert result.final.error == {
        "type": "timeout",
        "message": "Request timed out.",
        "status": None,
    }
    assert not cassette.exists()  # nothing answered, nothing recorded


def test_unreachable_endpoint_is_an_llm_error_live(tmp_path):
    config = LLMConfig(
        provider="openai", model="m", base_url=OFFLINE, cassette=str(tmp_path / "c.yaml")
    )
    llm = OpenAILLM(config.with_context(LLMContext(disable_recording=True)))
    result = Agent(llm=llm, tools=[get_weather]).run("hi")
    assert result.termination == "llm_error"
    assert result.final.error["type"] == "connection_error"
    assert result.final.error["message"].startswith("Connection error")
    # It says where it tried to connect: a wrong base_url is the usual cause.
    assert f"(tried {OFFLINE}/chat/completions)" in result.final.error["message"]
    assert not (tmp_path / "c.yaml").exists()


class Headers:
    """ASGI wrapper keeping the Accept-Encoding of every request that reached the server."""

    def __init__(self, app):
        self.app = app
        self.accept_encoding: list[str] = []

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["path"].endswith("/chat/completions"):
            headers = dict(scope["headers"])
            self.accept_encoding.append(headers.get(b"accept-encoding", b"").decode())
        await self.app(scope, receive, send)


def test_only_recording_restricts_accept_encoding_to_what_cassettes_can_decode(
    tmp_path, monkeypatch
):
    import openai

    from harness.cassettes._httpx import httpx_of
    from harness.llm._script import ScriptStep
    from harness.serve import create_app, running_app

    # As when zstandard is installed: the HTTP client then offers zstd, which vcrpy
    # cannot decode into a readable cassette.
    monkeypatch.setattr(httpx_of(openai)._client, "ACCEPT_ENCODING", "gzip, deflate, zstd")
    app = Headers(create_app([ScriptStep.model_validate({"content": "Hi."})]))
    with running_app(app) as url:
        recording = make_llm(tmp_path / "hi.yaml", "once", url)
        assert Agent(llm=recording).run("hi").final.content == "Hi."
        live = OpenAILLM(
            LLMConfig(provider="openai", model="m", base_url=url).with_context(
                LLMContext(disable_recording=True)
            )
        )
        assert Agent(llm=live).run("hi").final.content == "Hi."
    assert app.accept_encoding == ["gzip, deflate", "gzip, deflate, zstd"]


def test_responses_reasoning_items_are_kept_and_sent_back(tmp_path):
    # With include=reasoning.encrypted_content the server behaves like a reasoning
    # model: it refuses input whose earlier reasoning items were not sent back.
    cassette = tmp_path / "reasoning.yaml"
    steps = [
        {"tool_calls": [{"multiply": {"a": 1231, "b": 2331}}]},
        {"tool_calls": [{"multiply": {"a": 2, "b": 3}}]},
        {"content": "2869461 and 6"},
    ]
    options = {"include": ["reasoning.encrypted_content"], "store": False}
    with running_server(steps) as url:
        llm = make_llm(cassette, "once", url, api="responses", options=options)
        result = Agent(llm=llm, tools=[multiply]).run("Multiply")
    assert result.termination == "completed", result.final
    assert result.final.content == "2869461 and 6"
    replies = [m for m in result.conversation.messages if m.role == "assistant"]
    assert [len(m.reasoning) for m in replies] == [1, 1, 1]
    assert replies[0].reasoning[0]["type"] == "reasoning"
    assert replies[0].reasoning[0]["encrypted_content"]
    # The last request holds both earlier reasoning items, in place.
    last = yaml.safe_load(cassette.read_text())["interactions"][-1]["request"]["parsed_body"]
    kinds = [item.get("type", item.get("role")) for item in last["input"]]
    assert kinds == [
        "user",
        "reasoning",
        "function_call",
        "function_call_output",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    replayed = Agent(
        llm=make_llm(cassette, api="responses", options=options), tools=[multiply]
    ).run("Multiply")
    assert comparable(replayed) == comparable(result)


def test_tool_choice_is_sent_through(tmp_path):
    # At the iteration limit with on_max_iterations=final_answer the loop asks for a
    # last answer with tool_choice="none": the API must receive it.
    cassette = tmp_path / "limit.yaml"
    steps = [{"tool_calls": [{"get_weather": {"city": "SF"}}]}, {"content": "72F."}]
    with running_server(steps) as url:
        agent = Agent(
            llm=make_llm(cassette, "once", url),
            tools=[get_weather],
            max_iterations=2,
            on_max_iterations="final_answer",
        )
        result = agent.run("Weather?")
    assert (result.termination, result.final.content) == ("max_iterations", "72F.")
    bodies = [
        i["request"]["parsed_body"] for i in yaml.safe_load(cassette.read_text())["interactions"]
    ]
    assert ["tool_choice" in b for b in bodies] == [False, True]
    assert bodies[1]["tool_choice"] == "none"


def test_base_url_comes_from_openai_base_url_when_the_scenario_has_none(tmp_path, monkeypatch):
    cassette = tmp_path / "env.yaml"
    with running_server([{"content": "from the environment"}]) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        result = Agent(llm=make_llm(cassette, "once", base_url=None), tools=[]).run("hi")
    assert result.final.content == "from the environment"
    assert (
        yaml.safe_load(cassette.read_text())["interactions"][0]["request"]["uri"]
        == f"{url}/chat/completions"
    )


def test_replay_is_independent_of_the_endpoint(tmp_path):
    # Matching ignores scheme, host and port: a cassette recorded against one server
    # replays behind any base URL.
    cassette = tmp_path / "moved.yaml"
    with running_server(WEATHER) as url:
        Agent(llm=make_llm(cassette, "once", url), tools=[get_weather]).run("Weather?")
    result = Agent(
        llm=make_llm(cassette, base_url="https://elsewhere.invalid/v1"), tools=[get_weather]
    ).run("Weather?")
    assert result.final.content == "Sunny in both."


def test_model_is_required():
    with pytest.raises(HarnessError, match=r"needs llm\.model"):
        OpenAILLM(LLMConfig(provider="openai"))


@pytest.mark.hooks("harness_register_llms")
def test_openai_is_a_built_in_llm_provider():
    # Registered by harness.providers.openai's harness_register_llms, like any plugin's source.
    assert default_plugins().llm_factory("openai") is OpenAILLM
    assert "openai" in default_plugins().registered["harness.providers.openai"].llms


@pytest.mark.hooks("harness_agent_end")
def test_a_recording_made_from_python_is_saved_when_the_run_ends(tmp_path):
    # No aclose() call: the built-in plugin's harness_agent_end saves the cassette.
    cassette = tmp_path / "python.yaml"
    with running_server([{"content": "Saved."}]) as url:
        llm = make_llm(cassette, "once", url)
        Agent(llm=llm, tools=[]).run("hi")
        assert cassette.is_file()
        assert llm.session is None  # closed with the run
    assert len(yaml.safe_load(cassette.read_text())["interactions"]) == 1


SCENARIO = """\
name: weather
input: Weather in SF and LA?
tools:
  get_weather:
    parameters: {{city: str}}
    returns: "72F and sunny in {{{{ args.city }}}}"
llm:
  provider: openai
  model: gpt-4o-mini
  base_url: {url}
  stream: true
expect:
  termination: completed
  final: {{equals: Sunny in both.}}
  parallel_groups: [[get_weather, get_weather]]
  script_consumed: true
"""


def test_scenario_file_records_to_the_default_cassette_path_and_replays(tmp_path):
    from harness.scenario import run_scenario

    (tmp_path / "pyproject.toml").write_text('[tool.harness]\ncassette_dir = "recorded"\n')
    scenario = tmp_path / "scenarios" / "travel" / "weather.scenario.yaml"
    scenario.parent.mkdir(parents=True)
    with running_server(WEATHER) as url:
        scenario.write_text(SCENARIO.format(url=url))
        recorded = run_scenario(scenario, record_mode="once")
    assert recorded.status == "passed", recorded.expectations
    cassette = tmp_path / "recorded" / "travel" / "weather.yaml"
    assert cassette.is_file()
    # The server is gone: the scenario's base_url now points nowhere.
    replayed = run_scenario(scenario)
    assert replayed.status == "passed", replayed.final
    assert replayed.model_dump(exclude={"wall_time"}) == recorded.model_dump(exclude={"wall_time"})
