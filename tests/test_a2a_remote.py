"""RemoteAgentTool against harness's own A2A server and against a minimal A2A agent
written here with a2a-sdk alone; failures as error results; remote: in scenarios."""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import Iterator

import httpx
import pytest
from a2a.helpers import new_text_message
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from starlette.applications import Starlette

from harness import Agent, RemoteAgentTool
from harness._asgi import SERVER_THREAD, listening_sockets
from harness._errors import ScenarioError
from harness._run import current_run
from harness.a2a import create_app, running_app
from harness.scenario import load_scenario, run_scenario
from harness.scenario._serving import stop_served

pytestmark = pytest.mark.timeout(120)


# -- a minimal A2A agent, a2a-sdk only -----------------------------------------------------


class Echo(AgentExecutor):
    """Answers each message with one Message; remembers the contexts it was sent."""

    def __init__(self, hold: asyncio.Event | None = None) -> None:
        self.contexts: list[str] = []
        self.hold = hold

    async def execute(self, context, event_queue) -> None:
        self.contexts.append(context.context_id)
        if self.hold is not None:
            await self.hold.wait()  # never set: a test of the caller's timeout
        text = context.get_user_input()
        await event_queue.enqueue_event(
            new_text_message(f"echo: {text}", context_id=context.context_id)
        )

    async def cancel(self, context, event_queue) -> None:
        """Nothing to cancel."""


@contextlib.contextmanager
def echo_agent(executor: Echo) -> Iterator[str]:
    """Serve ``executor`` with a2a-sdk's routes on a free port of 127.0.0.1."""
    import uvicorn

    sockets = listening_sockets("127.0.0.1", 0)
    url = f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
    card = AgentCard(
        name="Echo agent",
        description="Says back what it is told",
        version="1.0",
        supported_interfaces=[
            AgentInterface(protocol_binding="JSONRPC", url=url + "/", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="echo", tags=["echo"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(
        routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
    )
    # A held answer (the timeout test's) never ends: stop within a second, not at
    # thread.join's 15 s with a server thread left behind.
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    # Named as harness's own server threads are: uvicorn's ticks while it waits for
    # connections to close are not a run's sleeps (tests' no_real_sleep leaves them out).
    thread = threading.Thread(
        target=server.run,
        kwargs={"sockets": sockets},
        daemon=True,
        name=f"{SERVER_THREAD} (a2a-sdk echo agent)",
    )
    thread.start()
    try:
        while not server.started:
            assert thread.is_alive()
            thread.join(0.01)
        yield url
    finally:
        server.should_exit = True
        thread.join(15)


def calls_twice(remote: RemoteAgentTool, first: str = "one", second: str = "two") -> Agent:
    return Agent(
        [
            {"tool_calls": [{remote.name: {"task": first}}]},
            {"tool_calls": [{remote.name: {"task": second}}]},
            {"content": "done"},
        ],
        [remote],
    )


# -- against a minimal a2a-sdk agent ------------------------------------------------------


def test_against_a_minimal_a2a_sdk_agent_name_and_description_come_from_its_card():
    executor = Echo()
    with echo_agent(executor) as url:
        remote = RemoteAgentTool(url)
        assert (remote.name, remote.description) == ("Echo_agent", "Says back what it is told")
        first = calls_twice(remote).run("go")
        second = calls_twice(remote).run("go")
    assert [r.result for r in first.tool_calls] == ["echo: one", "echo: two"]
    assert [r.status for r in second.tool_calls] == ["ok", "ok"]
    # One context per parent run: the run's two calls share one, the next run has another.
    a, b, c, d = executor.contexts
    assert a == b and c == d and a != c


def test_given_name_and_description_are_kept_and_the_card_is_not_needed_to_build_it():
    remote = RemoteAgentTool("http://127.0.0.1:9", name="helper", description="Helps")
    schema = remote.openai_schema()["function"]
    assert schema["name"] == "helper" and schema["description"] == "Helps"
    assert schema["parameters"]["required"] == ["task"]


# -- against harness's own server ----------------------------------------------------------


def test_against_our_server_a_follow_up_continues_the_remote_session():
    def researcher() -> Agent:
        return Agent([{"content": "Frank Herbert."}, {"content": "In 1965."}])

    app = create_app(researcher, name="researcher", description="Knows about books")
    with running_app(app) as url:
        remote = RemoteAgentTool(url)
        assert remote.description == "Knows about books"
        result = calls_twice(remote, "Who wrote Dune?", "When?").run("go")
        again = calls_twice(remote, "Who wrote Dune?", "When?").run("go")
        sessions = app.state.sessions
    assert [r.result for r in result.tool_calls] == ["Frank Herbert.", "In 1965."]
    # The next parent run is a new remote session: its script starts again.
    assert [r.result for r in again.tool_calls] == ["Frank Herbert.", "In 1965."]
    assert len(sessions) == 2


def test_a_failed_remote_task_is_an_error_result_and_the_parent_goes_on():
    def stuck() -> Agent:
        return Agent([{"tool_calls": [{"think": {}}]}] * 5, [_think], max_iterations=1)

    with running_app(create_app(stuck, name="stuck")) as url:
        result = calls_twice(RemoteAgentTool(url)).run("go")
    assert result.termination == "completed"
    record = result.tool_calls[0]
    assert (record.status, record.is_error) == ("error", True)
    assert record.result == (
        "RemoteAgentError: the remote agent's task ended failed: Max iterations reached"
    )


def _think() -> str:
    """Think."""
    return "hm"


def test_unreachable_and_http_errors_are_error_results():
    down = RemoteAgentTool("http://127.0.0.1:9", name="down", description="d", timeout=5)
    result = calls_twice(down).run("go")
    assert result.termination == "completed"
    assert all(r.is_error for r in result.tool_calls)
    assert result.tool_calls[0].result.startswith(
        "RemoteAgentError: the remote agent at http://127.0.0.1:9 could not be reached"
    )

    # A server that answers, but not A2A: HTTP 404 for the card.
    with running_app(Starlette()) as url:
        wrong = RemoteAgentTool(url, name="wrong", description="d", timeout=5)
        record = calls_twice(wrong).run("go").tool_calls[0]
    assert record.is_error and "404" in record.result


def test_a_timeout_is_an_error_result():
    hold = asyncio.Event()  # never set
    with echo_agent(Echo(hold)) as url:
        slow = RemoteAgentTool(url, name="slow", description="d", timeout=0.5)
        record = calls_twice(slow).run("go").tool_calls[0]
    assert record.is_error
    assert record.result == (
        f"RemoteAgentError: the remote agent at {url} did not answer within 0.5 s"
    )


def test_without_a_name_an_unreachable_card_is_a_clear_error():
    from harness._errors import HarnessError

    with pytest.raises(
        HarnessError, match=re.escape("cannot read the agent card at http://127.0.0.1:9/")
    ):
        RemoteAgentTool("http://127.0.0.1:9", timeout=2)
    with pytest.raises(HarnessError, match=re.escape("http:// or https://")):
        RemoteAgentTool("localhost:8000")


def test_current_run_is_the_run_a_tool_is_called_in():
    seen = []

    def which(x: int) -> str:
        """Report the run."""
        seen.append(current_run())
        return "ok"

    from harness import tool

    agent = Agent(
        [{"tool_calls": [{"which": {"x": 1}}, {"which": {"x": 2}}]}, {"content": "ok"}],
        [tool(which)],
    )
    agent.run("go")
    assert current_run() is None
    assert len(seen) == 2 and seen[0] is seen[1] and seen[0] is not None


# -- remote: in scenario files -------------------------------------------------------------


def _write(path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def served():
    yield
    stop_served()


def test_a_scenario_serves_its_remote_sub_agent_from_another_scenario_file(tmp_path, served):
    _write(
        tmp_path / "sub.scenario.yaml",
        "description: Knows Dune\ninput: q\nllm:\n  script:\n"
        "    - content: Frank Herbert.\n    - content: In 1965.\n",
    )
    _write(
        tmp_path / "main.scenario.yaml",
        "input: Tell me\ntools:\n  sub:\n    remote: {scenario: sub.scenario.yaml}\n"
        "llm:\n  script:\n    - tool_calls: [{sub: {task: who}}]\n"
        "    - tool_calls: [{sub: {task: when}}]\n    - content: done\n",
    )
    first = run_scenario(tmp_path / "main.scenario.yaml")
    second = run_scenario(tmp_path / "main.scenario.yaml")
    for result in (first, second):
        assert [c.result for c in result.tool_calls] == ["Frank Herbert.", "In 1965."]


def test_remote_entries_are_checked_when_the_file_loads(tmp_path):
    _write(tmp_path / "a.scenario.yaml", "tools:\n  b:\n    remote: {scenario: b.scenario.yaml}\n")
    _write(tmp_path / "b.scenario.yaml", "tools:\n  a:\n    remote: {scenario: a.scenario.yaml}\n")
    _write(
        tmp_path / "bad.scenario.yaml",
        "tools:\n"
        "  ftp:\n    remote: ftp://example.com\n"
        "  both:\n    remote: {url: 'http://x', scenario: y.scenario.yaml}\n"
        "  stubbed:\n    remote: http://127.0.0.1:1\n    returns: hi\n",
    )
    _write(tmp_path / "gone.scenario.yaml", "tools:\n  g:\n    remote: {scenario: nope.yaml}\n")
    with pytest.raises(ScenarioError) as cycle:
        load_scenario(tmp_path / "a.scenario.yaml")
    assert "comes back to itself" in str(cycle.value)
    with pytest.raises(ScenarioError) as bad:
        load_scenario(tmp_path / "bad.scenario.yaml")
    text = str(bad.value)
    assert "bad.scenario.yaml:3: tools.ftp.remote: 'ftp://example.com' is not an http://" in text
    assert "tools.both.remote" in text and "give either url" in text
    assert "tools.stubbed: a `remote:` tool is another agent" in text and "remove returns" in text
    with pytest.raises(ScenarioError, match=r"gone.scenario.yaml:3: tools.g.remote.scenario: no"):
        load_scenario(tmp_path / "gone.scenario.yaml")


def test_a_remote_url_tool_in_a_scenario_calls_a_running_agent(tmp_path):
    executor = Echo()
    with echo_agent(executor) as url:
        _write(
            tmp_path / "call.scenario.yaml",
            f"input: go\ntools:\n  echo:\n    remote: {url}\n"
            "llm:\n  script:\n    - tool_calls: [{echo: {task: hi}}]\n    - content: done\n",
        )
        result = run_scenario(tmp_path / "call.scenario.yaml")
    assert result.tool_calls[0].result == "echo: hi"


def test_agent_serve_serves_a_scenario_file_until_stopped(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    _write(tmp_path / "s.scenario.yaml", "llm:\n  script:\n    - content: served\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "agent-serve", "s.scenario.yaml", "--port", "0"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        line = process.stdout.readline()  # bounded by the test's timeout
        assert "harness agent-serve: s.scenario.yaml at http://127.0.0.1:" in line, (
            line + process.stderr.read()
        )
        url = line.split(" at ")[1].split(" ")[0]
        remote = RemoteAgentTool(url)
        assert remote.name == "s"
        result = Agent([{"tool_calls": [{"s": {"task": "hi"}}]}, {"content": "ok"}], [remote])
        assert result.run("go").tool_calls[0].result == "served"
        assert httpx.get(f"{url}/sessions/missing").status_code == 404
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "stopped" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nomodule:make"], "cannot import nomodule:make"),
        (["harness:__version__"], "not a function that returns an Agent"),
        (["noplace"], "neither a scenario file nor module:attr"),
        (["missing.scenario.yaml"], "cannot read the file"),
        (["x:y", "--session-ttl", "0"], "--session-ttl must be > 0"),
        (["x:y", "--max-sessions", "0"], "--max-sessions must be at least 1"),
        (["x:y", "--max-turns", "0"], "--max-turns must be at least 1"),
        (["x:y", "--max-message", "9", "--max-session", "8"], "not be more than --max-session"),
        (["x:y", "--callers", "missing.json"], "--callers missing.json: cannot read it"),
    ],
)
def test_agent_serve_bad_input_exits_2_with_a_message(argv, message, capsys):
    from harness import cli

    assert cli.main(["agent-serve", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ('["alice"]', 'expected a JSON object {"NAME": "TOKEN", ...}'),
        ('{"alice": "short"}', "'alice': its token must be a string of 16 characters or more"),
        ('{"a": "same-token-0123456789", "b": "same-token-0123456789"}', "the same token"),
    ],
)
def test_agent_serve_refuses_callers_it_cannot_tell_apart(tmp_path, capsys, given, message):
    from harness import cli

    (tmp_path / "callers.json").write_text(given)
    argv = ["agent-serve", "x:y", "--callers", str(tmp_path / "callers.json")]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert "same-token" not in err


def test_agent_serve_with_callers_serves_only_them(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    from a2a.client import ClientConfig, create_client
    from a2a.client.auth import AuthInterceptor, CredentialService
    from a2a.helpers import get_artifact_text
    from a2a.types import Message, Part, Role, SendMessageRequest
    from a2a.utils.errors import InvalidRequestError

    class Token(CredentialService):
        def __init__(self, token: str) -> None:
            self.token = token

        async def get_credentials(self, security_scheme_name, context):
            return self.token

    _write(tmp_path / "s.scenario.yaml", "llm:\n  script:\n    - content: served\n")
    (tmp_path / "callers.json").write_text('{"alice": "alice-token-0123456789"}')
    argv = ["agent-serve", "s.scenario.yaml", "--port", "0", "--callers", "callers.json"]
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *argv],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )

    async def ask(url: str, token: str | None) -> str:
        interceptors = [AuthInterceptor(Token(token))] if token else None
        client = await create_client(
            url, client_config=ClientConfig(streaming=False), interceptors=interceptors
        )
        request = SendMessageRequest(
            message=Message(message_id="m1", role=Role.ROLE_USER, parts=[Part(text="hi")])
        )
        try:
            events = [e async for e in client.send_message(request)]
        finally:
            await client.close()
        return get_artifact_text(events[-1].task.artifacts[0])

    try:
        line = process.stdout.readline()  # bounded by the test's timeout
        url = line.split(" at ")[1].split(" ")[0]
        assert asyncio.run(ask(url, "alice-token-0123456789")) == "served"
        with pytest.raises(InvalidRequestError, match="authenticate"):
            asyncio.run(ask(url, None))
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "alice-token" not in out + err
