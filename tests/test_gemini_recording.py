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
    {"tool_calls": [{"get_weather": {"city": "Paris"}}, {"get_weather": {"city": "Rome"}}]},
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
