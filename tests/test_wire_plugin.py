"""A model API added by a plugin (docs/plugins.md#a-model-api-from-a-plugin): the made-up
Acme Complete wire of tests/wire_plugin_example.py, with no change to harness's own
modules, is served to an agent written on httpx (tests/acme_agent.py), observed,
recorded through ``harness serve`` as the upstream, replayed offline, frozen; its key
never reaches the cassette.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import httpx
import pytest
import yaml

from harness._plugins import PluginError, Plugins, discover
from harness.scenario import run_scenario
from harness.serve import running_server

TESTS = Path(__file__).resolve().parent
KEY = "acme-live-Qz7Wp3Xv9Rt2Ym8Kd4Hs6Jb1"
# Nowhere to be reached: a replay that tried the network would fail on it.
OFFLINE = "http://127.0.0.1:9"

SCRIPT = [
    {"tool_calls": [{"get_weather": {"city": "Paris"}}, {"get_weather": {"city": "Atlantis"}}]},
    {
        # The model echoes the key it was sent: the cassette must not keep it.
        "content": f"Paris: 18C, cloudy. Atlantis: unknown. (key {KEY})",
        "usage": {"prompt_tokens": 40, "completion_tokens": 12},
    },
]


@pytest.fixture
def project(tmp_path, monkeypatch, fresh_plugins):
    """A project whose pyproject.toml names the Acme plugin; the agent importable."""
    monkeypatch.syspath_prepend(str(TESTS))
    (tmp_path / "pyproject.toml").write_text('[tool.harness]\nplugins = ["wire_plugin_example"]\n')
    return tmp_path


def scenario(project: Path, llm: str) -> Path:
    path = project / "acme.scenario.yaml"
    text = f"""
        name: acme-weather
        target: {{python: 'acme_agent:answer', timeout: 60}}
        input: Weather in Paris and Atlantis?
        llm: {llm}
        expect:
          termination: completed
          tool_calls: {{sequence: [get_weather, get_weather], exact: true}}
    """
    path.write_text(textwrap.dedent(text))
    return path


def observed(result) -> list[tuple]:
    return [(c.name, c.arguments, c.result, c.status) for c in result.tool_calls]


EXPECTED_CALLS = [
    ("get_weather", {"city": "Paris"}, "18C, cloudy in Paris", "ok"),
    ("get_weather", {"city": "Atlantis"}, "ValueError: no weather station in Atlantis", "error"),
]


def test_the_plugin_wire_is_registered_through_the_hook_beside_the_built_ins(project):
    plugins = discover(project)
    wires = plugins.registry("wires")
    assert plugins.registered["harness.modelwires"].wires == list(wires)[:4]
    assert plugins.registered["wire_plugin_example"].wires == ["acme-complete"]
    assert list(wires) == [
        "openai-chat",
        "openai-responses",
        "anthropic",
        "gemini",
        "acme-complete",
    ]
    from harness._modelwires import wire_for, wire_named

    assert wire_for("/acme/v1/complete").name == "acme-complete"
    assert wire_named("acme").label == "Acme Complete"
    assert wire_for("/v1/chat/completions").name == "openai-chat"


@pytest.mark.hooks("harness_register_wires")
def test_a_wire_registered_twice_or_not_a_wire_is_a_clear_error():
    import wire_plugin_example

    class Twice:
        @staticmethod
        def harness_register_wires(register):
            register(wire_plugin_example.WIRE)

    plugins = Plugins([("acme", wire_plugin_example), ("again", Twice())])
    with pytest.raises(
        PluginError, match="wire 'acme-complete' is registered twice: by acme and by again"
    ):
        plugins.registry("wires")

    class NotAWire:
        @staticmethod
        def harness_register_wires(register):
            register("acme")

    with pytest.raises(PluginError, match=r"register\(wire\) takes a harness.wires._neutral.Wire"):
        Plugins([("bad", NotAWire())]).registry("wires")


def test_an_agent_on_the_plugin_api_is_served_its_script_and_observed(project):
    file = scenario(project, json.dumps({"script": SCRIPT}))
    result = run_scenario(file)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert observed(result) == EXPECTED_CALLS
    assert result.final.content.startswith("Paris: 18C, cloudy.")
    assert result.usage["prompt_tokens"] == 40
    requests = [e for e in result.events if e.event == "llm_request"]
    assert [e.model for e in requests] == ["acme-1", "acme-1"]


def test_a_command_target_on_the_plugin_api_is_served_and_observed(project, monkeypatch):
    # Its own process: it finds the served Acme API and a dummy key in its environment.
    monkeypatch.setenv("PYTHONPATH", str(TESTS))
    program = "import sys, acme_agent; print(acme_agent.answer(sys.stdin.read()))"
    file = scenario(project, json.dumps({"script": SCRIPT}))
    file.write_text(
        file.read_text().replace(
            "{python: 'acme_agent:answer', timeout: 60}",
            json.dumps({"command": [sys.executable, "-c", program], "timeout": 60}),
        )
    )
    result = run_scenario(file)
    assert result.status == "passed", (result.final, [e for e in result.expectations if not e.ok])
    assert observed(result) == EXPECTED_CALLS


def test_a_target_gets_the_served_url_and_a_dummy_in_place_of_the_vendors_key(project):
    from harness.external._environment import (
        DUMMY_API_KEY,
        served_variables,
        target_environment,
    )

    discover(project)
    user = {"ACME_API_KEY": KEY, "ACME_BASE_URL": "https://api.acme.invalid", "HOME": "/root"}
    changes = target_environment(served_variables("http://127.0.0.1:8123/v1"), user)
    assert changes["ACME_API_KEY"] == DUMMY_API_KEY
    assert changes["ACME_BASE_URL"] == "http://127.0.0.1:8123"
    assert "HOME" not in changes


def served(project: Path, *arguments: str):
    """``harness serve ARGUMENTS`` in its own process, in the project: (process, root URL)."""
    import subprocess

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)])}
    command = [sys.executable, "-m", "harness.cli", "serve", *arguments, "--port", "0"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env, cwd=project)
    line = server.stdout.readline()
    return server, line.split(" at ")[1].split(" ")[0].removesuffix("/v1") if " at " in line else ""


@pytest.mark.parametrize("what", ["scenario", "cassette"])
def test_the_harness_serve_command_serves_the_projects_plugin_api(project, monkeypatch, what):
    import acme_agent

    file = project / "plain.scenario.yaml"
    # No target: the agent's tools are its own.
    script = [{**SCRIPT[0], "unknown_tools": True}, SCRIPT[1]]
    file.write_text(yaml.safe_dump({"name": "plain", "input": "hi", "llm": {"script": script}}))
    if what == "cassette":
        record(project, monkeypatch)
    server, url = served(
        project, *([str(file)] if what == "scenario" else ["--cassette", "acme.yaml"])
    )
    try:
        assert url, server.stdout.read()
        monkeypatch.setenv("ACME_BASE_URL", url)
        monkeypatch.setenv("ACME_API_KEY", "dummy")
        answer = acme_agent.answer("Weather in Paris and Atlantis?")
        if what == "cassette":
            # A request the cassette does not hold: the miss, in Acme's own error form.
            turns = [{"speaker": "user", "say": "Weather in Oslo?"}]
            body = {"model": "acme-1", "turns": turns, "functions": acme_agent.FUNCTIONS}
            miss = httpx.post(f"{url}/acme/v1/complete", json=body, timeout=60)
            assert miss.status_code == 400
            assert "cassette miss" in miss.json()["failure"]["reason"].lower()
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert answer.startswith("Paris: 18C, cloudy.")


def record(project: Path, monkeypatch) -> Path:
    """The Acme target recorded through harness serve (the upstream) into acme.yaml."""
    discover(project)  # the front end's project: harness serve answers the Acme path
    monkeypatch.setenv("ACME_API_KEY", KEY)
    file = scenario(project, "{provider: openai, cassette: acme.yaml}")
    with running_server(SCRIPT) as url:
        monkeypatch.setenv("ACME_BASE_URL", url.removesuffix("/v1"))
        recorded = run_scenario(file, record_mode="once")
    assert recorded.status == "passed", (
        recorded.final,
        [e for e in recorded.expectations if not e.ok],
    )
    monkeypatch.delenv("ACME_API_KEY")
    return recorded


def test_the_vendors_key_names_are_masked_once_its_wire_is_known(project, monkeypatch):
    from harness._secrets import Scrubber, scrub_text

    monkeypatch.setenv("ACME_API_KEY", KEY)
    url = f"https://api.acme.invalid/acme/v1/complete?acme_key={KEY[:20]}&v=2"
    discover(project)
    from harness._modelwires import wires

    wires()  # the wires, and their vendors' secret names, read when first needed
    assert scrub_text(url) == "https://api.acme.invalid/acme/v1/complete?acme_key=<credentials>&v=2"
    assert scrub_text(f"echo {KEY}") == "echo <ACME_API_KEY>"
    request = {"uri": url, "headers": {"X-Acme-Key": ["dummy"], "Accept": ["*/*"]}}
    assert Scrubber().interaction({"request": request})["request"]["headers"] == {"Accept": ["*/*"]}


def test_the_vendors_other_secret_variables_are_masked_and_never_sent(project, monkeypatch):
    from harness._secrets import scrub_text
    from harness.external._environment import served_variables

    account = "acme-account-4f9b2c7d1e"
    monkeypatch.setenv("ACME_ACCOUNT_ID", account)
    discover(project)
    from harness._modelwires import wires

    wires()
    assert scrub_text(f"over quota for {account}") == "over quota for <ACME_ACCOUNT_ID>"
    # Not a key: a target is not given a dummy for it.
    assert "ACME_ACCOUNT_ID" not in served_variables("http://127.0.0.1:9/v1")


def test_recorded_through_harness_serve_then_replayed_offline_without_the_key(project, monkeypatch):
    discover(project)  # the front end's project: harness serve answers the Acme path
    monkeypatch.setenv("ACME_API_KEY", KEY)
    file = scenario(project, "{provider: openai, cassette: acme.yaml}")
    with running_server(SCRIPT) as url:
        monkeypatch.setenv("ACME_BASE_URL", url.removesuffix("/v1"))
        recorded = run_scenario(file, record_mode="once")
    assert recorded.status == "passed", (
        recorded.final,
        [e for e in recorded.expectations if not e.ok],
    )
    assert observed(recorded) == EXPECTED_CALLS

    cassette = (project / "acme.yaml").read_text()
    assert KEY not in cassette and KEY[10:22] not in cassette
    assert "<ACME_API_KEY>" in cassette  # the echoed key, masked
    assert "x-acme-key" not in cassette.lower()
    interactions = yaml.safe_load(cassette)["interactions"]
    assert [i["request"]["uri"] for i in interactions] == [
        f"{url.removesuffix('/v1')}/acme/v1/complete"
    ] * 2
    assert interactions[1]["request"]["parsed_body"]["turns"][-1]["speaker"] == "outcome"

    monkeypatch.delenv("ACME_API_KEY")
    monkeypatch.setenv("ACME_BASE_URL", OFFLINE)
    replayed = run_scenario(file)
    assert replayed.status == "passed", replayed.final
    assert observed(replayed) == EXPECTED_CALLS
    data = [r.model_dump(exclude={"wall_time", "events"}) for r in (recorded, replayed)]
    assert data[0]["tool_calls"] == data[1]["tool_calls"]
    # The same answer, the key it echoed masked as the cassette holds it.
    assert data[1]["final"] == {
        **data[0]["final"],
        "content": data[0]["final"]["content"].replace(KEY, "<ACME_API_KEY>"),
    }

    # A changed request is an explained miss, answered in Acme's own error form.
    file.write_text(file.read_text().replace("Paris and Atlantis", "Oslo"))
    missed = run_scenario(file)
    assert missed.status == "failed"
    assert "cassette miss" in str(missed.final.error.message).lower()


def test_a_recording_names_the_plugins_vendor_and_its_upstream(project, monkeypatch):
    # provider: acme, base_url: where the Acme API is (as provider: gemini names Google's).
    discover(project)
    monkeypatch.setenv("ACME_API_KEY", KEY)
    monkeypatch.delenv("ACME_BASE_URL", raising=False)
    from harness.llm._script import parse_step
    from harness.serve import create_app, running_app

    app, keys = create_app([parse_step(i, s) for i, s in enumerate(SCRIPT)]), []

    async def upstream(scope, receive, send):  # the Acme API: what key reaches it
        if scope["type"] == "http":
            keys.append(dict(scope["headers"]).get(b"x-acme-key"))
        await app(scope, receive, send)

    with running_app(upstream) as url:
        llm = {"provider": "acme", "base_url": url.removesuffix("/v1"), "cassette": "acme.yaml"}
        file = scenario(project, json.dumps(llm))
        recorded = run_scenario(file, record_mode="once")
    assert recorded.status == "passed", (
        recorded.final,
        [e for e in recorded.expectations if not e.ok],
    )
    # The real key went to the API (the target had a dummy), in the vendor's header.
    assert keys == [KEY.encode()] * 2
    monkeypatch.delenv("ACME_API_KEY")
    file = scenario(project, json.dumps({**llm, "base_url": OFFLINE}))
    replayed = run_scenario(file)
    assert replayed.status == "passed", replayed.final
    assert observed(replayed) == EXPECTED_CALLS


def test_the_recording_freezes_into_a_scenario_that_replays(project, monkeypatch):
    from harness.cli import main

    discover(project)
    monkeypatch.setenv("ACME_API_KEY", KEY)
    file = scenario(project, "{provider: openai, cassette: acme.yaml}")
    with running_server(SCRIPT) as url:
        monkeypatch.setenv("ACME_BASE_URL", url.removesuffix("/v1"))
        assert run_scenario(file, record_mode="once").status == "passed"
    monkeypatch.delenv("ACME_API_KEY")
    frozen = project / "frozen.scenario.yaml"
    assert main(["freeze", "--scenario", str(file), "-o", str(frozen)]) == 0
    text = frozen.read_text()
    assert KEY[10:22] not in text
    data = yaml.safe_load(text)
    calls = data["llm"]["script"][0]["tool_calls"]
    assert [(c["name"], c["arguments"]) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Atlantis"}),
    ]
    result = run_scenario(frozen)
    assert result.status == "passed", result.final
    assert observed(result) == EXPECTED_CALLS
