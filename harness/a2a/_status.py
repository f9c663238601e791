"""What a turn reports while it runs: the streamed status of docs/a2a.md.

``Turn`` collects the updates of one turn, in order, as plain ``(kind, text)`` pairs:
``status`` for the loop's progress (``Agentic iteration i/N``, ``Executing k tool
call(s)``, ``Tool NAME finished``) and ``text`` for the model's words. The executor
(harness.a2a._executor) turns them into A2A events. ``StatusObserver`` is the plugin
that fills the current turn from the loop's hooks; pluggy's hooks are synchronous, so
updates are queued here and sent by the executor's pump, in order, as they come.

Text arrives as one piece per model reply (``harness_llm_response``). A token stream
(``Agent.astream``'s ``llm_delta`` events) feeds ``Turn.text`` piece by piece instead;
``Turn.reply_done`` then keeps the whole reply from being sent a second time.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

__all__ = ["StatusObserver", "Turn", "current_turn"]

_turn: ContextVar[Turn | None] = ContextVar("harness_a2a_turn", default=None)

FAILED_STATUSES = frozenset({"error", "invalid", "unknown_tool"})


def current_turn() -> ContextVar[Turn | None]:
    """The context variable holding the turn the hooks report to."""
    return _turn


class Turn:
    """The updates of one turn, queued in order for the executor to send."""

    def __init__(self) -> None:
        self.updates: deque[tuple[str, str]] = deque()
        self._wake = asyncio.Event()
        self._done = False
        # The top-level run of the turn: a sub-agent's run reports nothing of its own.
        self.run: Any = None
        self._group = 0
        self._streamed = False

    # -- filled by the observer (or a token stream) ------------------------------------

    def status(self, text: str) -> None:
        """A progress update (a ``working`` status)."""
        self.updates.append(("status", text))
        self._wake.set()

    def text(self, piece: str) -> None:
        """Some of the model's text, as it is generated."""
        if piece:
            self._streamed = True
            self.updates.append(("text", piece))
            self._wake.set()

    def reply_done(self, content: str | None) -> None:
        """A model reply is complete: its text is sent now unless it was streamed."""
        if not self._streamed and content:
            self.text(content)
        self._streamed = False

    def tool_done(self, run: Any, record: Any) -> None:
        """One tool call finished (its ToolCallRecord); the first of a plan announces the
        plan's size first."""
        group = record.group
        if group != self._group:
            self._group = group
            size = 0
            # The plan's records are the last ones: walk back over them only.
            for record in reversed(run.records):
                if record.group != group:
                    break
                size += 1
            self.status(f"Executing {size} tool call(s)")
        outcome = "failed" if record.status in FAILED_STATUSES else "finished"
        self.status(f"Tool {record.name} {outcome}")

    # -- drained by the executor -----------------------------------------------------------

    def close(self) -> None:
        """No more updates: the pump sends what is queued and stops."""
        self._done = True
        self._wake.set()

    async def pump(self, send: Callable[[str, str], Awaitable[None]]) -> None:
        """Send every update in order until ``close``; ``send(kind, text)``."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self.updates:
                kind, text = self.updates.popleft()
                await send(kind, text)
            if self._done and not self.updates:
                return


class StatusObserver:
    """A plugin that reports the loop's progress to the current turn (if any)."""

    @staticmethod
    def _turn_of(run: Any) -> Turn | None:
        turn = _turn.get()
        if turn is None:
            return None
        if turn.run is None:
            turn.run = run
        return turn if turn.run is run else None

    def harness_agent_start(self, run: Any) -> None:
        """Remember the turn's top-level run."""
        self._turn_of(run)

    def harness_iteration_start(self, run: Any, iteration: int) -> None:
        """``Agentic iteration i/N``."""
        turn = self._turn_of(run)
        if turn is not None:
            turn.status(f"Agentic iteration {iteration}/{run.config.max_iterations}")

    def harness_llm_chunk(self, run: Any, chunk: Any) -> None:
        """The model's text as it is generated (the turn's run streams)."""
        turn = self._turn_of(run)
        if turn is not None and chunk.content:
            turn.text(chunk.content)

    def harness_llm_response(self, run: Any, response: Any) -> None:
        """The model's text of this reply."""
        turn = self._turn_of(run)
        if turn is not None:
            turn.reply_done(response.message.content)

    def harness_action_executed(self, run: Any, action: Any, result: Any) -> None:
        """``Executing k tool call(s)`` once per plan, then ``Tool NAME finished``."""
        turn = self._turn_of(run)
        if turn is not None:
            turn.tool_done(run, result)
