"""Sessions of the agent server: one per A2A ``contextId``, each with its own Agent
(so its own LLM source) and its own Conversation; and the bounds that keep the server's
memory bounded whatever its clients send.

Who may touch a session is the A2A protocol's rule (harness.a2a._guard checks it): when
the server is given callers (bearer tokens, declared in the agent card), a session
belongs to the caller that started it; otherwise the ``contextId`` itself is the
capability, as A2A has it: the server names a new session with a random UUID (122
random bits) and whoever presents it continues the session. Every message is admitted
before it runs (``admit``): past a bound (the size of a message, of a contextId, of a
session; the number of sessions; the turns running or waiting) it is refused with
``Refused``, whose text says which bound and the flag that sets it. Idle sessions
expire, the least recently used idle one makes room for a new one, and a session
running a turn is never dropped.

Nothing here imports a2a-sdk: the store is plain data and asyncio locks.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness._messages import Conversation

__all__ = [
    "DEFAULT_MAX_MESSAGE",
    "DEFAULT_MAX_SESSION",
    "DEFAULT_MAX_SESSIONS",
    "DEFAULT_MAX_TURNS",
    "DEFAULT_SESSION_TTL",
    "KEPT_OVERHEAD",
    "MAX_CONTEXT_ID",
    "TASK_OVERHEAD",
    "Refused",
    "Session",
    "Sessions",
    "Ticket",
    "caller_owner",
    "conversation_size",
    "kept",
]

DEFAULT_SESSION_TTL = 3600.0
DEFAULT_MAX_SESSIONS = 1000
DEFAULT_MAX_MESSAGE = 256 * 1024
DEFAULT_MAX_SESSION = 2 * 1024 * 1024
DEFAULT_MAX_TURNS = 100
# A contextId names a session in every task and status update: ours are 36 characters.
MAX_CONTEXT_ID = 128
# What the server's memory holds beyond the encoded bytes (Python and protobuf objects),
# counted so that many small turns fill a session as they fill memory. Measured per
# turn, counted against RSS: an empty message 4.3 KB against 3.7, a short question and
# answer 7.9 against 8.1, an answer streamed in 200 words 136 against 109.
KEPT_OVERHEAD = 512
TASK_OVERHEAD = 3072


class Refused(Exception):
    """A message or session the server does not take: past a bound, or another client's
    session. The text says which, and what to do."""


def caller_owner(caller: str) -> str:
    """The task store's owner of an authenticated caller's tasks."""
    return f"caller:{caller}"


def kept(size: int) -> int:
    """What keeping a message of ``size`` encoded bytes costs a session."""
    return size + KEPT_OVERHEAD


def conversation_size(messages: list[dict[str, Any]]) -> int:
    """What keeping ``messages`` (OpenAI form) costs a session: their JSON bytes each."""
    return sum(kept(len(json.dumps(m, ensure_ascii=False).encode())) for m in messages)


@dataclass(eq=False)
class Session:
    """One conversation with the served agent (an A2A context)."""

    context_id: str
    # Who owns this session's tasks in the task store: its caller's (so ListTasks shows
    # a caller its own sessions' tasks), or unique to this session without callers, so a
    # later session of the same contextId never sees them.
    owner: str
    # The authenticated caller that started it (None on a server without callers).
    caller: str | None = None
    # Made at the first turn (a factory that fails fails that turn's task), or when a
    # saved conversation is loaded.
    agent: Any = None
    # None until the first turn: the agent's own system prompt starts a new session.
    conversation: Conversation | None = None
    last_used: float = 0.0
    # The A2A tasks of this session, deleted from the task store when it is dropped.
    task_ids: list[str] = field(default_factory=list)
    # One turn at a time per session; turns of different sessions run concurrently.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    turns: int = 0
    # Bytes the session holds: its conversation and what its tasks keep (the messages
    # it was sent, the status updates and answers it sent back), each counted with the
    # objects around it (KEPT_OVERHEAD, TASK_OVERHEAD).
    size: int = 0
    # Turns admitted and not over (running, or waiting for the one before).
    pending: int = 0

    @property
    def busy(self) -> bool:
        """A turn is running or waiting (a busy session is never dropped)."""
        return self.pending > 0 or self.lock.locked()

    def openai_messages(self) -> list[dict[str, Any]]:
        """The conversation in OpenAI (Chat Completions) form."""
        return self.conversation.to_openai() if self.conversation is not None else []


@dataclass(eq=False)
class Ticket:
    """One admitted message: its session and the bytes reserved for it."""

    session: Session
    size: int
    started: bool = False
    over: bool = False


class Sessions:
    """Sessions by context id, least recently used first, and their bounds.

    ``ttl``: seconds a session may stay idle; ``max_sessions``: how many are kept (the
    least recently used idle one makes room for a new one; when all are busy a new one
    is refused); ``max_message``: bytes of one message; ``max_session``: bytes a session
    may hold; ``max_turns``: turns running or waiting at once. ``clock`` is for tests
    (a fake clock instead of sleeping). Expired sessions are dropped when the store is
    next used (every request uses it), so no background task is needed; dropped
    sessions wait in ``dropped`` until their tasks are deleted from the task store.
    """

    def __init__(
        self,
        agent_factory: Callable[[], Any],
        *,
        ttl: float = DEFAULT_SESSION_TTL,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        max_message: int = DEFAULT_MAX_MESSAGE,
        max_session: int = DEFAULT_MAX_SESSION,
        max_turns: int = DEFAULT_MAX_TURNS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.agent_factory = agent_factory
        self.ttl = ttl
        self.max_sessions = max_sessions
        self.max_message = max_message
        self.max_session = max_session
        self.max_turns = max_turns
        self.clock = clock
        self.running = 0
        self.dropped: list[Session] = []
        self._sessions: OrderedDict[str, Session] = OrderedDict()
        self._tasks: dict[str, Session] = {}  # task id -> its session
        self._owners = itertools.count(1)

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, context_id: str) -> bool:
        return context_id in self._sessions

    def get(self, context_id: str) -> Session | None:
        """The live session of ``context_id`` (marked used), or None."""
        session = self._sessions.get(context_id)
        if session is not None:
            self._touch(session)
        return session

    def by_task(self, task_id: str) -> Session | None:
        """The live session whose task ``task_id`` is, or None."""
        return self._tasks.get(task_id)

    def add_task(self, session: Session, task_id: str) -> None:
        """``task_id`` is a task of ``session`` (deleted from the task store with it)."""
        session.task_ids.append(task_id)
        self._tasks[task_id] = session

    # -- admitting messages ------------------------------------------------------------------

    def admit(self, context_id: str, caller: str | None, size: int) -> Ticket:
        """Admit a message of ``size`` bytes to ``context_id``'s session, made when there
        is none; ``caller`` is the authenticated caller (None on a server without callers,
        where the contextId is the capability).

        Refused past a bound, or when the session is another caller's.
        """
        self._check_context_id(context_id)
        if size > self.max_message:
            raise Refused(
                f"the message is {size:,} bytes; this server takes at most "
                f"{self.max_message:,} (--max-message): send a shorter one"
            )
        if self.running >= self.max_turns:
            raise Refused(
                f"the server is busy: {self.running} turns are running or waiting, its "
                f"limit (--max-turns {self.max_turns}); try again when one is over"
            )
        # The task the message makes, and the message in its history.
        cost = TASK_OVERHEAD + kept(size)
        session = self._sessions.get(context_id)
        if session is None:
            session = self._create(context_id, caller)
        elif session.caller != caller:
            raise Refused(
                f"context {context_id!r} is another caller's session: start one of your "
                "own (leave contextId out and the server names it)"
            )
        elif session.size + cost > self.max_session:
            raise Refused(
                f"session {context_id!r} is full: it holds {session.size:,} bytes and "
                f"takes at most {self.max_session:,} (--max-session); start a new session"
            )
        self._touch(session)
        session.size += cost
        session.pending += 1
        self.running += 1
        return Ticket(session, cost)

    def start(self, ticket: Ticket) -> bool:
        """The ticket's turn starts; False when its request ended first (given back)."""
        if ticket.over:
            return False
        ticket.started = True
        return True

    def finish(self, ticket: Ticket, growth: int) -> None:
        """The ticket's turn is over, having added ``growth`` bytes to its session."""
        if ticket.over:
            return
        ticket.over = True
        session = ticket.session
        session.size += max(0, growth)
        session.pending -= 1
        self.running -= 1
        self._touch(session)

    def give_back(self, ticket: Ticket) -> None:
        """The ticket's request ended before its turn started: undo the admission."""
        if ticket.started or ticket.over:
            return
        ticket.over = True
        ticket.session.size -= ticket.size
        ticket.session.pending -= 1
        self.running -= 1

    # -- making and dropping sessions ----------------------------------------------------------

    def open(
        self,
        context_id: str,
        conversation: Conversation | None = None,
        caller: str | None = None,
    ) -> Session:
        """A new session of ``context_id`` (a saved ``conversation`` loaded into it), the
        ``caller``'s; Refused past a bound or when the context has a session."""
        self._check_context_id(context_id)
        if context_id in self._sessions:
            raise Refused(f"session {context_id!r} exists; give another contextId")
        size = conversation_size(conversation.to_openai()) if conversation is not None else 0
        if size > self.max_session:
            raise Refused(
                f"the conversation is {size:,} bytes; a session holds at most "
                f"{self.max_session:,} (--max-session)"
            )
        agent = self.agent_factory()  # first: a factory that fails changes nothing
        session = self._create(context_id, caller)
        session.agent, session.conversation, session.size = agent, conversation, size
        return session

    def _check_context_id(self, context_id: str) -> None:
        if len(context_id) > MAX_CONTEXT_ID:
            raise Refused(
                f"the contextId is {len(context_id):,} characters; this server takes at most "
                f"{MAX_CONTEXT_ID}: leave it out and the server gives one"
            )

    def _create(self, context_id: str, caller: str | None) -> Session:
        self.dropped += self.sweep(room=1)
        if len(self._sessions) >= self.max_sessions:
            raise Refused(
                f"the server holds {len(self._sessions)} sessions (--max-sessions), all "
                "running a turn; try again when one is over"
            )
        owner = caller_owner(caller) if caller is not None else f"session-{next(self._owners)}"
        session = Session(context_id, owner=owner, caller=caller)
        self._sessions[context_id] = session
        self._touch(session)
        return session

    def _touch(self, session: Session) -> None:
        session.last_used = self.clock()
        self._sessions.move_to_end(session.context_id)

    def take_dropped(self) -> list[Session]:
        """Sessions dropped since the last call (their tasks are still in the task store)."""
        dropped, self.dropped = self.dropped, []
        return dropped

    def sweep(self, room: int = 0) -> list[Session]:
        """Drop expired sessions, and idle ones beyond the maximum (less ``room``, kept
        free for new ones); return the dropped ones.

        Walks from the least recently used end and stops at the first live one, so the
        cost is the number dropped (and busy), not the number kept.
        """
        dropped: list[Session] = []
        now = self.clock()
        keep = self.max_sessions - room
        for session in self._sessions.values():
            over = len(self._sessions) - len(dropped) > keep
            if not over and now - session.last_used < self.ttl:
                break
            if not session.busy:  # a busy one is dropped once its turn is over and it idles
                dropped.append(session)
        for session in dropped:
            del self._sessions[session.context_id]
            for task_id in session.task_ids:
                self._tasks.pop(task_id, None)
        return dropped
