"""Cassettes: record modes, matching, misses, secrets, the file format, paths.

Recording goes through `harness serve` on 127.0.0.1 with the real openai SDK; a
counting wrapper around the server's app tells whether a run reached the network.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import pytest
import yaml

from harness import Agent, tool
from harness._errors import HarnessError
from harness.cassettes import load_cassette_file, resolve_cassette_path
from harness.cassettes._format import dump_cassette, load_cassette_text
from harness.llm._config import LLMConfig, LLMContext
from harness.llm._script import ScriptStep
from harness.providers.openai import OpenAILLM
from harness.serve import create_app, running_app

OFFLINE = "http://127.0.0.1:9/v1"
FOREIGN = Path(__file__).parent / "fixtures" / "foreign-cassettes"
SCENARIO_ID = "scenarios/weather.scenario.yaml::weather"


@pytest.fixture(autouse=True)
def _no_openai_environment(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


class Counting:
    """ASGI wrapper counting the HTTP requests that reached the server."""

    def __init__(self, app):
        self.app = app
        self.count = 0

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            self.count += 1
        await self.app(scope, receive, send)


def server(steps):
    app = Counting(create_app([ScriptStep.model_validate(s) for s in steps]))
    return app, running_app(app)


def weather_tool(temperature: str):
    @tool
    def get_weather(city: str) -> str:
        """Current weather for a city."""
        return f"{temperature} in {city}"

    return get_weather


STEPS = [
    {"tool_calls": [{"get_weather": {"city": "SF"}}]},
    {"content": "It is warm."},
]


def run(cassette: Path, mode: str, url: str = OFFLINE, temperature: str = "72F", **config):
    options = config.pop("context", {})
    system = config.pop("system", None)
    llm_config = LLMConfig(
        provider="openai", model="gpt-4o-mini", cassette=str(cassette), base_url=url, **config
    )
    context = LLMContext(scenario_id=SCENARIO_ID, record_mode=mode, **options)
    llm = OpenAILLM(llm_config.with_context(context))
    return Agent(llm=llm, tools=[weather_tool(temperature)], system=system).run(
        "Weather in SF?"
    ), llm


def interactions(cassette: Path) -> list[dict]:
    return yaml.safe_load(cassette.read_text())["interactions"]


def tool_outputs(cassette: Path) -> list[list[str]]:
    return [
        [m["content"] for m in i["request"]["parsed_body"]["messages"] if m["role"] == "tool"]
        for i in interactions(cassette)
    ]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def recorded(tmp_path) -> Path:
    cassette = tmp_path / "weather.yaml"
    app, serving = server(STEPS)
    with serving as url:
        result, _ = run(cassette, "once", url)
    assert result.final.content == "It is warm."
    assert app.count == 2
    return cassette


# -- record modes --------------------------------------------------------------------------------


def test_mode_none_never_records_and_never_reaches_the_network(tmp_path):
    cassette = tmp_path / "missing.yaml"
    app, serving = server(STEPS)
    with serving as url:
        result, _ = run(cassette, "none", url)
    assert result.termination == "llm_error"
    assert result.final.error["type"] == "cassette_miss"
    assert "does not exist" in result.final.error["message"]
    assert app.count == 0
    assert not cassette.exists()


def test_mode_once_replays_an_existing_cassette_and_a_miss_is_an_error(recorded):
    before = digest(recorded)
    app, serving = server(STEPS)
    with serving as url:
        replayed, _ = run(recorded, "once", url)
        changed, _ = run(recorded, "once", url, temperature="65F")
    assert replayed.final.content == "It is warm."
    assert changed.termination == "llm_error"
    assert changed.final.error["type"] == "cassette_miss"
    assert app.count == 0  # the server was up, and nothing reached it
    assert digest(recorded) == before


def test_mode_new_episodes_records_only_what_is_missing(recorded):
    app, serving = server(STEPS)
    with serving as url:
        result, _ = run(recorded, "new_episodes", url, temperature="65F")
    assert result.final.content == "It is warm."
    assert app.count == 1  # the first request replayed, the changed second one recorded
    assert tool_outputs(recorded) == [[], ["72F in SF"], ["65F in SF"]]
    # Both runs now replay offline.
    assert run(recorded, "none")[0].final.content == "It is warm."
    assert run(recorded, "none", temperature="65F")[0].final.content == "It is warm."


def test_mode_all_records_every_request_and_keeps_the_others(recorded):
    app, serving = server([STEPS[0], {"content": "Now it is cold."}])
    with serving as url:
        result, _ = run(recorded, "all", url, temperature="65F")
    assert result.final.content == "Now it is cold."  # live, though request 1 was recorded
    assert app.count == 2
    # Request 1 re-recorded in place of the old one; the old request 2 is kept.
    assert tool_outputs(recorded) == [["72F in SF"], [], ["65F in SF"]]


def test_mode_rewrite_starts_from_an_empty_cassette(recorded):
    app, serving = server([STEPS[0], {"content": "Now it is cold."}])
    with serving as url:
        result, _ = run(recorded, "rewrite", url, temperature="65F")
    assert result.final.content == "Now it is cold."
    assert app.count == 2
    assert tool_outputs(recorded) == [[], ["65F in SF"]]


@pytest.mark.parametrize("exists", [False, True])
def test_disable_recording_runs_live_and_writes_nothing(tmp_path, recorded, exists):
    cassette = recorded if exists else tmp_path / "absent.yaml"
    before = digest(cassette) if exists else None
    app, serving = server([STEPS[0], {"content": "Live answer."}])
    with serving as url:
        result, llm = run(cassette, "none", url, context={"disable_recording": True})
    assert result.final.content == "Live answer."
    assert app.count == 2
    assert llm.remaining is None
    if exists:
        assert digest(cassette) == before
    else:
        assert not cassette.exists()


# -- misses and matching -----------------------------------------------------------------------


def test_a_changed_tool_output_is_a_miss_with_a_diff(recorded):
    result, _ = run(recorded, "none", temperature="65F")
    assert result.termination == "llm_error"
    error = result.final.error
    assert (error["type"], error["status"]) == ("cassette_miss", None)
    message = error["message"]
    assert "weather.yaml" in message
    assert SCENARIO_ID in message
    assert "request 2 of the run" in message
    assert "Nearest recorded request: interaction 2" in message
    assert '-      "content": "72F in SF",' in message
    assert '+      "content": "65F in SF",' in message
    assert "--record-mode new_episodes" in message


def test_sequential_matching_ignores_bodies(recorded):
    result, _ = run(recorded, "none", temperature="65F", match="sequential")
    assert (result.termination, result.final.content) == ("completed", "It is warm.")


def test_a_request_that_differs_before_its_last_message_is_a_miss(tmp_path):
    # The key covers every item of the conversation (match: body compares the whole
    # body), not only the newest: another system prompt before the same user message is
    # another request.
    cassette = tmp_path / "weather.yaml"
    app, serving = server(STEPS)
    with serving as url:
        recorded, _ = run(cassette, "once", url, system="Answer briefly.")
    assert (recorded.final.content, app.count) == ("It is warm.", 2)
    assert run(cassette, "none", system="Answer briefly.")[0].final.content == "It is warm."

    result, _ = run(cassette, "none", system="Answer at length.")
    assert result.termination == "llm_error"
    assert result.final.error["type"] == "cassette_miss"
    assert "request 1 of the run" in result.final.error["message"]


def test_match_ignore_drops_fields_that_vary_between_runs(tmp_path):
    cassette = tmp_path / "dated.yaml"
    _, serving = server(STEPS)
    with serving as url:
        run(cassette, "once", url, system="Today is 2025-01-01.", options={"temperature": 0.1})
    ignore = ["messages.0.content", "temperature"]
    same, _ = run(
        cassette,
        "none",
        system="Today is 2026-06-30.",
        options={"temperature": 0.9},
        match_ignore=ignore,
    )
    assert same.final.content == "It is warm."
    strict, _ = run(cassette, "none", system="Today is 2026-06-30.", options={"temperature": 0.9})
    assert strict.final.error["type"] == "cassette_miss"
    assert '+  "temperature": 0.9' in strict.final.error["message"]


def test_match_ignore_drops_a_whole_conversation_item(tmp_path):
    # `messages.0` ignores the first message whole: another system prompt is still a hit.
    cassette = tmp_path / "dated.yaml"
    _, serving = server(STEPS)
    with serving as url:
        run(cassette, "once", url, system="Today is 2025-01-01.")
    same, _ = run(cassette, "none", system="Today is 2026-06-30.", match_ignore=["messages.0"])
    assert same.final.content == "It is warm."


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_volatile_fields_are_never_compared(tmp_path, api):
    # Every field the docs name as never compared, different on replay: still a hit.
    cassette = tmp_path / "user.yaml"
    recorded = {
        "user": "alice",
        "metadata": {"trace": "1"},
        "prompt_cache_key": "k1",
        "safety_identifier": "s1",
    }
    replayed = {
        "user": "bob",
        "metadata": {"trace": "2"},
        "prompt_cache_key": "k2",
        "safety_identifier": "s2",
    }
    _, serving = server(STEPS)
    with serving as url:
        run(cassette, "once", url, api=api, options=recorded)
    assert interactions(cassette)[0]["request"]["parsed_body"]["user"] == "alice"
    result, _ = run(cassette, "none", api=api, options=replayed)
    assert result.final.content == "It is warm."
    # A field that is compared still misses.
    missed, _ = run(cassette, "none", api=api, options={**replayed, "temperature": 0.5})
    assert missed.final.error["type"] == "cassette_miss"


def test_each_run_replays_the_cassette_from_its_start(recorded):
    # The session (and its play counts) ends with the run: running the same Agent
    # again replays the cassette again instead of finding it used up.
    llm_config = LLMConfig(
        provider="openai", model="gpt-4o-mini", cassette=str(recorded), base_url=OFFLINE
    )
    llm = OpenAILLM(llm_config.with_context(LLMContext(record_mode="none")))
    agent = Agent(llm=llm, tools=[weather_tool("72F")])
    assert agent.run("Weather in SF?").final.content == "It is warm."
    assert agent.run("Weather in SF?").final.content == "It is warm."


# -- secrets ---------------------------------------------------------------------------------

KEY = "sk-fake-secret-KEY-0123456789"
ORG = "org-fake-secret-ORG-4567"
PROJECT = "proj_fake-secret-PROJECT-89"
COOKIE = "cookie-secret-session-4242"


class SetCookie:
    """ASGI wrapper adding a session cookie to every response, as API gateways do."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        async def send_with_cookie(message):
            if message["type"] == "http.response.start":
                cookie = (b"set-cookie", f"__cf_bm={COOKIE}; HttpOnly; Secure".encode())
                message = {**message, "headers": [*message.get("headers", []), cookie]}
            await send(message)

        await self.app(scope, receive, send_with_cookie)


def test_no_secret_reaches_any_written_file(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_ORG_ID", ORG)
    monkeypatch.setenv("OPENAI_PROJECT_ID", PROJECT)
    cassette = tmp_path / "secret" / "run.yaml"
    # The model echoes the key and the project, as error messages sometimes do.
    steps = [STEPS[0], {"content": f"Your key {KEY} works for {PROJECT}."}]
    app = SetCookie(create_app([ScriptStep.model_validate(s) for s in steps]))
    with running_app(app) as url:
        result, _ = run(cassette, "once", url, stream=True)
    assert result.final.content == f"Your key {KEY} works for {PROJECT}."

    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written == [cassette]
    text = cassette.read_text()
    for secret in (KEY, ORG, PROJECT, COOKIE):
        assert secret not in text
    headers = {h.lower() for i in interactions(cassette) for h in i["request"]["headers"]}
    assert not headers & {"authorization", "openai-organization", "openai-project", "cookie"}
    assert "<OPENAI_API_KEY>" in text and "<OPENAI_PROJECT_ID>" in text

    # With the same environment the masked values come back: the replay is exact.
    replayed, _ = run(cassette, "none", stream=True)
    assert replayed.model_dump(exclude={"wall_time"}) == result.model_dump(exclude={"wall_time"})
    # A miss report shows the bodies: secrets are masked there too.
    changed, _ = run(cassette, "none", temperature=f"{KEY}F", stream=True)
    assert changed.final.error["type"] == "cassette_miss"
    assert KEY not in changed.final.error["message"]
    assert "<OPENAI_API_KEY>F in SF" in changed.final.error["message"]


def test_a_key_too_short_to_be_a_secret_is_not_masked_and_the_cassette_replays_without_it(
    tmp_path, monkeypatch
):
    # OPENAI_API_KEY=x is what people set for a local server that takes any key.
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    cassette = tmp_path / "local.yaml"
    steps = [STEPS[0], {"content": "Sixty-two degrees, an index of 0.x"}]
    _, serving = server(steps)
    with serving as url:
        recorded, _ = run(cassette, "once", url, stream=True)
    assert recorded.final.content == "Sixty-two degrees, an index of 0.x"
    text = cassette.read_text()
    assert "<OPENAI_API_KEY>" not in text
    assert "x-stainless-lang" in text and "0.x" in text
    headers = {h.lower() for i in interactions(cassette) for h in i["request"]["headers"]}
    assert "authorization" not in headers  # the header goes whatever it holds

    # In CI, without the variable: the same run.
    monkeypatch.delenv("OPENAI_API_KEY")
    replayed, _ = run(cassette, "none", stream=True)
    assert replayed.model_dump(exclude={"wall_time"}) == recorded.model_dump(exclude={"wall_time"})


def test_secret_headers_and_values_are_scrubbed_everywhere(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_ORG_ID", ORG)
    data = {
        "version": 1,
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": f"https://api.example.com/v1/chat/completions?api-key={KEY}",
                    "body": f'{{"messages": [{{"role": "user", "content": "key {KEY}"}}]}}',
                    "headers": {
                        "Authorization": [f"Bearer {KEY}"],
                        "api-key": [KEY],
                        "X-Api-Key": [KEY],
                        "OpenAI-Organization": [ORG],
                        "OpenAI-Project": ["proj_1"],
                        "Cookie": [f"session={COOKIE}"],
                        "User-Agent": [f"agent of {ORG}"],
                        "X-Trace": [f"{ORG}/trace"],
                    },
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {
                        "Set-Cookie": [f"a={COOKIE}"],
                        "openai-organization": [ORG],
                        "openai-project": ["proj_1"],
                        "content-type": ["application/json"],
                    },
                    "body": {"string": f'{{"echo": "{KEY}"}}'.encode()},
                },
            }
        ],
    }
    text = dump_cassette(data)
    for secret in (KEY, ORG, COOKIE, "proj_1"):
        assert secret not in text
    (interaction,) = yaml.safe_load(text)["interactions"]
    # Only known headers are kept (a custom one may carry anything), their values masked.
    assert set(interaction["request"]["headers"]) == {"User-Agent"}
    assert interaction["request"]["headers"]["User-Agent"] == ["agent of <OPENAI_ORG_ID>"]
    assert set(interaction["response"]["headers"]) == {"content-type"}
    assert interaction["response"]["parsed_body"] == {"echo": "<OPENAI_API_KEY>"}


@pytest.mark.parametrize(
    "header",
    ["Authorization", "api-key", "X-Api-Key", "x-api-key", "OpenAI-Organization",
     "OpenAI-Project", "Cookie"],
)  # fmt: skip
def test_each_secret_request_header_is_dropped_whatever_it_holds(header, monkeypatch):
    # A value no environment variable holds (an Azure or proxy key, say): only the
    # header's name can keep it out of the cassette.
    for name in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    value = "unrelated-proxy-secret-0123456789"
    data = {
        "version": 1,
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": "https://proxy.example.com/v1/chat/completions",
                    "body": '{"messages": []}',
                    "headers": {header: [value], "Accept": ["application/json"]},
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"content-type": ["application/json"]},
                    "body": {"string": b'{"ok": true}'},
                },
            }
        ],
    }
    text = dump_cassette(data)
    assert value not in text
    (interaction,) = yaml.safe_load(text)["interactions"]
    assert set(interaction["request"]["headers"]) == {"Accept"}


# -- the file --------------------------------------------------------------------------------


def test_cassettes_are_readable_yaml_with_normal_permissions(tmp_path):
    cassette = tmp_path / "stream.yaml"
    _, serving = server(STEPS)
    with serving as url:
        run(cassette, "once", url, stream=True)
    plain = tmp_path / "plain.yaml"
    _, serving = server(STEPS)
    with serving as url:
        run(plain, "once", url)
    for path in (cassette, plain):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "plain.yaml",
        "stream.yaml",
    ]  # no temp files

    streamed = interactions(cassette)
    request = streamed[0]["request"]
    assert "body" not in request
    assert request["parsed_body"]["messages"] == [{"role": "user", "content": "Weather in SF?"}]
    assert request["parsed_body"]["stream"] is True
    body = streamed[0]["response"]["body"]["string"]
    assert body.startswith("data: {") and body.rstrip().endswith("data: [DONE]")
    # Server-Sent Events as a literal block, one event per line, readable in a diff.
    assert "    body:\n      string: |" in cassette.read_text()

    answer = interactions(plain)[1]["response"]
    assert answer["parsed_body"]["choices"][0]["message"]["content"] == "It is warm."
    assert "content-length" not in {h.lower() for h in answer["headers"]}


def test_vanilla_vcrpy_cassettes_load_with_gzip_bodies_decompressed():
    loaded = load_cassette_file(FOREIGN / "llm-test_tools-test_tool_use_chain_of_two_calls.yaml")
    assert len(loaded) == 3
    first = loaded[0]
    assert first.request["body"].startswith('{"messages":')
    response = first.response
    assert b'"lookup_population"' in response["body"]["string"]
    assert "content-encoding" not in {h.lower() for h in response["headers"]}


def test_loading_and_writing_again_is_stable():
    text = (FOREIGN / "llm-test_tools-test_tool_use_chain_of_two_calls.yaml").read_text()
    once = dump_cassette(_as_vcr_dict(load_cassette_text(text)))
    twice = dump_cassette(_as_vcr_dict(load_cassette_text(once)))
    assert once == twice
    assert "!!binary" not in once
    assert "parsed_body" in once


def _as_vcr_dict(loaded) -> dict:
    return {
        "version": 1,
        "interactions": [{"request": i.request, "response": i.response} for i in loaded],
    }


MALFORMED = {
    "syntax": ("interactions: [\n", ":2: not valid YAML: did not find expected node content"),
    "uri-a-number": (
        "version: 1\ninteractions:\n- request: {method: POST, uri: 5}\n"
        "  response: {status: 200, body: 7}\n",
        ":3: interaction 1: request.uri: expected a string, got int 5",
    ),
    "status-a-number": (
        "interactions:\n- request: {method: POST, uri: 'http://h/v1/chat/completions'}\n"
        "  response: {status: 200, body: {string: '{}'}}\n",
        ":3: interaction 1: response.status: expected {code: N, message: ...}, got int 200",
    ),
    "body-a-string": (
        "interactions:\n- request: {method: POST, uri: 'http://h/v1/chat/completions'}\n"
        "  response: {status: {code: 200}, body: 'hi'}\n",
        ":3: interaction 1: response.body: expected {string: ...}",
    ),
    "headers-a-list": (
        "interactions:\n- request: {method: POST, uri: /v1/chat/completions, headers: [a]}\n"
        "  response: {status: {code: 200}, body: {string: '{}'}}\n",
        ":2: interaction 1: request.headers: expected a mapping",
    ),
    "request-a-string": (
        "interactions:\n- request: POST /v1\n  response: {status: {code: 200}}\n",
        ":2: interaction 1: request: expected a mapping",
    ),
    "no-method": (
        "interactions:\n- request: {uri: /v1/chat/completions}\n"
        "  response: {status: {code: 200}}\n",
        ":2: interaction 1: request.method: missing",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_cassette_is_an_llm_error_naming_file_line_and_field(tmp_path, case):
    text, message = MALFORMED[case]
    cassette = tmp_path / "broken.yaml"
    cassette.write_text(text)
    app, serving = server(STEPS)
    with serving as url:
        result, _ = run(cassette, "none", url)
    assert app.count == 0
    assert result.termination == "llm_error"
    assert result.final.error["type"] == "cassette_error"
    error = result.final.error["message"]
    assert error.startswith(f"{cassette}{message}"), error
    assert "\n" not in error


def test_an_empty_cassette_is_reported_as_empty_and_recorded_like_a_missing_one(tmp_path):
    cassette = tmp_path / "empty.yaml"
    cassette.write_text("")
    result, _ = run(cassette, "none")
    assert result.final.error["type"] == "cassette_miss"
    message = result.final.error["message"]
    assert "The cassette file is empty. Record it with --record-mode once" in message
    _, serving = server(STEPS)
    with serving as url:
        recorded, _ = run(cassette, "once", url)
    assert recorded.final.content == "It is warm."
    assert len(interactions(cassette)) == 2


# -- paths -----------------------------------------------------------------------------------


def config(cassette=None, scenario=None, root=None) -> LLMConfig:
    base = LLMConfig(provider="openai", model="m", cassette=cassette)
    return base.with_context(LLMContext(scenario_file=scenario, project_root=root or Path.cwd()))


def test_a_relative_cassette_resolves_against_the_scenario_folder(tmp_path):
    scenario = tmp_path / "scenarios" / "a.scenario.yaml"
    assert (
        resolve_cassette_path(config("rec/a.yaml", scenario, tmp_path))
        == tmp_path / "scenarios" / "rec" / "a.yaml"
    )
    absolute = tmp_path / "elsewhere.yaml"
    assert resolve_cassette_path(config(str(absolute), scenario, tmp_path)) == absolute


def test_the_default_cassette_mirrors_the_scenario_path(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    under = tmp_path / "scenarios" / "shop" / "refund.scenario.yaml"
    assert (
        resolve_cassette_path(config(None, under, tmp_path))
        == tmp_path / "cassettes" / "shop" / "refund.yaml"
    )
    # Outside scenarios/: the path relative to the project root.
    other = tmp_path / "suites" / "smoke.scenario.yaml"
    assert (
        resolve_cassette_path(config(None, other, tmp_path))
        == tmp_path / "cassettes" / "suites" / "smoke.yaml"
    )


def test_cassette_dir_comes_from_tool_harness(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.harness]\ncassette_dir = "tapes"\n')
    scenario = tmp_path / "scenarios" / "a.scenario.yaml"
    assert resolve_cassette_path(config(None, scenario, tmp_path)) == tmp_path / "tapes" / "a.yaml"


def test_without_a_scenario_file_a_cassette_must_be_named():
    with pytest.raises(HarnessError, match="needs a cassette"):
        resolve_cassette_path(config())


def test_a_conversations_key_reuses_its_chain_only_while_the_history_is_the_same():
    # The key of a growing conversation digests its new items only while the list extends
    # the one seen last (its first and last known items the same objects): a list that
    # shares one end but not the other is another history, keyed from scratch.
    from harness.cassettes._matching import BodyKeyer

    keyer = BodyKeyer()
    system, other_system = {"role": "system", "content": "s"}, {"role": "system", "content": "t"}
    asked, other = {"role": "user", "content": "a"}, {"role": "user", "content": "b"}
    # (A conversation makes each item once: two lists share an item only where one
    # extends the other; each end is shared here as a list that is no extension could.)
    reply, reply_again = (
        {"role": "assistant", "content": "x"},
        {"role": "assistant", "content": "x"},
    )
    bodies = [
        [system, asked],
        [system, asked, reply],  # extends it: digested from where it ended
        [system, other, reply_again],  # the same first item, another last
        [other_system, other, reply_again],  # the same last item, another first
        [other_system, other],  # shorter: a history cut back
        [system, asked],
    ]
    chains: dict = {}
    for messages in bodies:
        body = {"model": "m", "messages": messages}
        assert keyer.incremental_key(body, chains) == keyer.key(body), messages


def test_a_scenario_run_with_disable_recording_goes_live_and_writes_no_cassette(tmp_path):
    # --disable-recording reaches the scenario's source through its run (ScenarioRun): the
    # cassette the scenario names is neither read nor written.
    from harness.scenario import run_scenario

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'live'\n")
    app, serving = server([STEPS[0], {"content": "Live answer."}])
    with serving as url:
        (tmp_path / "live.scenario.yaml").write_text(
            "name: live\ninput: What's the weather in SF?\n"
            "tools:\n  get_weather: {parameters: {city: str}, returns: 72F}\n"
            f'llm: {{provider: openai, model: gpt-4o-mini, base_url: "{url}", cassette: c.yaml}}\n'
        )
        result = run_scenario(tmp_path / "live.scenario.yaml", disable_recording=True)
    assert result.status == "passed", result.final
    assert result.final.content == "Live answer."
    assert app.count == 2
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [
        "live.scenario.yaml",
        "pyproject.toml",
    ]
