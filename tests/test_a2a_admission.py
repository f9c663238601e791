"""Who the agent server lets in and how much it keeps, at the edges: tokens that are too
short or presented under another scheme, credentials kept past the check, a session one
message past its bound.

Each test failed against a hand-made mutant that the other A2A tests let pass
(scripts/mutation.py).
"""

from __future__ import annotations

import httpx
import pytest
from starlette.requests import Request

from harness import Agent
from harness.a2a import create_app, running_app
from harness.a2a._guard import Callers, SessionCallContextBuilder
from harness.a2a._sessions import KEPT_OVERHEAD, TASK_OVERHEAD, Refused, Sessions

ALICE = "alice-token-0123456789abcdef"


def chatty() -> Agent:
    return Agent([{"content": f"answer {n}"} for n in range(1, 10)])


def test_a_caller_token_shorter_than_16_characters_is_refused_where_the_app_is_made():
    # A short token is guessable; the server would take it from whoever tries it.
    with pytest.raises(ValueError, match="16 characters or more"):
        create_app(chatty, callers={"abc123": "alice"})
    with pytest.raises(ValueError, match="16 characters or more"):
        Callers({"x" * 15: "alice"})
    assert Callers({"x" * 16: "alice"}).named("Bearer " + "x" * 16) == "alice"


def test_a_token_under_another_scheme_than_bearer_is_no_caller():
    # The card declares bearer: "Basic TOKEN", or the token bare, authenticates nobody.
    with running_app(create_app(chatty, callers={ALICE: "alice"})) as url:
        answers = {
            given: httpx.get(f"{url}/sessions/nosuch", headers={"Authorization": given})
            for given in (f"Basic {ALICE}", ALICE, f"Bearer {ALICE}")
        }
    assert answers[f"Basic {ALICE}"].status_code == 401
    assert answers[ALICE].status_code == 401
    assert answers[f"Bearer {ALICE}"].status_code == 404  # known: the session is not there
    callers = Callers({ALICE: "alice"})
    assert callers.named(f"Basic {ALICE}") is None
    assert callers.named(f"bearer {ALICE}") == "alice"  # the scheme's name is not case-sensitive


def test_the_call_context_keeps_no_caller_credentials():
    # Each call's context goes to a2a-sdk's handler and harness's executor: the caller's
    # name is what they need, the token stays out of it (never logged, never in a task).
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/",
        "headers": [
            (b"authorization", f"Bearer {ALICE}".encode()),
            (b"a2a-version", b"1.0"),
        ],
        "query_string": b"",
    }
    builder = SessionCallContextBuilder(Callers({ALICE: "alice"}))
    context = builder.build(Request(scope))
    assert context.user.user_name == "caller:alice"
    headers = context.state.get("headers", {})
    assert "authorization" not in {k.lower() for k in headers}
    assert ALICE not in repr(context.state)


def test_a_session_is_refused_the_message_that_would_take_it_past_its_bound():
    # The bound counts what the message adds: a session is never over --max-session.
    cost = TASK_OVERHEAD + 900 + KEPT_OVERHEAD
    sessions = Sessions(chatty, max_message=1000, max_session=cost + cost // 2)
    first = sessions.admit("ctx", None, 900)
    sessions.finish(first, 0)
    with pytest.raises(Refused, match="is full"):
        sessions.admit("ctx", None, 900)
    session = sessions.get("ctx")
    assert session is not None and session.size == cost <= sessions.max_session


def test_a_context_id_longer_than_128_characters_is_refused():
    # A client-chosen contextId is kept in every task and status update of its session.
    sessions = Sessions(chatty)
    with pytest.raises(Refused, match="the contextId is 129 characters"):
        sessions.admit("c" * 129, None, 10)
    assert sessions.admit("c" * 128, None, 10).session.context_id == "c" * 128


def test_a_request_that_ends_before_its_turn_gives_its_turn_back():
    # A client that goes away while its message waits must not keep a turn slot: with
    # --max-turns 1 the next client would be refused for ever.
    sessions = Sessions(chatty, max_turns=1)
    waiting = sessions.admit("one", None, 10)
    with pytest.raises(Refused, match="busy"):
        sessions.admit("two", None, 10)
    sessions.give_back(waiting)
    assert sessions.running == 0 and sessions.get("one").pending == 0
    sessions.finish(sessions.admit("two", None, 10), 0)
    assert sessions.running == 0


def test_a_context_id_used_again_after_its_session_expired_is_a_new_owner():
    # Without callers the contextId is the capability: a session made again under an
    # expired one's contextId (by whoever guessed or reused it) must not own, and so see,
    # the earlier session's tasks. Nor do two sessions ever share an owner.
    now = [0.0]
    sessions = Sessions(chatty, ttl=60, clock=lambda: now[0])
    first = sessions.admit("ctx", None, 10)
    sessions.finish(first, 0)
    later = sessions.admit("other", None, 10)
    sessions.finish(later, 0)
    other = later.session
    now[0] = 120.0
    assert {s.context_id for s in sessions.sweep()} == {"ctx", "other"}
    again = sessions.admit("ctx", None, 10).session
    owners = {first.session.owner, other.owner, again.owner}
    assert len(owners) == 3


def test_a_chunked_body_past_the_limit_is_refused_without_a_declared_length():
    # No Content-Length to refuse it by (Transfer-Encoding: chunked): the body is counted
    # as it comes, and one past the limit gets the 413, never reaching a2a-sdk.
    def pieces():
        for _ in range(4):
            yield b" " * 500

    with running_app(create_app(chatty, max_body=1000)) as url:
        answer = httpx.post(
            url + "/", content=pieces(), headers={"content-type": "application/json"}
        )
    assert answer.status_code == 413
    assert "the limit is 1000 bytes" in answer.text
