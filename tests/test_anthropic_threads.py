"""Anthropic's message threads served (docs/wires.md#message-threads): the SDK's tool
runner (``client.beta.messages.tool_runner``, the loop Anthropic's docs recommend) sends
``thread: {type: create}`` and then ``{type: continue, previous_message_id}`` with only
its new tool results, no system text and no tools; harness serves it as the whole
conversation, and answers the errors the SDK falls back on (``thread_not_found``: it sends
the whole history again; ``thread_unsupported_request``: it goes on without a thread).
"""

from __future__ import annotations

import json

import pytest

anthropic = pytest.importorskip("anthropic", reason="threads need the anthropic SDK")
httpx2 = pytest.importorskip("httpx2")

from harness.serve import running_server  # noqa: E402

SCRIPT = [
    {"tool_calls": [{"get_weather": {"city": "Paris"}}]},
    {"tool_calls": [{"get_weather": {"city": "Rome"}}]},
    {"content": "Paris and Rome are sunny."},
]


def client_for(url: str, sent: list[dict]) -> anthropic.Anthropic:
    """The SDK pointed at ``url``, every request body it sends kept in ``sent``."""

    def keep(request):
        sent.append(json.loads(request.content))

    http = httpx2.Client(event_hooks={"request": [keep]})
    return anthropic.Anthropic(
        base_url=url.removesuffix("/v1"), api_key="unused", max_retries=0, http_client=http
    )


def run_tool_runner(client, get_weather, **options) -> str:
    runner = client.beta.messages.tool_runner(
        model="claude-sonnet-4-6",
        max_tokens=1024,
        system="You answer with the tools.",
        tools=[anthropic.beta_tool(get_weather)],
        messages=[{"role": "user", "content": "Weather in Paris and Rome?"}],
        **options,
    )
    final = runner.until_done()
    return "".join(block.text for block in final.content if block.type == "text")


def test_the_tool_runner_creates_then_continues_its_thread():
    sent: list[dict] = []

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    with running_server(SCRIPT) as url:
        answer = run_tool_runner(client_for(url, sent), get_weather)

    assert answer == "Paris and Rome are sunny."
    kinds = [body.get("thread", {}).get("type") for body in sent]
    assert kinds == ["create", "continue", "continue"]
    # Each continue names the reply before it and sends only the new tool result.
    for body in sent[1:]:
        assert "tools" not in body and "system" not in body
        assert [m["role"] for m in body["messages"]] == ["user"]
        assert body["messages"][0]["content"][0]["type"] == "tool_result"
    assert sent[1]["thread"]["previous_message_id"] != sent[2]["thread"]["previous_message_id"]


def test_a_lost_thread_is_sent_again_whole_and_the_run_goes_on():
    sent: list[dict] = []
    server: list[str] = []

    def get_weather(city: str) -> str:
        """The weather in a city."""
        # The server forgets its threads (as after a restart) while the tool runs.
        httpx2.post(f"{server[0]}/reset")
        return f"sunny in {city}"

    with running_server(SCRIPT) as url:
        server.append(url)
        answer = run_tool_runner(client_for(url, sent), get_weather)

    assert answer == "Paris and Rome are sunny."
    kinds = [body.get("thread", {}).get("type") for body in sent]
    # A continue found no thread (404 thread_not_found): the SDK sent the whole
    # conversation again under a new thread and got the next step of the script; lost
    # again right after that replay, it goes on without a thread.
    assert kinds == ["create", "continue", "create", "continue", None]
    assert [len(body["messages"]) for body in sent] == [1, 1, 3, 1, 5]


def test_a_request_threads_do_not_support_goes_on_without_a_thread():
    sent: list[dict] = []

    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    with running_server(SCRIPT) as url:
        answer = run_tool_runner(
            client_for(url, sent), get_weather, thinking={"type": "enabled", "budget_tokens": 1024}
        )

    assert answer == "Paris and Rome are sunny."
    # Refused once (thread_unsupported_request): the SDK stops threading for the run.
    assert [body.get("thread", {}).get("type") for body in sent] == [
        "create",
        None,
        None,
        None,
    ]


def test_the_thread_errors_are_the_apis():
    with running_server(SCRIPT) as url:
        client = anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="unused")
        with pytest.raises(anthropic.NotFoundError) as lost:
            client.beta.messages.create(
                model="claude-sonnet-4-6",
                max_tokens=64,
                messages=[{"role": "user", "content": "Go on."}],
                thread={"type": "continue", "previous_message_id": "msg_unknown"},
            )
        with pytest.raises(anthropic.BadRequestError) as repeated:
            client.beta.messages.create(
                model="claude-sonnet-4-6",
                max_tokens=64,
                system="Again.",
                messages=[{"role": "user", "content": "Go on."}],
                thread={"type": "continue", "previous_message_id": "msg_unknown"},
            )

    assert lost.value.body["error"]["details"] == {"error_code": "thread_not_found"}
    assert "msg_unknown" in lost.value.message
    assert "system" in repeated.value.message


RUNNER_AGENT = '''
import anthropic


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def answer(question):
    client = anthropic.Anthropic(max_retries=0)
    runner = client.beta.messages.tool_runner(
        model="claude-sonnet-4-6",
        max_tokens=1024,
        system="You answer with the tools.",
        tools=[anthropic.beta_tool(get_weather)],
        messages=[{"role": "user", "content": question}],
    )
    final = runner.until_done()
    return "".join(block.text for block in final.content if block.type == "text")
'''


def test_a_tool_runner_target_is_observed_as_one_whole_conversation(
    tmp_path, monkeypatch, fresh_plugins
):
    from harness.hookspecs import hookimpl
    from harness.scenario import run_scenario

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / "runner_agent.py").write_text(RUNNER_AGENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = tmp_path / "runner.scenario.yaml"
    path.write_text(
        "target: {python: 'runner_agent:answer', timeout: 60}\n"
        "input: Weather in Paris and Rome?\n"
        f"llm: {{script: {json.dumps(SCRIPT)}}}\n"
        "expect: {termination: completed, llm_calls: 3, script_consumed: true}\n"
    )
    offered: list[list[str]] = []

    class Tools:
        @hookimpl
        def harness_llm_request(self, run, request):
            offered.append([t.name for t in request.tools])

    result = run_scenario(path, plugins=[Tools()])

    assert result.status == "passed", result.final
    assert [(c.name, c.status, c.result) for c in result.tool_calls] == [
        ("get_weather", "ok", "sunny in Paris"),
        ("get_weather", "ok", "sunny in Rome"),
    ]
    assert not result.conversations  # one conversation: no list of them
    roles = [m.role for m in result.transcript]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    # Every request offered the tool, though each continue sent none: the thread holds it.
    assert offered == [["get_weather"]] * 3


def test_a_held_reply_is_continued_once():
    with running_server([{"content": "One."}, {"content": "Two."}]) as url:
        client = anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="unused")
        asked = {"model": "claude-sonnet-4-6", "max_tokens": 64}
        first = client.beta.messages.create(
            messages=[{"role": "user", "content": "Count."}], thread={"type": "create"}, **asked
        )
        go_on = {"type": "continue", "previous_message_id": first.id}
        more = [{"role": "user", "content": "Go on."}]
        second = client.beta.messages.create(messages=more, thread=go_on, **asked)
        assert second.content[0].text == "Two."
        # As the API: the reply was continued; the thread is now at the next one.
        with pytest.raises(anthropic.NotFoundError):
            client.beta.messages.create(messages=more, thread=go_on, **asked)


def test_a_tool_runner_recording_freezes_as_one_run(tmp_path, monkeypatch, fresh_plugins):
    """A recording of thread continues (each with only its new tool results) is one run:
    freeze reads each continue as the whole conversation it stands for, as serve does."""
    from harness.freeze import freeze
    from harness.scenario import run_scenario

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / "runner_agent.py").write_text(RUNNER_AGENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "runner.scenario.yaml"
    path.write_text(
        "target: {python: 'runner_agent:answer', timeout: 60}\n"
        "input: Weather in Paris and Rome?\n"
        "llm: {provider: anthropic, model: claude-sonnet-4-6, cassette: runner.yaml}\n"
        "expect: {termination: completed, llm_calls: 3}\n"
    )
    with running_server(SCRIPT) as url:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url.removesuffix("/v1"))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-upstream-key-0123456789")
        recorded = run_scenario(path, record_mode="once")
    assert recorded.status == "passed", recorded.final
    cassette = next(tmp_path.rglob("runner.yaml")).read_text()
    assert cassette.count("previous_message_id") == 2  # recorded as the SDK sent it

    frozen = freeze(scenario=path, output=tmp_path / "frozen.scenario.yaml")

    assert (frozen.run, frozen.runs) == (1, 1)
    (tmp_path / "frozen.scenario.yaml").write_text(frozen.text)
    result = run_scenario(tmp_path / "frozen.scenario.yaml")
    assert result.status == "passed", (result.final, result.failed_expectations)
    assert [(c.name, c.result) for c in result.tool_calls] == [
        ("get_weather", "sunny in Paris"),
        ("get_weather", "sunny in Rome"),
    ]

    # A recording whose thread starts before it cannot be frozen, and freeze says why.
    import yaml

    from harness.freeze._recorded import FreezeError

    data = yaml.safe_load(cassette)
    del data["interactions"][0]
    (tmp_path / "cut.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(FreezeError, match=r"interaction 1: .*thread.*record the run from its"):
        freeze(tmp_path / "cut.yaml", output=tmp_path / "cut.scenario.yaml")
