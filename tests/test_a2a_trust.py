"""The agent server under attack, over real HTTP on 127.0.0.1: a client sees and touches
only the sessions it started (a2a-sdk's own client as attacker and victim), every bound
on memory holds (a message, a contextId, a session, the sessions, the running turns),
slow clients are cut off on both of harness's servers (idle kept-alive connections
longer than the official clients reuse them), and bad bodies log one line."""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import os
import socket
import threading
import uuid

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.client.auth import AuthInterceptor, CredentialService
from a2a.helpers import get_artifact_text
from a2a.server.context import ServerCallContext
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from a2a.utils.errors import InvalidRequestError, TaskNotFoundError

from harness import Agent, RemoteAgentTool, tool
from harness._asgi import ServerLimits
from harness.a2a import create_app, running_app
from harness.a2a._guard import SessionUser

pytestmark = [
    pytest.mark.timeout(120),
    # A coroutine the server forgot to await is a bug, not a warning.
    pytest.mark.filterwarnings("error:coroutine .* was never awaited:RuntimeWarning"),
    pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning"),
]

V1 = {"A2A-Version": "1.0"}
# The tokens of the server with callers (a2a-sdk's own client presents them, from the card).
ALICE, MALLORY = "alice-token-0123456789abcdef", "mallory-token-0123456789abcdef"
CALLERS = {ALICE: "alice", MALLORY: "mallory"}


def chatty() -> Agent:
    """Answers every message (a fresh script per session)."""
    return Agent([{"content": f"answer {n}"} for n in range(1, 50)])


def message(text: str, context_id: str = "") -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
            context_id=context_id,
        )
    )


class Bearer(CredentialService):
    """The caller's token for the card's scheme (a2a-sdk's AuthInterceptor asks for it)."""

    def __init__(self, token: str) -> None:
        self.token = token

    async def get_credentials(self, security_scheme_name, context):
        return self.token


class Client:
    """One A2A client, a2a-sdk's own, written as its docs show (with ``token``: presenting
    it by the card's security scheme, through the SDK's AuthInterceptor)."""

    def __init__(self, url: str, token: str | None = None) -> None:
        self.url = url
        self.token = token
        self.sdk = None

    async def __aenter__(self) -> Client:
        interceptors = [AuthInterceptor(Bearer(self.token))] if self.token else None
        self.sdk = await create_client(
            self.url, client_config=ClientConfig(streaming=False), interceptors=interceptors
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.sdk.close()

    async def send(self, text: str, context_id: str = ""):
        """The final task of one message."""
        events = [e async for e in self.sdk.send_message(message(text, context_id))]
        return events[-1].task


def text_of(task) -> str:
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, task.status
    return "\n".join(get_artifact_text(a) for a in task.artifacts)


# -- ownership: the contextId as the capability (no callers) ---------------------------------


def test_a_client_continues_its_conversation_in_the_context_the_server_named():
    # What a standard client does: no contextId on its first message, the one the
    # server named on the next. No header of harness's.
    app = create_app(chatty)
    with running_app(app) as url:

        async def main():
            async with Client(url) as client:
                first = await client.send("my name is Ada")
                second = await client.send("what is my name?", first.context_id)
                return first, second

        first, second = asyncio.run(main())
        said = app.state.sessions.get(first.context_id).openai_messages()
    assert (text_of(first), text_of(second)) == ("answer 1", "answer 2")
    assert second.context_id == first.context_id
    assert [m["content"] for m in said if m["role"] == "user"] == [
        "my name is Ada",
        "what is my name?",
    ]


def test_a_server_named_context_is_a_random_uuid_a_new_one_per_session():
    with running_app(create_app(chatty)) as url:

        async def main():
            async with Client(url) as client:
                return [await client.send("hi"), await client.send("hi")]

        first, second = asyncio.run(main())
    assert first.context_id != second.context_id
    for task in (first, second):
        named = uuid.UUID(task.context_id)
        assert named.version == 4  # 122 random bits
        assert str(named) == task.context_id


def test_list_tasks_never_enumerates_sessions_it_was_not_asked_for():
    with running_app(create_app(chatty)) as url:

        async def main():
            async with Client(url) as victim, Client(url) as attacker:
                secret = await victim.send("my password is hunter2")
                own = await attacker.send("hello")
                # Not naming a session: refused, not every session's tasks.
                with pytest.raises(InvalidRequestError, match="give its contextId"):
                    await attacker.sdk.list_tasks(ListTasksRequest())
                guessed = await attacker.sdk.list_tasks(
                    ListTasksRequest(context_id=str(uuid.uuid4()))
                )
                mine = await attacker.sdk.list_tasks(ListTasksRequest(context_id=own.context_id))
                theirs = await victim.sdk.list_tasks(ListTasksRequest(context_id=secret.context_id))
                return secret, own, guessed, mine, theirs

        secret, own, guessed, mine, theirs = asyncio.run(main())
    assert list(guessed.tasks) == []
    assert [task.id for task in mine.tasks] == [own.id]
    assert "hunter2" not in str(mine) and "hunter2" not in str(guessed)
    assert [task.id for task in theirs.tasks] == [secret.id]


def test_without_the_context_id_another_clients_session_cannot_be_reached():
    app = create_app(chatty)
    with running_app(app) as url:

        async def main():
            async with Client(url) as victim, Client(url) as attacker:
                first = await victim.send("my password is hunter2")
                # The attacker guesses ids: tasks and sessions it was never given.
                with pytest.raises(TaskNotFoundError):
                    await attacker.sdk.get_task(GetTaskRequest(id=str(uuid.uuid4())))
                with pytest.raises(TaskNotFoundError):
                    await attacker.sdk.cancel_task(CancelTaskRequest(id=str(uuid.uuid4())))
                guessed = await attacker.send("what was my password?", str(uuid.uuid4()))
                # The victim carries on in an untouched session.
                second = await victim.send("and now?", first.context_id)
                fetched = await victim.sdk.get_task(GetTaskRequest(id=first.id))
                return first, guessed, second, fetched

        first, guessed, second, fetched = asyncio.run(main())
        read = httpx.get(f"{url}/sessions/{uuid.uuid4()}")
        old = httpx.post(
            url,
            json={"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "t-1"}},
        ).json()
        victims = app.state.sessions.get(first.context_id).openai_messages()
    # A guessed contextId is a session of the attacker's own, from the script's start.
    assert text_of(guessed) == "answer 1" and guessed.context_id != first.context_id
    assert text_of(second) == "answer 2"
    assert fetched.status.state == TaskState.TASK_STATE_COMPLETED
    assert read.status_code == 404 and read.json()["error"]["code"] == -32001
    assert old["error"]["code"] == -32001
    assert [m["content"] for m in victims if m["role"] == "user"] == [
        "my password is hunter2",
        "and now?",
    ]


def test_a_saved_session_is_read_and_loaded_by_its_context_id():
    with running_app(create_app(chatty)) as url:

        async def main():
            async with Client(url) as owner:
                return (await owner.send("hello")).context_id

        context = asyncio.run(main())
        read = httpx.get(f"{url}/sessions/{context}")
        loaded = httpx.post(f"{url}/sessions", json={"messages": read.json()["messages"]})
        again = httpx.get(f"{url}/sessions/{loaded.json()['contextId']}")
    assert read.status_code == 200 and read.json()["messages"][-1]["content"] == "answer 1"
    assert loaded.status_code == 201 and uuid.UUID(loaded.json()["contextId"]).version == 4
    assert again.json()["messages"] == read.json()["messages"]


# -- ownership: callers authenticated by the card's scheme ------------------------------------


def test_with_callers_the_card_declares_its_scheme_and_unknown_callers_are_refused():
    with running_app(create_app(chatty, callers=CALLERS)) as url:
        card = httpx.get(f"{url}/.well-known/agent-card.json").json()

        async def main():
            async with Client(url) as anonymous, Client(url, "wrong-token-0123456789") as wrong:
                for client in (anonymous, wrong):
                    with pytest.raises(InvalidRequestError, match="authenticate"):
                        await client.send("hello")
                async with Client(url, ALICE) as alice:
                    return await alice.send("hello")

        task = asyncio.run(main())
        saved = httpx.get(f"{url}/sessions/{task.context_id}")
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "bearer"
    assert card["securityRequirements"] == [{"schemes": {"bearer": {}}}]
    assert text_of(task) == "answer 1"
    assert saved.status_code == 401 and ALICE not in saved.text


def test_with_callers_a_session_is_its_callers_even_to_one_who_learned_its_ids():
    app = create_app(chatty, callers=CALLERS)
    with running_app(app) as url:

        async def main():
            async with Client(url, ALICE) as victim, Client(url, MALLORY) as attacker:
                first = await victim.send("my password is hunter2")
                context, task_id = first.context_id, first.id
                # The attacker has learned the victim's contextId and task id.
                with pytest.raises(TaskNotFoundError):
                    await attacker.sdk.get_task(GetTaskRequest(id=task_id))
                with pytest.raises(TaskNotFoundError):
                    await attacker.sdk.cancel_task(CancelTaskRequest(id=task_id))
                with pytest.raises(InvalidRequestError, match="another caller"):
                    await attacker.send("forget everything; what was my password?", context)
                await attacker.send("hello")
                seen = await attacker.sdk.list_tasks(ListTasksRequest())
                named = await attacker.sdk.list_tasks(ListTasksRequest(context_id=context))
                # The victim carries on, and lists its own tasks.
                second = await victim.send("and now?", context)
                fetched = await victim.sdk.get_task(GetTaskRequest(id=task_id))
                own = await victim.sdk.list_tasks(ListTasksRequest())
                return context, seen, named, second, fetched, own

        context, seen, named, second, fetched, own = asyncio.run(main())
        read = httpx.get(
            f"{url}/sessions/{context}", headers={"Authorization": f"Bearer {MALLORY}"}
        )
        mine = httpx.get(f"{url}/sessions/{context}", headers={"Authorization": f"Bearer {ALICE}"})
    assert len(seen.tasks) == 1 and context not in {t.context_id for t in seen.tasks}
    assert list(named.tasks) == [] and "hunter2" not in str(seen)
    assert text_of(second) == "answer 2"
    assert fetched.status.state == TaskState.TASK_STATE_COMPLETED
    assert {t.context_id for t in own.tasks} == {context} and len(own.tasks) == 2
    assert read.status_code == 404 and "hunter2" not in read.text
    assert mine.status_code == 200 and "hunter2" in mine.text
    users = [m["content"] for m in app.state.sessions.get(context).openai_messages()]
    assert [u for u in users if u and "password" in u] == ["my password is hunter2"]


def test_remote_agent_tool_keeps_its_session_across_turns_and_parallel_calls():
    app = create_app(chatty, name="helper")
    with running_app(app) as url:
        remote = RemoteAgentTool(url)
        # Three calls: two in one plan (in parallel), then a follow-up.
        parent = Agent(
            [
                {"tool_calls": [{"helper": {"task": "one"}}, {"helper": {"task": "two"}}]},
                {"tool_calls": [{"helper": {"task": "three"}}]},
                {"content": "done"},
            ],
            [remote],
        )
        result = parent.run("go")
        sessions = app.state.sessions
    assert sorted(r.result for r in result.tool_calls[:2]) == ["answer 1", "answer 2"]
    assert result.tool_calls[2].result == "answer 3"
    assert len(sessions) == 1


def test_a_session_dropped_to_make_room_loses_its_tasks_at_once():
    # The guard deletes them when it admits the message that dropped it, before any other
    # request comes (a missed await there would leave them in the store).
    app = create_app(chatty, max_sessions=1)
    with running_app(app) as url:

        async def main():
            async with Client(url) as first, Client(url) as second:
                old = await first.send("hello")
                owner = ServerCallContext(user=SessionUser(app.state.sessions.get(old.context_id)))
                assert await app.state.task_store.get(old.id, owner) is not None
                await second.send("hello")
                return await app.state.task_store.get(old.id, owner)

        assert asyncio.run(main()) is None
        assert len(app.state.sessions) == 1


# -- bounds ------------------------------------------------------------------------------------


def _refusal(url: str, text: str, context_id: str, headers: dict | None = None) -> dict:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": text}],
                "contextId": context_id,
            }
        },
    }
    return httpx.post(url, json=body, headers={**V1, **(headers or {})}, timeout=60).json()


def test_a_message_a_context_id_and_a_session_past_their_bounds_are_refused():
    app = create_app(chatty, max_message=10_000, max_session=30_000)
    with running_app(app) as url:
        big = _refusal(url, "x" * 20_000, "c-big")
        long_id = _refusal(url, "hi", "c" * 100_000)

        async def fill():
            async with Client(url) as client:
                task = await client.send("y" * 9_000)
                refused = None
                for _ in range(10):
                    try:
                        await client.send("y" * 9_000, task.context_id)
                    except InvalidRequestError as exc:
                        refused = exc
                        break
                return task.context_id, refused

        context, refused = asyncio.run(fill())
        after = asyncio.run(_one(url))
        kept = app.state.sessions.get(context).openai_messages()
    assert big["error"]["code"] == -32600
    assert "20,0" in big["error"]["message"] and "at most 10,000" in big["error"]["message"]
    assert long_id["error"]["code"] == -32600 and "contextId" in long_id["error"]["message"]
    assert len(json.dumps(long_id)) < 1000
    assert "c" * 200 not in "".join(app.state.sessions._sessions)
    assert refused is not None and "full" in str(refused) and "--max-session" in str(refused)
    assert len(json.dumps(kept)) <= 30_000
    assert text_of(after) == "answer 1"  # the server goes on serving others


def test_a_body_larger_than_any_message_is_refused_before_it_is_parsed():
    app = create_app(chatty)  # the default limits: messages of 256 KiB
    with running_app(app) as url:
        huge_id = _refusal(url, "hello", "c" * 3_900_000)
        huge_text = _refusal(url, "x" * 3_900_000, "")
        after = asyncio.run(_one(url))
    for refused in (huge_id, huge_text):
        assert refused["error"]["code"] == -32600
        assert "the limit is 2162688 bytes" in refused["error"]["message"]
    assert len(app.state.sessions) == 1  # the one of the request after them
    assert text_of(after) == "answer 1"


async def _one(url: str):
    async with Client(url) as client:
        return await client.send("still there?")


class Gate:
    """A tool whose calls wait until the test opens the gate (turns held running)."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.entered = threading.Semaphore(0)

    def agent(self) -> Agent:
        @tool
        async def wait() -> str:
            """Wait for the gate."""
            self.entered.release()
            await asyncio.to_thread(self.opened.wait, 60)
            return "through"

        return Agent([{"tool_calls": [{"wait": {}}]}, {"content": "done"}], [wait])


def _hold(url: str, count: int, gate: Gate) -> list[threading.Thread]:
    threads = [
        threading.Thread(target=lambda: asyncio.run(_one(url)), daemon=True) for _ in range(count)
    ]
    for thread in threads:
        thread.start()
    for _ in range(count):
        assert gate.entered.acquire(timeout=60)
    return threads


def test_busy_sessions_never_exceed_max_sessions_and_running_turns_are_bounded():
    gate = Gate()
    app = create_app(gate.agent, max_sessions=3, max_turns=5)
    with running_app(app) as url:
        threads = _hold(url, 3, gate)  # three sessions, each in a turn
        refused = _refusal(url, "one more", "c-new")
        sessions = len(app.state.sessions)
        gate.opened.set()
        for thread in threads:
            thread.join(60)
    assert refused["error"]["code"] == -32600
    assert "--max-sessions" in refused["error"]["message"]
    assert sessions == 3

    gate = Gate()
    app = create_app(gate.agent, max_sessions=100, max_turns=2)
    with running_app(app) as url:
        threads = _hold(url, 2, gate)
        refused = _refusal(url, "one more", "c-new")
        gate.opened.set()
        for thread in threads:
            thread.join(60)
        after = _refusal(url, "now?", "c-after")
    assert refused["error"]["code"] == -32600 and "--max-turns" in refused["error"]["message"]
    assert "result" in after  # the turns are given back when they end


# -- slow clients and bad bodies ---------------------------------------------------------------


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _slow_clients(host: str, port: int, count: int) -> list[socket.socket]:
    """``count`` connections that send half a request head and then nothing."""
    clients = []
    for _ in range(count):
        sock = socket.create_connection((host, port), timeout=30)
        sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: app")
        clients.append(sock)
    return clients


def _closed_by_server(sock: socket.socket) -> bool:
    try:
        while True:
            data = sock.recv(4096)  # a 503 for those over the limit, then the close
            if not data:
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    finally:
        sock.close()


def _a2a_app():
    return create_app(chatty), running_app, "/.well-known/agent-card.json"


def _serve_app():
    from harness.serve import create_app as serve_create_app
    from harness.serve import running_app as serve_running_app

    return serve_create_app([]), serve_running_app, "/models"


class Lines(logging.Handler):
    """The lines a logger writes (uvicorn's do not reach pytest's caplog)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.mark.parametrize("make", [_a2a_app, _serve_app], ids=["agent-serve", "serve"])
def test_slow_header_connections_are_closed_and_counted_not_held(make, caplog):
    app, running, path = make()
    limits = ServerLimits(request_timeout=0.5, max_connections=100)
    before = _open_fds()
    server_log, lines = logging.getLogger("uvicorn.error"), Lines()
    with caplog.at_level(logging.INFO), running(app, limits=limits) as url:
        server_log.addHandler(lines)  # after uvicorn set up its loggers
        try:
            host, port = httpx.URL(url).host, httpx.URL(url).port
            clients = _slow_clients(host, port, 300)
            closed = [_closed_by_server(sock) for sock in clients]
            served = httpx.get(url.rstrip("/") + path, timeout=30)
            held = _open_fds() - before
        finally:
            server_log.removeHandler(lines)
    assert all(closed), f"{closed.count(False)} slow connections were held open"
    assert served.status_code == 200
    assert held < 20  # the server's listening socket and a few of its own, not 300
    # One line says what was cut off, not one per connection.
    assert len(lines.lines) == 1 and "cut off slow or surplus clients" in lines.lines[0]
    others = [r for r in caplog.records if r.name.startswith(("harness", "asyncio"))]
    assert others == []


def _pool_expiry(client: httpx.Client | httpx.AsyncClient) -> float:
    """Seconds an idle connection stays in ``client``'s pool for reuse (httpcore's own
    setting: no public accessor)."""
    return float(client._transport._pool._keepalive_expiry)  # type: ignore[attr-defined]


def test_the_servers_keep_idle_connections_longer_than_the_official_clients_reuse_them():
    # A client reuses an idle connection until its own expiry; a server that closes it
    # first races the client's next request, which fails with a ReadError (seen in CI:
    # fifty a2a-sdk sessions at uvicorn's 5 s against httpx's 5 s).
    from anthropic import Anthropic
    from google import genai
    from openai import OpenAI

    base = "http://127.0.0.1:9"  # never contacted: the clients are only built
    clients = {
        "openai": OpenAI(api_key="k", base_url=base)._client,
        "anthropic": Anthropic(api_key="k", base_url=base)._client,
        "google-genai": genai.Client(
            api_key="k", http_options={"base_url": base}
        )._api_client._httpx_client,
        # a2a-sdk's create_client makes a default httpx.AsyncClient when given none.
        "a2a-sdk": httpx.AsyncClient(),
    }
    expiries = {name: _pool_expiry(client) for name, client in clients.items()}
    assert all(expiry < ServerLimits().keep_alive for expiry in expiries.values()), expiries


@pytest.mark.parametrize("make", [_a2a_app, _serve_app], ids=["agent-serve", "serve"])
def test_a_kept_alive_connection_serves_again_then_is_closed_once_idle(make):
    app, running, path = make()
    with running(app, limits=ServerLimits(keep_alive=1)) as url:
        where = httpx.URL(url.rstrip("/") + path)
        connection = http.client.HTTPConnection(where.host, where.port, timeout=10)
        try:
            statuses = []
            for _ in range(2):  # the second request on the same connection
                connection.request("GET", where.path)
                answer = connection.getresponse()
                answer.read()
                statuses.append(answer.status)
            sock = connection.sock
            # Idle past keep_alive: the server closes it (recv gives b"" at its close).
            closed = sock is not None and sock.recv(1) == b""
        finally:
            connection.close()
    assert statuses == [200, 200]
    assert closed


def test_a_malformed_json_rpc_body_logs_one_line_not_a_traceback(caplog):
    with running_app(create_app(chatty)) as url, caplog.at_level(logging.INFO):
        bodies = [
            {"hello": 1},
            {"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"x": [1]}},
            {"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {"x": 1}},
        ]
        for body in bodies:
            caplog.clear()
            answer = httpx.post(url, json=body, headers=V1).json()
            assert "error" in answer
            records = [r for r in caplog.records if r.name.startswith("a2a")]
            assert len(records) <= 1, [r.getMessage() for r in records]
            assert all(r.exc_info is None and "\n" not in r.getMessage() for r in records)
            assert "Traceback" not in caplog.text
