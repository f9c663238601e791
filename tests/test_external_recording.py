"""Recording a target through the proxy, replaying it from the cassette, explained misses,
and ``harness serve --cassette`` (docs/recording.md, docs/external.md).

The proxy's upstream is another harness server on 127.0.0.1 (no internet): the
recording is real HTTP through the real clients, into a real cassette file.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import openai
import pytest
import yaml

from harness.scenario import run_scenario
from harness.serve import running_server

ROOT = Path(__file__).resolve().parents[1]
SECRET = "sk-recording-secret-0123456789abcdef"

SCRIPT = [
    {"tool_calls": [{"get_weather": {"city": "Paris"}}]},
    {"tool_calls": [{"get_weather": {"city": "Rome"}}, {"get_time": {"city": "Rome"}}]},
    {
        "content": "Paris is 18C; Rome is 24C at 14:00.",
        "usage": {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59},
    },
]

CLIENTS = {
    "raw-sync": ("raw_sdk:answer", "openai"),
    "raw-stream": ("raw_sdk:answer_streaming", "openai"),
    "pydantic-ai": ("pydantic_ai_agent:answer", "pydantic_ai"),
    "agents-sdk-responses": ("agents_sdk:answer_responses_streamed", "agents"),
    # The Messages API: recorded from ANTHROPIC_BASE_URL with ANTHROPIC_API_KEY.
    "anthropic-sync": ("raw_anthropic:answer", "anthropic"),
    "anthropic-stream": ("raw_anthropic:answer_streaming", "anthropic"),
    "pydantic-ai-anthropic": ("pydantic_ai_anthropic:answer", "anthropic"),
}


@pytest.fixture
def project(tmp_path, monkeypatch, fresh_plugins):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    monkeypatch.chdir(tmp_path)
    # The example agents import as `scenarios.external.agents...` from the repository.
    monkeypatch.syspath_prepend(str(ROOT))
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-6"}


def provider_of(client: str) -> str:
    return "anthropic" if CLIENTS[client][1] == "anthropic" else "openai"


def write_scenario(folder: Path, client: str, question: str) -> Path:
    target, _ = CLIENTS[client]
    path = folder / f"{client}.scenario.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            target:
              python: scenarios.external.agents.{target}
              timeout: 30
            input: {question}
            llm: {{provider: {provider_of(client)}, model: {MODELS[provider_of(client)]}, cassette: {client}.yaml}}
            expect: {{termination: completed, script_consumed: true}}
            """
        )
    )
    return path


def observed(result):
    return result.model_dump(mode="json", exclude={"wall_time", "wall_clock", "expectations"})


@pytest.mark.parametrize("client", list(CLIENTS))
def test_a_recording_through_the_proxy_replays_the_same_run(project, monkeypatch, client):
    pytest.importorskip(CLIENTS[client][1])
    path = write_scenario(project, client, "Weather in Paris and Rome?")
    with running_server(SCRIPT) as upstream:
        monkeypatch.setenv("OPENAI_BASE_URL", upstream)
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", upstream.removesuffix("/v1"))
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        recorded = run_scenario(path, record_mode="once")
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name)

    assert recorded.status == "passed", recorded.final
    cassette = project / f"{client}.yaml"
    text = cassette.read_text()
    assert SECRET not in text and SECRET[-16:] not in text
    assert "parsed_body" in text
    assert len(yaml.safe_load(text)["interactions"]) == 3

    replayed = run_scenario(path)  # upstream gone: the cassette answers alone

    assert replayed.status == "passed"
    assert observed(replayed) == observed(recorded)
    assert (replayed.termination, replayed.llm_calls, replayed.iterations) == ("completed", 3, 3)
    assert [(c.name, c.arguments, c.result, c.group) for c in replayed.tool_calls] == [
        ("get_weather", {"city": "Paris"}, "18C, cloudy in Paris", 1),
        ("get_weather", {"city": "Rome"}, "24C, sunny in Rome", 2),
        ("get_time", {"city": "Rome"}, "14:00 in Rome", 2),
    ]
    assert replayed.parallel_groups == [["get_weather", "get_time"]]
    assert replayed.final.content == "Paris is 18C; Rome is 24C at 14:00."
    assert replayed.usage == {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59}


def test_a_cassette_miss_is_explained_and_ends_the_run_in_llm_error(project, monkeypatch):
    path = write_scenario(project, "raw-sync", "Weather in Paris and Rome?")
    with running_server(SCRIPT) as upstream:
        monkeypatch.setenv("OPENAI_BASE_URL", upstream)
        run_scenario(path, record_mode="once")
    monkeypatch.delenv("OPENAI_BASE_URL")

    changed = write_scenario(project, "raw-sync", "Weather in Oslo?")
    result = run_scenario(changed)

    assert result.termination == "llm_error"
    assert result.llm_calls == 1
    error = result.final.error
    assert (error["type"], error["status"]) == ("cassette_miss", 400)
    assert error["message"].startswith(
        "cassette miss: request 1 of the run (scenario raw-sync.scenario.yaml::raw-sync) has no "
        "unplayed match in raw-sync.yaml (match: body, record mode: none)."
    )
    assert '-      "content": "Weather in Paris and Rome?",' in error["message"]
    assert '+      "content": "Weather in Oslo?",' in error["message"]


def test_harness_serve_serves_a_cassette_to_any_client(project, monkeypatch):
    path = write_scenario(project, "raw-sync", "Weather in Paris and Rome?")
    with running_server(SCRIPT) as upstream:
        monkeypatch.setenv("OPENAI_BASE_URL", upstream)
        run_scenario(path, record_mode="once")

    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "serve",
            "--cassette",
            "raw-sync.yaml",
            "--port",
            "0",
        ],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline()
        url = line.split(" at ")[1].split(" ")[0]
        from scenarios.external.agents.raw_sdk import answer

        monkeypatch.setenv("OPENAI_BASE_URL", url)
        monkeypatch.setenv("OPENAI_API_KEY", "anything")
        # Twice: a served cassette starts over once it was played through.
        assert answer("Weather in Paris and Rome?") == "Paris is 18C; Rome is 24C at 14:00."
        assert answer("Weather in Paris and Rome?") == "Paris is 18C; Rome is 24C at 14:00."
        with pytest.raises(openai.BadRequestError, match="cassette miss"):
            answer("Weather in Oslo?")
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_harness_record_then_harness_run_on_a_target_scenario(project, monkeypatch, capsys):
    from harness.cli import main

    path = write_scenario(project, "raw-sync", "Weather in Paris and Rome?")
    with running_server(SCRIPT) as upstream:
        monkeypatch.setenv("OPENAI_BASE_URL", upstream)
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        recorded = main(["record", str(path)])
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    replayed = main(["run", str(path)])
    out = capsys.readouterr().out

    assert (recorded, replayed) == (0, 0), out
    assert (project / "raw-sync.yaml").is_file()
    assert SECRET not in (project / "raw-sync.yaml").read_text()
    assert SECRET not in (project / "reports" / "results.json").read_text()


@pytest.mark.parametrize("client", ["raw-sync", "pydantic-ai", "anthropic-stream"])
def test_a_target_recording_freezes_into_a_script_for_the_same_target(project, monkeypatch, client):
    from harness.cli import main

    pytest.importorskip(CLIENTS[client][1])
    path = write_scenario(project, client, "Weather in Paris and Rome?")
    with running_server(SCRIPT) as upstream:
        monkeypatch.setenv("OPENAI_BASE_URL", upstream)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", upstream.removesuffix("/v1"))
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        recorded = run_scenario(path, record_mode="once")
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name)

    out = project / "frozen.scenario.yaml"
    assert main(["freeze", "--scenario", str(path), "-o", str(out)]) == 0
    frozen = yaml.safe_load(out.read_text())
    # The same agent runs against the recorded replies: its own tools answer, so the
    # frozen file has the target and a script, and no stubs.
    assert frozen["target"] == yaml.safe_load(path.read_text())["target"]
    assert "tools" not in frozen and "agent" not in frozen
    assert [sorted(step) for step in frozen["llm"]["script"]] == [
        ["tool_calls", "usage"],
        ["tool_calls", "usage"],
        ["content", "usage"],
    ]
    replayed = run_scenario(out)
    assert replayed.status == "passed", [e for e in replayed.expectations if not e.ok]
    assert replayed.final.content == recorded.final.content
    assert [(c.name, c.result) for c in replayed.tool_calls] == [
        (c.name, c.result) for c in recorded.tool_calls
    ]


def test_a_target_stopped_by_its_frameworks_limit_freezes_ending_there(project, monkeypatch):
    from harness.cli import main

    pytest.importorskip("pydantic_ai")
    path = project / "limited.scenario.yaml"
    path.write_text(
        "target: {python: scenarios.external.agents.pydantic_ai_agent:answer_within_two_requests}\n"
        "input: Weather in Paris and Rome?\n"
        "agent: {stagnation: {window: 5}}\n"
        "llm: {provider: openai, model: gpt-4o-mini, cassette: limited.yaml}\n"
    )
    with running_server(SCRIPT) as upstream:
        monkeypatch.setenv("OPENAI_BASE_URL", upstream)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", upstream.removesuffix("/v1"))
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        recorded = run_scenario(path, record_mode="once")
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name)
    assert recorded.termination == "max_iterations"

    out = project / "frozen.scenario.yaml"
    assert main(["freeze", "--scenario", str(path), "-o", str(out)]) == 0
    # The one agent setting a target has stays: the frozen run watches the same window.
    assert yaml.safe_load(out.read_text())["agent"] == {"stagnation": {"window": 5}}
    replayed = run_scenario(out)
    assert replayed.status == "passed"
    assert (replayed.termination, replayed.llm_calls) == ("max_iterations", 2)
    assert replayed.final.error["exception"] == "UsageLimitExceeded"


def test_recording_a_target_without_a_key_is_refused_before_any_request(
    project, monkeypatch, capsys
):
    from harness.cli import main
    from harness.external import _cassette as cassette

    def no_network():
        raise AssertionError("the recording proxy tried to reach the network")

    # The scenario names no base_url: the proxy's upstream is the public API.
    monkeypatch.setattr(cassette, "_httpx", no_network)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = write_scenario(project, "raw-sync", "Weather in Paris and Rome?")

    code = main(["record", str(path)])
    out = capsys.readouterr().out

    assert code == 2, out
    assert (
        "harness: raw-sync.scenario.yaml::raw-sync: recording needs OPENAI_API_KEY: it is not "
        "set, and api.openai.com refuses requests without a key; nothing was recorded"
    ) in out
    assert "_pytest.outcomes.Exit" not in out
    assert not (project / "raw-sync.yaml").exists()


@pytest.mark.parametrize("status", [401, 403])
def test_a_key_the_api_refuses_while_recording_a_target_is_one_line(
    project, monkeypatch, capsys, status
):
    from harness.cli import main

    path = write_scenario(project, "raw-sync", "Weather in Paris and Rome?")
    steps = [
        {"error": {"status": status, "message": "Incorrect API key provided: sk-abc"}},
        *SCRIPT,
    ]
    with running_server(steps) as upstream:
        monkeypatch.setenv("OPENAI_BASE_URL", upstream)
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        code = main(["record", str(path)])
    out = capsys.readouterr().out

    assert code == 2, out
    line = (
        f"! harness: raw-sync.scenario.yaml::raw-sync: the API refused the key (HTTP {status}: "
        "Incorrect API key provided: sk-abc); nothing was recorded: check OPENAI_API_KEY"
    )
    assert line in out
    assert "_pytest.outcomes.Exit" not in out
    assert not (project / "raw-sync.yaml").exists()
