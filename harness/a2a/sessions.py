"""Sessions of the agent server: one per A2A ``contextId``, each with its own Agent
(so its own LLM source) and its own Conversation; idle ones expire, the least recently
used are dropped beyond a maximum, so the server's memory is bounded.

Nothing here imports a2a-sdk: the store is plain data and asyncio locks.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.messages import Conversation

__all__ = ["DEFAULT_MAX_SESSIONS", "DEFAULT_SESSION_TTL", "Session", "Sessions"]

DEFAULT_SESSION_TTL = 3600.0
DEFAULT_MAX_SESSIONS = 1000


@dataclass(eq=False)
class Session:
    """One conversation with the served agent (an A2A context)."""

    context_id: str
    agent: Any
    # None until the first turn: the agent's own system prompt starts a new session.
    conversation: Conversation | None = None
    last_used: float = 0.0
    # The A2A tasks of this session, deleted from the task store when it is dropped.
    task_ids: list[str] = field(default_factory=list)
    # One turn at a time per session; turns of different sessions run concurrently.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    turns: int = 0

    @property
    def busy(self) -> bool:
        """A turn is running (a busy session is never dropped)."""
        return self.lock.locked()

    def openai_messages(self) -> list[dict[str, Any]]:
        """The conversation in OpenAI (Chat Completions) form."""
        return self.conversation.to_openai() if self.conversation is not None else []


class Sessions:
    """Sessions by context id, least recently used first.

    ``ttl``: seconds a session may stay idle; ``max_sessions``: how many are kept (the
    least recently used idle one is dropped first). ``clock`` is for tests (a fake
    clock instead of sleeping). Expired sessions are dropped when the store is next
    used (every request uses it), so no background task is needed.
    """

    def __init__(
        self,
        agent_factory: Callable[[], Any],
        *,
        ttl: float = DEFAULT_SESSION_TTL,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.agent_factory = agent_factory
        self.ttl = ttl
        self.max_sessions = max_sessions
        self.clock = clock
        self._sessions: OrderedDict[str, Session] = OrderedDict()

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

    def open(self, context_id: str, conversation: Conversation | None = None) -> Session:
        """The session of ``context_id``, created (with a fresh agent) when it has none."""
        session = self.get(context_id)
        if session is None:
            session = Session(context_id, self.agent_factory(), conversation)
            self._sessions[context_id] = session
            self._touch(session)
        return session

    def _touch(self, session: Session) -> None:
        session.last_used = self.clock()
        self._sessions.move_to_end(session.context_id)

    def sweep(self) -> list[Session]:
        """Drop expired sessions and those beyond the maximum; return the dropped ones.

        Walks from the least recently used end and stops at the first live one, so the
        cost is the number dropped, not the number kept.
        """
        dropped: list[Session] = []
        now = self.clock()
        for session in self._sessions.values():
            over = len(self._sessions) - len(dropped) > self.max_sessions
            if not over and now - session.last_used < self.ttl:
                break
            if not session.busy:  # a busy one is dropped once its turn is over and it idles
                dropped.append(session)
        for session in dropped:
            del self._sessions[session.context_id]
        return dropped
