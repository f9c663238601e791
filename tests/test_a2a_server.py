"""The A2A agent server (harness.a2a.create_app) over real HTTP on 127.0.0.1, driven by
a2a-sdk's own client: sessions, save and load, the streamed status, errors."""

from __future__ import annotations

import asyncio
import json
import uuid

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_artifact_text, get_message_text
from a2a.server.context import ServerCallContext
from a2a.types import GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState

from harness import Agent, tool
from harness.a2a import create_app, running_app
from harness.a2a._guard import SessionUser
from harness.a2a._sessions import Refused, Sessions

pytestmark = pytest.mark.timeout(120)

V1 = {"A2A-Version": "1.0"}


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def two_turns() -> Agent:
    """A scripted agent whose script serves two turns: a tool round, then one reply."""
    return Agent(
        [
            {"tool_calls": [{"add": {"a": 1, "b": 2}}, {"add": {"a": 3, "b": 4}}]},
            {"content": "The sums are 3 and 7."},
            {"content": "Second answer."},
        ],
        [add],
        max_iterations=6,
    )


def message(text: str, context_id: str) -> SendMessageRequest:
    return SendMessageRequest(
        message=Message(
            message_id=str(uuid.uuid4()),
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
            context_id=context_id,
        )
    )


async def send(url: str, text: str, context_id: str, *, streaming: bool = False) -> list:
    """Every StreamResponse of one message (one, the final task, when not streaming)."""
    client = await create_client(url, client_config=ClientConfig(streaming=streaming))
    try:
        request = message(text, context_id)
        return [event async for event in client.send_message(request)]
    finally:
        await client.close()


def answer(events: list) -> str:
    task = events[-1].task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED, task.status
    return "\n".join(get_artifact_text(a) for a in task.artifacts)


def test_fifty_concurrent_sessions_each_hold_only_their_own_messages():
    app = create_app(two_turns)
    with running_app(app) as url:

        async def session(n: int, http: httpx.AsyncClient) -> tuple[list, list]:
            context = f"ctx-{n}"
            client = await create_client(
                url, client_config=ClientConfig(streaming=False, httpx_client=http)
            )
            replies = []
            for turn in ("first", "second"):
                request = message(f"{turn} {n}", context)
                events = [e async for e in client.send_message(request)]
                replies.append(answer(events))
            saved = (await http.get(f"{url}/sessions/{context}")).json()
            return replies, saved["messages"]

        async def main() -> list:
            limits = httpx.Limits(max_connections=100)
            async with httpx.AsyncClient(timeout=60, limits=limits) as http:
                return await asyncio.gather(*(session(n, http) for n in range(50)))

        results = asyncio.run(main())
    for n, (replies, messages) in enumerate(results):
        # A fresh LLM source per session: every session's script starts at its first step.
        assert replies == ["The sums are 3 and 7.", "Second answer."]
        users = [m["content"] for m in messages if m["role"] == "user"]
        assert users == [f"first {n}", f"second {n}"]
        assert [m["role"] for m in messages] == [
            "user",
            "assistant",
            "tool",
            "tool",
            "assistant",
            "user",
            "assistant",
        ]
    assert len(app.state.sessions) == 50


def test_a_saved_session_loaded_into_a_new_server_continues_where_it_was():
    with running_app(create_app(two_turns)) as url:
        events = asyncio.run(send(url, "add things", "saved"))
        assert answer(events) == "The sums are 3 and 7."
        saved = httpx.get(f"{url}/sessions/saved").json()

    # A server that never saw the session: the saved conversation is loaded into it.
    def remembers() -> Agent:
        return Agent([{"content": "You asked me to add things."}])

    app = create_app(remembers)
    with running_app(app) as url:
        created = httpx.post(f"{url}/sessions", json={"messages": saved["messages"]})
        assert created.status_code == 201
        context = created.json()["contextId"]
        assert created.json()["messages"] == len(saved["messages"])
        reply = answer(asyncio.run(send(url, "what did I ask?", context)))
        assert reply == "You asked me to add things."
        after = httpx.get(f"{url}/sessions/{context}").json()["messages"]
    assert after[: len(saved["messages"])] == saved["messages"]
    assert after[len(saved["messages"]) :] == [
        {"role": "user", "content": "what did I ask?"},
        {"role": "assistant", "content": "You asked me to add things."},
    ]


def _updates(events: list) -> list[tuple[str, ...]]:
    """The stream as (kind, state, text) rows, kind being task / status / text / artifact."""
    rows: list[tuple[str, ...]] = []
    for event in events:
        payload = event.WhichOneof("payload")
        if payload == "task":
            rows.append(("task", TaskState.Name(event.task.status.state)))
        elif payload == "status_update":
            update = event.status_update
            state = TaskState.Name(update.status.state)
            text = get_message_text(update.status.message) if update.status.message else ""
            kind = dict(update.metadata).get("kind", "final")
            rows.append((kind, state, text))
        elif payload == "artifact_update":
            rows.append(
                (
                    "artifact",
                    event.artifact_update.artifact.name,
                    get_artifact_text(event.artifact_update.artifact),
                )
            )
    return rows


def test_streamed_status_comes_in_the_seeds_order_with_its_texts():
    with running_app(create_app(two_turns)) as url:
        events = asyncio.run(send(url, "add things", "s1", streaming=True))
    working = "TASK_STATE_WORKING"
    updates = _updates(events)
    # The model's text comes as it is generated, in pieces, between the same updates.
    pieces = [u[2] for u in updates if u[0] == "text"]
    assert len(pieces) > 1
    first = next(i for i, u in enumerate(updates) if u[0] == "text")
    updates = [u for u in updates if u[0] != "text"]
    updates.insert(first, ("text", working, "".join(pieces)))
    assert updates == [
        ("task", "TASK_STATE_SUBMITTED"),
        ("status", working, "Agentic iteration 1/6"),
        ("status", working, "Agentic iteration 2/6"),
        ("status", working, "Executing 2 tool call(s)"),
        ("status", working, "Tool add finished"),
        ("status", working, "Tool add finished"),
        ("status", working, "Agentic iteration 3/6"),
        ("text", working, "The sums are 3 and 7."),
        ("status", working, "Agentic iteration 4/6"),
        ("artifact", "answer", "The sums are 3 and 7."),
        ("final", "TASK_STATE_COMPLETED", ""),
    ]


def test_a_tool_that_raised_is_streamed_as_failed():
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        raise KeyError(key)

    def failing() -> Agent:
        script = [{"tool_calls": [{"lookup": {"key": "k"}}]}, {"content": "Not found."}]
        return Agent(script, [lookup, add], max_iterations=6)

    with running_app(create_app(failing)) as url:
        events = asyncio.run(send(url, "look it up", "f1", streaming=True))
    statuses = [u[2] for u in _updates(events) if u[0] == "status"]
    assert "Tool lookup failed" in statuses
    assert "Tool lookup finished" not in statuses


def test_the_iteration_limit_fails_the_task_with_max_iterations_reached():
    def looping() -> Agent:
        return Agent(
            [{"tool_calls": [{"add": {"a": n, "b": 1}}]} for n in range(5)], [add], max_iterations=2
        )

    with running_app(create_app(looping)) as url:
        events = asyncio.run(send(url, "loop", "m1", streaming=True))
        final = asyncio.run(send(url, "loop again", "m2"))
    assert _updates(events)[-1] == ("final", "TASK_STATE_FAILED", "Max iterations reached")
    task = final[-1].task
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert get_message_text(task.status.message) == "Max iterations reached"


def test_get_task_and_the_v0_3_method_names_are_served():
    with running_app(create_app(two_turns)) as url:
        events = asyncio.run(send(url, "add things", "c1"))
        first = events[-1].task

        async def get() -> object:
            client = await create_client(url, client_config=ClientConfig(streaming=False))
            try:
                return await client.get_task(GetTaskRequest(id=first.id))
            finally:
                await client.close()

        fetched = asyncio.run(get())
        old = httpx.post(
            url,
            json={
                "jsonrpc": "2.0",
                "id": 7,
                "method": "message/send",
                "params": {
                    "message": {
                        "messageId": "m-old",
                        "role": "user",
                        "parts": [{"kind": "text", "text": "and again"}],
                        "contextId": "c1",
                    }
                },
            },
        ).json()
    assert fetched.id == first.id and fetched.status.state == TaskState.TASK_STATE_COMPLETED
    assert old["id"] == 7
    assert old["result"]["status"]["state"] == "completed"
    # The same session: its script went on to the next step.
    assert old["result"]["artifacts"][0]["parts"][0]["text"] == "Second answer."


def test_bad_requests_get_a2a_error_objects_and_the_server_keeps_serving():
    app = create_app(two_turns, max_body=10_000)
    with running_app(app) as url:
        post = lambda body, **kw: httpx.post(url, content=body, headers=V1, **kw)  # noqa: E731
        cases = {
            "not json": post(b"{not json"),
            "not json-rpc": post(json.dumps({"hello": 1})),
            "unknown method": post(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "Fly"})),
            "bad params": post(
                json.dumps(
                    {"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"x": [1]}}
                )
            ),
            "unknown task": post(
                json.dumps(
                    {"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "nope"}}
                )
            ),
            "too large": post(b"x" * 20_000),
            "unknown session": httpx.get(f"{url}/sessions/never"),
            "bad saved session": httpx.post(f"{url}/sessions", json={"messages": [{"role": 5}]}),
            "no such path": httpx.get(f"{url}/nowhere"),
        }
        # Still serving, and still correct.
        assert answer(asyncio.run(send(url, "add things", "after"))) == "The sums are 3 and 7."
    codes = {name: response.json()["error"]["code"] for name, response in cases.items()}
    assert codes == {
        "not json": -32700,
        "not json-rpc": -32600,
        "unknown method": -32601,
        "bad params": -32602,
        "unknown task": -32001,
        "too large": -32600,
        "unknown session": -32001,
        "bad saved session": -32602,
        "no such path": -32601,
    }
    assert cases["too large"].status_code == 413
    assert "limit is 10000 bytes" in cases["too large"].json()["error"]["message"]
    assert cases["unknown session"].status_code == 404
    for response in cases.values():
        assert "Traceback" not in response.text


def test_a_chunked_body_over_the_limit_is_refused_too():
    app = create_app(two_turns, max_body=1000)
    with running_app(app) as url:

        def chunks():
            for _ in range(10):
                yield b"x" * 500

        response = httpx.post(url, content=chunks(), headers=V1)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == -32600


def test_idle_sessions_expire_and_their_tasks_are_dropped():
    now = [0.0]
    app = create_app(two_turns, session_ttl=60, max_sessions=100, clock=lambda: now[0])
    with running_app(app) as url:
        events = asyncio.run(send(url, "add things", "old"))
        task = events[-1].task
        store = app.state.task_store
        session = app.state.sessions.get("old")
        as_owner = ServerCallContext(user=SessionUser(session))
        assert asyncio.run(store.get(task.id, as_owner)) is not None
        now[0] = 61.0  # no sleeping: the server's clock moves
        assert httpx.get(f"{url}/sessions/old").status_code == 404
        assert "old" not in app.state.sessions
        gone = httpx.post(
            url,
            headers=V1,
            json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task.id}},
        ).json()
        assert gone["error"]["code"] == -32001
        assert asyncio.run(store.get(task.id, as_owner)) is None
        # The context starts a new session, from the first step of the script.
        again = asyncio.run(send(url, "add things", "old"))
        assert answer(again) == "The sums are 3 and 7."
    assert store is app.state.task_store


def test_at_most_max_sessions_are_kept_least_recently_used_dropped_first():
    sessions = Sessions(two_turns, ttl=1000, max_sessions=3, clock=lambda: 0.0)
    for name in ("a", "b", "c"):
        sessions.open(name)
    sessions.get("a")  # used: b is now the least recently used
    sessions.open("d")  # a new session makes room at once
    assert [s.context_id for s in sessions.take_dropped()] == ["b"]
    assert [name for name in "abcd" if name in sessions] == ["a", "c", "d"]


def test_a_busy_session_is_not_dropped_while_its_turn_runs():
    sessions = Sessions(two_turns, ttl=10, max_sessions=2, clock=lambda: 100.0)
    busy = sessions.open("busy")
    sessions.open("idle")

    async def hold() -> None:
        async with busy.lock:
            # At the maximum, the idle one makes room although the busy one was used
            # longer ago; with only busy ones left, a new session is refused.
            sessions.open("other")
            assert [s.context_id for s in sessions.take_dropped()] == ["idle"]
            other = sessions.admit("other", None, 10)
            with pytest.raises(Refused, match="--max-sessions"):
                sessions.open("more")
            sessions.finish(other, 0)

    asyncio.run(hold())
    assert "busy" in sessions and "more" not in sessions


def test_a_factory_that_does_not_make_an_agent_fails_the_task_with_a_reason():
    with running_app(create_app(lambda: "not an agent")) as url:
        task = asyncio.run(send(url, "hello", "x"))[-1].task
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert "must return a harness.Agent" in get_message_text(task.status.message)


def test_the_agent_card_names_the_agent_and_the_address_it_was_asked_at():
    app = create_app(two_turns, name="adder", description="Adds numbers")
    with running_app(app) as url:
        card = httpx.get(f"{url}/.well-known/agent-card.json").json()
    assert card["name"] == "adder" and card["description"] == "Adds numbers"
    assert card["supportedInterfaces"][0]["url"] == f"{url}/"
    assert card["capabilities"]["streaming"] is True
