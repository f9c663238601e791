"""Targets as they are written in the wild (issue 28): an SDK that retries, an agent that
asks the same question twice, a client that bypasses harness, the Agents SDK's traces.

Each test writes a small project (pyproject.toml, an agent module, a scenario) and runs
it for real: the agent talks through the openai SDK to harness on 127.0.0.1, and a
recording's upstream is another harness server on 127.0.0.1 (no internet).
"""

from __future__ import annotations

import importlib
import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from harness._errors import ScenarioSkipped
from harness.scenario import run_scenario
from harness.serve import running_server

SECRET = "sk-wild-secret-0123456789abcdef"

AGENT = '''
import openai


def _ask(client, question):
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
    )
    return reply.choices[0].message.content


def retrying(question):
    """One retry, as an SDK user sets it: a 429 and then the answer."""
    return _ask(openai.OpenAI(max_retries=1), question)


def asking_twice(question):
    client = openai.OpenAI(max_retries=0)
    return " / ".join(_ask(client, question) for _ in range(2))
'''


@pytest.fixture
def project(tmp_path, monkeypatch, fresh_plugins):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / "wild_agent.py").write_text(AGENT)
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def recorded_scenario(folder: Path, function: str) -> Path:
    path = folder / f"{function}.scenario.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            target: {{python: "wild_agent:{function}", timeout: 30}}
            input: What is the capital of France?
            llm: {{provider: openai, model: gpt-4o-mini, cassette: {function}.yaml}}
            expect: {{termination: completed, script_consumed: true}}
            """
        )
    )
    return path


def record(path: Path, steps: list, monkeypatch) -> object:
    with running_server(steps) as upstream, monkeypatch.context() as m:
        m.setenv("OPENAI_BASE_URL", upstream)
        m.setenv("OPENAI_API_KEY", SECRET)
        return run_scenario(path, record_mode="once")


def statuses(cassette: Path) -> list[int]:
    interactions = yaml.safe_load(cassette.read_text())["interactions"]
    return [i["response"]["status"]["code"] for i in interactions]


def test_a_retry_after_a_429_goes_upstream_and_both_attempts_replay(project, monkeypatch):
    path = recorded_scenario(project, "retrying")
    steps = [{"error": {"status": 429, "message": "Rate limited"}}, {"content": "Paris."}]

    recorded = record(path, steps, monkeypatch)

    # The upstream sent one 429: the retry reached it and got the answer.
    assert recorded.status == "passed", recorded.final
    assert recorded.final.content == "Paris."
    assert statuses(project / "retrying.yaml") == [429, 200]

    replayed = run_scenario(path)  # the upstream is gone: the cassette answers alone

    assert replayed.status == "passed", replayed.final
    assert (replayed.llm_calls, replayed.final.content) == (2, "Paris.")
    assert [e.event for e in replayed.events if e.event.startswith("llm_")] == [
        "llm_request",
        "llm_failed",
        "llm_request",
        "llm_response",
    ]


def test_the_same_question_asked_twice_records_two_interactions(project, monkeypatch):
    path = recorded_scenario(project, "asking_twice")

    recorded = record(path, [{"content": "Paris."}], monkeypatch)

    assert recorded.status == "passed", recorded.final
    assert statuses(project / "asking_twice.yaml") == [200, 200]

    replayed = run_scenario(path)

    assert replayed.status == "passed", replayed.final
    assert (replayed.llm_calls, replayed.final.content) == (2, "Paris. / Paris.")


BYPASSING = """
import json, os
import openai
import httpx

# Built when the module is imported, from the user's own settings: before harness runs.
CLIENT = openai.OpenAI(max_retries=0)


def bypassing(question):
    reply = CLIENT.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
    )
    return reply.choices[0].message.content


def environment(question):
    names = ["OPENAI_ORG_ID", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY",
             "OPENAI_AGENTS_DISABLE_TRACING", "LANGSMITH_TRACING"]
    return json.dumps({name: os.environ.get(name) for name in names})


def uploading_traces(question, base_url):
    return str(httpx.post(base_url + "/traces/ingest", json={"data": []}).status_code)
"""


def scripted_scenario(
    folder: Path, function: str, expect: str = "{termination: completed}"
) -> Path:
    path = folder / f"{function}.scenario.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            target: {{python: "bypassing_agent:{function}", timeout: 30}}
            input: What is the capital of France?
            llm: {{script: [{{content: Paris.}}]}}
            expect: {expect}
            """
        )
    )
    return path


def test_a_client_built_at_import_with_the_users_base_url_fails_in_one_line(project, monkeypatch):
    (project / "bypassing_agent.py").write_text(BYPASSING)
    # The user's own "API" (another harness server on 127.0.0.1, never the real one).
    with running_server([{"content": "Rome."}]) as users_api:
        monkeypatch.setenv("OPENAI_BASE_URL", users_api)
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        # The user's own code imports the module first, from the user's own settings
        # (harness itself imports it in the served environment).
        monkeypatch.syspath_prepend(str(project))
        monkeypatch.delitem(sys.modules, "bypassing_agent", raising=False)
        importlib.import_module("bypassing_agent")
        result = run_scenario(scripted_scenario(project, "bypassing"))

    assert result.final.content == "Rome."  # the answer came from elsewhere
    assert result.llm_calls == 0
    assert result.status == "failed"
    (failed,) = result.failed_expectations
    assert failed.path == "script_consumed"
    assert "\n" not in failed.actual
    assert failed.actual.startswith(
        "the target completed without calling the model: its client was probably built "
        "before harness set OPENAI_BASE_URL (its module imported before harness loaded the "
        "scenario)"
    )
    assert "build it inside the target function, or take base_url" in failed.actual


def test_the_target_gets_none_of_the_users_model_settings_and_no_telemetry(project, monkeypatch):
    (project / "bypassing_agent.py").write_text(BYPASSING)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-users-own")
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("GOOGLE_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)

    result = run_scenario(
        scripted_scenario(
            project, "environment", "{termination: completed, script_consumed: false}"
        )
    )

    assert result.status == "passed", result.final
    assert json.loads(result.final.content) == {
        "OPENAI_ORG_ID": None,
        "OPENAI_API_KEY": "sk-harness-target",
        "ANTHROPIC_API_KEY": "sk-harness-target",  # the served wire's dummy, not the user's
        "GOOGLE_API_KEY": "sk-harness-target",
        "OPENAI_AGENTS_DISABLE_TRACING": "1",
        "LANGSMITH_TRACING": "false",
    }
    assert os.environ["OPENAI_ORG_ID"] == "org-users-own"  # given back after the run


def test_harness_answers_a_trace_upload_sent_to_it(project, monkeypatch):
    (project / "bypassing_agent.py").write_text(BYPASSING)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)

    result = run_scenario(
        scripted_scenario(
            project, "uploading_traces", "{termination: completed, script_consumed: false}"
        )
    )

    assert (result.status, result.final.content) == ("passed", "200")


QUICKSTART = """
from agents import Agent, Runner


async def quickstart(question):
    agent = Agent(name="Assistant", instructions="You are a helpful assistant")
    result = await Runner.run(agent, question)
    return str(result.final_output)
"""


@pytest.fixture
def only_loopback(monkeypatch):
    """Every connection to an address other than 127.0.0.1 refused before it is made (and
    every name looked up other than localhost), and counted."""
    attempts: list[object] = []
    local = {"127.0.0.1", "localhost", "::1"}
    lookup, connect = socket.getaddrinfo, socket.socket.connect

    def guarded_lookup(host, *args, **kwargs):
        if host not in local:
            attempts.append(host)
            raise socket.gaierror(f"blocked by the test: {host}")
        return lookup(host, *args, **kwargs)

    def guarded_connect(self, address):
        if isinstance(address, tuple) and address[0] not in local:
            attempts.append(address)
            raise ConnectionRefusedError(f"blocked by the test: {address}")
        return connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", guarded_lookup)
    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    return attempts


def test_an_agents_sdk_quickstart_uploads_no_trace(project, monkeypatch, only_loopback):
    agents = pytest.importorskip("agents")
    (project / "quickstart_agent.py").write_text(QUICKSTART)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # the user's real key, as in a shell
    provider = agents.tracing.get_trace_provider()
    # The SDK reads its switch once per process: start from an SDK that has not yet, as a
    # fresh `harness run` does (another test may have switched tracing on or off).
    monkeypatch.setattr(provider, "_env_disabled", None, raising=False)
    monkeypatch.setattr(provider, "_manual_disabled", None, raising=False)
    path = project / "quickstart.scenario.yaml"
    path.write_text(
        "target: {python: 'quickstart_agent:quickstart', timeout: 30}\n"
        "input: Write a haiku about recursion.\n"
        "llm: {script: [{content: Code calls itself.}]}\n"
    )

    result = run_scenario(path)
    provider.force_flush()  # what the SDK's exporter thread would send later

    assert (result.status, result.final.content) == ("passed", "Code calls itself.")
    assert only_loopback == []


TOOLS_AGENT = '''
import openai
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


async def pydantic_streamed(question):
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider())
    agent = Agent(model, tools=[lookup])
    async with agent.run_stream(question) as result:
        return await result.get_output()


def impatient(question):
    client = openai.OpenAI(max_retries=0, timeout=0.5)
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
    )
    return reply.choices[0].message.content
'''


def test_calls_sent_without_ids_are_matched_to_their_results(project):
    pytest.importorskip("pydantic_ai")
    (project / "tools_agent.py").write_text(TOOLS_AGENT)
    path = project / "no-ids.scenario.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            target: {python: "tools_agent:pydantic_streamed", timeout: 30}
            input: Weather in Paris and Rome?
            llm:
              script:
                - tool_calls:
                    - {name: lookup, arguments: {city: Paris}, id: null}
                    - {name: lookup, arguments: {city: Rome}, id: null}
                - content: Sunny in both.
            expect: {termination: completed, script_consumed: true}
            """
        )
    )

    result = run_scenario(path)

    assert result.status == "passed", result.final
    assert [(c.name, c.status, c.result) for c in result.tool_calls] == [
        ("lookup", "ok", "sunny in Paris"),
        ("lookup", "ok", "sunny in Rome"),
    ]
    assert result.parallel_groups == [["lookup", "lookup"]]
    # Chat Completions tool messages name no tool: the transcript names the call's.
    tools = [m for m in result.transcript if m.role == "tool"]
    assert [(m.name, m.content) for m in tools] == [
        ("lookup", "sunny in Paris"),
        ("lookup", "sunny in Rome"),
    ]


def test_a_client_that_times_out_before_a_timeout_step_answers_is_reported_so(project):
    (project / "tools_agent.py").write_text(TOOLS_AGENT)
    path = project / "impatient.scenario.yaml"
    path.write_text(
        "target: {python: 'tools_agent:impatient', timeout: 30}\n"
        "input: Hello?\n"
        "llm: {script: [{error: timeout}, {content: Too late.}]}\n"
        "expect: {termination: llm_error}\n"
    )

    result = run_scenario(path)

    assert result.status == "passed", result.final
    error = result.final.error
    assert (error.type, error.status) == ("timeout", None)
    assert error.message == "the client gave up before the answer came (its own timeout)"
    assert "shutting down" not in str(result.model_dump())


FOREIGN = Path(__file__).parent / "fixtures" / "foreign-cassettes"
AGNO = "agno-chat-failing-tool-brotli.yaml"


@pytest.fixture
def served_cassette(tmp_path):
    """``harness serve --cassette`` on agno's brotli recording, moved to the path prefix of
    an OpenAI-compatible endpoint (Gemini's, as pydantic-ai recorded it): its root URL."""
    text = (FOREIGN / AGNO).read_text()
    moved = tmp_path / "moved.yaml"
    moved.write_text(
        text.replace(
            "https://api.openai.com/v1/chat/completions",
            "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions",
        )
    )
    server = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "serve", "--cassette", str(moved), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline()
        yield line.split(" at ")[1].split(" ")[0].removesuffix("/v1")
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_serve_answers_a_brotli_recording_at_the_paths_it_was_recorded_on(served_cassette):
    import openai

    (first, *_) = yaml.safe_load((FOREIGN / AGNO).read_text())["interactions"]
    request = json.loads(first["request"]["body"])
    client = openai.OpenAI(base_url=f"{served_cassette}/v1beta/openai", api_key="x")

    reply = client.chat.completions.create(**request)

    # Decoded (brotli), as the recorded API sent it.
    (call,) = reply.choices[0].message.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "unreliable_search",
        {"query": "Python tutorials"},
    )
    elsewhere = openai.OpenAI(base_url=f"{served_cassette}/v1", api_key="x", max_retries=0)
    with pytest.raises(openai.BadRequestError) as miss:
        elsewhere.chat.completions.create(**request)
    message = miss.value.body["message"]
    assert "No recorded request is a POST to /v1/chat/completions" in message
    assert "/v1beta/openai/chat/completions." in message.split("were recorded at ")[1]
    assert "Send the requests to the recorded paths" in message
    assert "re-record" not in message


HEADERS_AGENT = """
import openai


def with_gateway_token(question):
    client = openai.OpenAI(max_retries=0, default_headers={"X-Custom-Token": "gw-0123456789"})
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
    )
    return reply.choices[0].message.content
"""


class SeenHeaders:
    """harness's server as the upstream, keeping the headers of every request it got."""

    def __init__(self, app) -> None:
        self.app = app  # by that name: running_app finds the server's state through it
        self.seen: list[dict[str, str]] = []

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            self.seen.append({k.decode(): v.decode() for k, v in scope["headers"]})
        await self.app(scope, receive, send)


def test_the_agents_own_headers_reach_the_upstream_and_never_the_cassette(project, monkeypatch):
    from harness.llm._script import parse_step
    from harness.serve import create_app, running_app

    (project / "headers_agent.py").write_text(HEADERS_AGENT)
    path = project / "headers.scenario.yaml"
    path.write_text(
        "target: {python: 'headers_agent:with_gateway_token', timeout: 30}\n"
        "input: Hello?\n"
        "llm: {provider: openai, model: gpt-4o-mini, cassette: headers.yaml}\n"
    )
    upstream = SeenHeaders(create_app([parse_step(0, {"content": "Hi."})]))
    with running_app(upstream) as url, monkeypatch.context() as m:
        m.setenv("OPENAI_BASE_URL", url)
        m.setenv("OPENAI_API_KEY", SECRET)
        recorded = run_scenario(path, record_mode="once")

    assert recorded.status == "passed", recorded.final
    (headers,) = upstream.seen
    assert headers["x-custom-token"] == "gw-0123456789"
    assert headers["authorization"] == f"Bearer {SECRET}"  # the real key, not the dummy
    text = (project / "headers.yaml").read_text()
    assert "gw-0123456789" not in text and SECRET not in text


EXAMPLES = Path(__file__).resolve().parents[1] / "scenarios" / "external"


def test_no_request_of_the_example_targets_leaves_127_0_0_1(monkeypatch, only_loopback):
    # The user's own settings, as in a shell: a key, an organization, a base URL elsewhere.
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_ORG_ID", "org-users-own")
    monkeypatch.setenv("OPENAI_BASE_URL", "https://api.openai.com/v1")
    ran = 0
    for path in sorted(EXAMPLES.glob("*.scenario.yaml")):
        try:
            result = run_scenario(path)
        except ScenarioSkipped:
            continue
        ran += 1
        assert result.status == "passed", (path.name, result.final)
    assert ran >= 5
    assert only_loopback == []
