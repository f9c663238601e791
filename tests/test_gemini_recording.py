"""``provider: gemini`` (docs/recording.md#gemini): the own loop on the official
google-genai SDK, recorded into a vcrpy cassette through harness serve as the upstream,
then replayed offline with no key; and nothing secret in any file written on the way.
"""

from __future__ import annotations

import textwrap

import pytest
import yaml

from harness.scenario import run_scenario
from harness.serve import running_server

pytest.importorskip("google.genai")

KEY = "AIzaCanary7Qw3Zp9Xv2Rt8Ym4Kd6Hs1Jb5Nc0"
# Nowhere to be reached: a replay that tried the network would fail on it.
OFFLINE = "http://127.0.0.1:9"

SCRIPT = [
    {
        # A thinking model's reply: its first call carries the reasoning's signature.
        "reasoning": "Both cities at once.",
        "tool_calls": [{"get_weather": {"city": "Paris"}}, {"get_weather": {"city": "Rome"}}],
    },
    # The model echoes the key it was given: the cassette must not keep it.
    {
        "content": f"Paris 18C, Rome 24C (key {KEY})",
        "usage": {"prompt_tokens": 30, "completion_tokens": 9},
    },
]


def scenario(path, base_url: str, stream: bool = False) -> str:
    text = f"""
        name: gemini-weather
        input: What's the weather in Paris and Rome?
        llm:
          provider: gemini
          model: gemini-2.5-flash
          base_url: {base_url}
          stream: {str(stream).lower()}
          cassette: weather.yaml
        tools:
          get_weather:
            description: Current weather for a city.
            parameters: {{city: str}}
            returns: 18C
        expect:
          termination: completed
          tool_calls: {{sequence: [get_weather, get_weather]}}
    """
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize("stream", [False, True])
def test_recorded_through_harness_serve_then_replayed_offline_with_no_key(
    tmp_path, monkeypatch, stream
):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    file = tmp_path / "weather.scenario.yaml"
    with running_server(SCRIPT) as url:
        scenario(file, url.removesuffix("/v1"), stream)
        recorded = run_scenario(file, record_mode="once")
    assert recorded.status == "passed", [e for e in recorded.expectations if not e.ok]
    assert recorded.final.content.startswith("Paris 18C, Rome 24C")

    cassette = (tmp_path / "weather.yaml").read_text()
    assert KEY[8:20] not in cassette
    assert "<GEMINI_API_KEY>" in cassette
    interactions = yaml.safe_load(cassette)["interactions"]
    assert len(interactions) == 2
    request = interactions[0]["request"]
    assert request["uri"].endswith(
        ":streamGenerateContent?alt=sse"
        if stream
        else "/v1beta/models/gemini-2.5-flash:generateContent"
    )
    assert "x-goog-api-key" not in {k.lower() for k in request["headers"]}
    assert request["parsed_body"]["contents"][0] == {
        "parts": [{"text": "What's the weather in Paris and Rome?"}],
        "role": "user",
    }
    # The signature went back with the call it came on, as the API requires.
    model_turn = interactions[1]["request"]["parsed_body"]["contents"][1]
    assert ["thoughtSignature" in part for part in model_turn["parts"]] == [True, False]

    monkeypatch.delenv("GEMINI_API_KEY")
    scenario(file, OFFLINE, stream)
    replayed = run_scenario(file)
    assert replayed.status == "passed"
    data = [r.model_dump(exclude={"wall_time", "events"}) for r in (recorded, replayed)]
    assert [(c.name, c.arguments, c.result) for c in replayed.tool_calls] == [
        ("get_weather", {"city": "Paris"}, "18C"),
        ("get_weather", {"city": "Rome"}, "18C"),
    ]
    assert data[0]["tool_calls"] == data[1]["tool_calls"]
    assert replayed.usage == {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39}


def test_a_changed_request_is_an_explained_miss(tmp_path, monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    file = tmp_path / "weather.scenario.yaml"
    with running_server(SCRIPT) as url:
        scenario(file, url.removesuffix("/v1"))
        run_scenario(file, record_mode="once")
    file.write_text(file.read_text().replace("Paris and Rome", "Oslo"))
    result = run_scenario(file)

    assert result.termination == "llm_error"
    assert result.final.error.type == "cassette_miss"
    assert "Nearest recorded request: interaction 1" in result.final.error.message


TARGET_SCRIPT = [
    {"tool_calls": [{"get_weather": {"city": "Paris"}}]},
    {"content": "It is 18C and cloudy in Paris."},
]


def target_scenario(path, base_url: str) -> None:
    text = f"""
        name: gemini-target
        target: {{python: 'scenarios.external.agents.gemini_sdk:answer', timeout: 30}}
        input: What's the weather in Paris?
        llm: {{provider: gemini, base_url: '{base_url}', cassette: target.yaml}}
        expect:
          termination: completed
          tool_calls: {{sequence: [get_weather], exact: true}}
          final: {{equals: It is 18C and cloudy in Paris.}}
    """
    path.write_text(textwrap.dedent(text))


def test_a_gemini_target_is_recorded_through_the_proxy_and_replayed_with_no_key(
    tmp_path, monkeypatch
):
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1]))
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    file = tmp_path / "target.scenario.yaml"
    with running_server(TARGET_SCRIPT) as url:
        target_scenario(file, url.removesuffix("/v1"))
        recorded = run_scenario(file, record_mode="once")
    assert recorded.status == "passed", [e for e in recorded.expectations if not e.ok]
    cassette = (tmp_path / "target.yaml").read_text()
    assert KEY[8:20] not in cassette
    assert "x-goog-api-key" not in cassette.lower()
    assert len(yaml.safe_load(cassette)["interactions"]) == 2

    monkeypatch.delenv("GEMINI_API_KEY")
    target_scenario(file, OFFLINE)
    replayed = run_scenario(file)
    assert replayed.status == "passed", replayed.final
    assert [(c.name, c.result) for c in replayed.tool_calls] == [
        ("get_weather", "18C, cloudy in Paris")
    ]


@pytest.mark.parametrize("version", ["v1beta", "v1"])
def test_harness_serve_cassette_serves_a_gemini_recording_to_either_api_version(
    tmp_path, monkeypatch, version
):
    from google import genai
    from google.genai import types

    from harness.cassettes import CassetteSession
    from harness.external import CassetteApp
    from harness.serve import running_app

    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    file = tmp_path / "weather.scenario.yaml"
    with running_server(SCRIPT) as url:
        scenario(file, url.removesuffix("/v1"))
        run_scenario(file, record_mode="once")
    session = CassetteSession(tmp_path / "weather.yaml", record_mode="none")
    with running_app(CassetteApp(session, repeat=True)) as url:
        options = types.HttpOptions(base_url=url.removesuffix("/v1"), api_version=version)
        client = genai.Client(api_key="any", http_options=options)
        recorded = yaml.safe_load((tmp_path / "weather.yaml").read_text())
        body = recorded["interactions"][0]["request"]["parsed_body"]
        config = types.GenerateContentConfig.model_validate(
            {k: v for k, v in body.items() if k not in ("contents", "generationConfig")}
        )
        reply = client.models.generate_content(
            model="gemini-2.5-flash", contents=body["contents"], config=config
        )
        assert [call.name for call in reply.function_calls] == ["get_weather", "get_weather"]
        miss = types.Content(role="user", parts=[types.Part(text="something else")])
        with pytest.raises(genai.errors.ClientError) as raised:
            client.models.generate_content(model="gemini-2.5-flash", contents=[miss], config=config)
    assert raised.value.code == 400
    assert "cassette miss" in raised.value.message


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_gemini_recording_freezes_into_a_scenario_that_passes_its_replay_proof(
    tmp_path, monkeypatch, stream
):
    from harness.cli import main

    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    file = tmp_path / "weather.scenario.yaml"
    with running_server(SCRIPT) as url:
        scenario(file, url.removesuffix("/v1"), stream)
        assert run_scenario(file, record_mode="once").status == "passed"
    monkeypatch.delenv("GEMINI_API_KEY")

    frozen = tmp_path / "frozen.scenario.yaml"
    # --scenario: the cassette it recorded and its tool definitions.
    assert main(["freeze", "--scenario", str(file), "-o", str(frozen)]) == 0
    text = frozen.read_text()
    assert KEY[8:20] not in text
    data = yaml.safe_load(text)
    assert data["llm"]["script"][0]["tool_calls"] == [
        {"id": "call_1_0", "name": "get_weather", "arguments": {"city": "Paris"}},
        {"id": "call_1_1", "name": "get_weather", "arguments": {"city": "Rome"}},
    ]
    assert data["expect"]["final"] == {"equals": "Paris 18C, Rome 24C (key <GEMINI_API_KEY>)"}
    replayed = run_scenario(frozen)
    assert replayed.status == "passed", [e for e in replayed.expectations if not e.ok]
    assert [(c.name, c.arguments) for c in replayed.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
    ]


def test_a_gemini_target_recording_freezes_and_its_frozen_scenario_passes(tmp_path, monkeypatch):
    from pathlib import Path

    from harness.cli import main

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1]))
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    file = tmp_path / "target.scenario.yaml"
    with running_server(TARGET_SCRIPT) as url:
        target_scenario(file, url.removesuffix("/v1"))
        assert run_scenario(file, record_mode="once").status == "passed"
    monkeypatch.delenv("GEMINI_API_KEY")

    frozen = tmp_path / "frozen.scenario.yaml"
    assert main(["freeze", "--scenario", str(file), "-o", str(frozen)]) == 0
    data = yaml.safe_load(frozen.read_text())
    # A target's frozen scenario keeps the target, served the script instead of the cassette.
    assert data["target"]["python"] == "scenarios.external.agents.gemini_sdk:answer"
    replayed = run_scenario(frozen)
    assert replayed.status == "passed", [e for e in replayed.expectations if not e.ok]
    assert replayed.final.content == "It is 18C and cloudy in Paris."


def test_an_error_answer_is_recorded_and_replayed_as_the_api_gave_it(tmp_path, monkeypatch):
    # The body of an error is read to tell a refused key from another error; the cassette
    # still gets the answer as it came (reading it once must not leave vcrpy waiting).
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    file = tmp_path / "weather.scenario.yaml"
    steps = [{"error": {"status": 400, "message": "Request contains an invalid argument."}}]
    with running_server(steps) as url:
        scenario(file, url.removesuffix("/v1"))
        recorded = run_scenario(file, record_mode="once")
    assert recorded.termination == "llm_error"
    assert recorded.final.error["status"] == 400
    monkeypatch.delenv("GEMINI_API_KEY")
    scenario(file, OFFLINE)
    replayed = run_scenario(file)
    assert replayed.final.error == recorded.final.error


def refusing_app():
    """Google's answer to a key it does not know, gzipped as the API sends it."""
    import gzip
    import json

    body = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "API_KEY_INVALID",
                    "domain": "googleapis.com",
                }
            ],
        }
    }

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        headers = [(b"content-type", b"application/json"), (b"content-encoding", b"gzip")]
        await send({"type": "http.response.start", "status": 400, "headers": headers})
        await send({"type": "http.response.body", "body": gzip.compress(json.dumps(body).encode())})

    return app


def test_a_key_the_api_refuses_is_never_recorded(tmp_path, monkeypatch):
    from harness.serve import running_app

    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    file = tmp_path / "weather.scenario.yaml"
    from harness._errors import RecordingRefused

    with running_app(refusing_app()) as url:
        scenario(file, url.removesuffix("/v1"))
        with pytest.raises(RecordingRefused) as refused:
            run_scenario(file, record_mode="once")
    message = str(refused.value)
    assert "the API refused the key (HTTP 400: API key not valid." in message
    assert KEY[8:20] not in message
    assert not (tmp_path / "weather.yaml").exists()


THINKING_AGENT = '''
from google import genai
from google.genai import types

CONFIG = types.GenerateContentConfig(
    tools=[types.Tool(function_declarations=[types.FunctionDeclaration(
        name="get_weather",
        parameters_json_schema={"type": "object", "properties": {"city": {"type": "string"}}},
    )])],
    automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    thinking_config=types.ThinkingConfig(include_thoughts=True),
)


def answer(question):
    """A streamed loop that asks for the model's thoughts and sends its turns back whole."""
    client = genai.Client()
    contents = [types.Content(role="user", parts=[types.Part(text=question)])]
    for _ in range(5):
        parts = []
        for chunk in client.models.generate_content_stream(
                model="gemini-2.5-flash", contents=contents, config=CONFIG):
            parts += chunk.parts or []
        contents.append(types.Content(role="model", parts=parts))
        calls = [part.function_call for part in parts if part.function_call]
        if not calls:
            return "".join(part.text for part in parts if part.text and not part.thought)
        results = [types.FunctionResponse(id=c.id, name=c.name, response={"result": "18C"})
                   for c in calls]
        contents.append(types.Content(
            role="user", parts=[types.Part(function_response=r) for r in results]))
'''


def test_a_gemini_targets_thoughts_freeze_into_the_steps_reasoning(tmp_path, monkeypatch):
    from harness.cli import main

    (tmp_path / "gemini_thinking_target.py").write_text(THINKING_AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    file = tmp_path / "target.scenario.yaml"
    script = [{"reasoning": "Paris first.", **TARGET_SCRIPT[0]}, TARGET_SCRIPT[1]]
    with running_server(script) as url:
        target_scenario(file, url.removesuffix("/v1"))
        file.write_text(
            file.read_text().replace(
                "scenarios.external.agents.gemini_sdk", "gemini_thinking_target"
            )
        )
        assert run_scenario(file, record_mode="once").status == "passed"
    monkeypatch.delenv("GEMINI_API_KEY")

    frozen = tmp_path / "frozen.scenario.yaml"
    assert main(["freeze", "--scenario", str(file), "-o", str(frozen)]) == 0
    steps = yaml.safe_load(frozen.read_text())["llm"]["script"]
    assert [step.get("reasoning") for step in steps] == ["Paris first.", None]
    replayed = run_scenario(frozen)
    assert replayed.status == "passed", [e for e in replayed.expectations if not e.ok]


def test_the_sdks_base_url_variable_is_where_a_scenario_without_base_url_records(
    tmp_path, monkeypatch
):
    # No llm.base_url: GOOGLE_GEMINI_BASE_URL is read as google-genai reads it. No key is
    # set, so a request meant for the public API is refused before anything is sent.
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    file = tmp_path / "weather.scenario.yaml"
    with running_server(SCRIPT) as url:
        root = url.removesuffix("/v1")
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", root)
        scenario(file, root)
        file.write_text("\n".join(x for x in file.read_text().splitlines() if "base_url" not in x))
        recorded = run_scenario(file, record_mode="once")
    assert recorded.status == "passed", recorded.final
    interactions = yaml.safe_load((tmp_path / "weather.yaml").read_text())["interactions"]
    assert [i["request"]["uri"].startswith(root + "/v1beta/") for i in interactions] == [True] * 2
