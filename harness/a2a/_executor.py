"""The A2A ``AgentExecutor`` that runs a harness Agent: one turn per A2A message.

Each message becomes a task of the message's context (session): the task is
submitted, the turn runs the session's agent on the session's conversation while its
progress is sent as ``working`` status updates, then the final answer comes as an
artifact and the task ends ``completed`` (``failed`` when the run ended any other way;
the iteration limit says ``Max iterations reached``).
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Callable
from typing import Any

from a2a.helpers import new_task, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import TaskState

from harness._errors import describe
from harness.a2a._guard import TICKET
from harness.a2a._sessions import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_TTL,
    Session,
    Sessions,
    conversation_size,
    kept,
)
from harness.a2a._status import StatusObserver, Turn, current_turn

__all__ = ["HarnessExecutor", "failure_text"]

log = logging.getLogger("harness")


def failure_text(result: Any) -> str:
    """Why a run that did not complete failed, in a sentence (the seed's words for the
    iteration limit)."""
    termination = str(result.termination)
    if termination == "max_iterations":
        return "Max iterations reached"
    message = result.final.error.message if result.final.error is not None else ""
    return f"{termination}: {message}" if message else f"the run ended {termination}"


class HarnessExecutor(AgentExecutor):
    """Runs each A2A message as a turn of its context's session.

    The message was admitted to its session before (harness.a2a._guard leaves the
    Ticket in the call context's state); the turn gives the ticket back when it is over,
    with the bytes it added to the session.
    """

    def __init__(
        self,
        agent_factory: Callable[[], Any],
        *,
        session_ttl: float = DEFAULT_SESSION_TTL,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        clock: Callable[[], float] = time.monotonic,
        **bounds: int,
    ) -> None:
        self.sessions = Sessions(
            lambda: self.observed(agent_factory()),
            ttl=session_ttl,
            max_sessions=max_sessions,
            clock=clock,
            **bounds,
        )
        # One plugin manager with the status observer per manager the factory's agents
        # use (usually one for all): not a new manager per session.
        self._observed: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._observer = StatusObserver()

    def observed(self, agent: Any) -> Any:
        """``agent`` with the status observer among its plugins (checked to be an Agent)."""
        plugins = getattr(agent, "plugins", None)
        if not callable(getattr(agent, "arun", None)) or plugins is None:
            raise TypeError(
                f"the agent factory returned {describe(agent)}; it must return a harness.Agent"
            )
        child = self._observed.get(plugins)
        if child is None:
            child = self._observed[plugins] = plugins.with_extra([self._observer])
        agent.plugins = child
        return agent

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Run one turn of the message's session, reporting as it goes."""
        task_id, context_id = str(context.task_id), str(context.context_id)
        ticket = context.call_context.state.get(TICKET)
        # The SDK calls execute with the request's message; a request without one gets a
        # task that says it has no text to answer.
        history = [context.message] if context.message is not None else []
        submitted = new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED, history=history)
        await event_queue.enqueue_event(submitted)
        updater = TaskUpdater(event_queue, task_id, context_id)
        if ticket is not None:
            # Found by its id later (GetTask), deleted with its session.
            self.sessions.add_task(ticket.session, task_id)
        if ticket is None or not self.sessions.start(ticket):
            await updater.failed(self._message(updater, "the request ended before its turn"))
            return
        session = ticket.session
        growth = 0
        try:
            growth = await self._answer(session, context.get_user_input(), updater)
        finally:
            self.sessions.finish(ticket, growth)

    async def _answer(self, session: Session, text: str, updater: TaskUpdater) -> int:
        """Answer ``text`` in ``session`` (one turn at a time); the bytes it added."""
        if not text.strip():
            return await self._fail(updater, "the message has no text to answer")
        if session.agent is None:
            try:
                session.agent = self.sessions.agent_factory()
            except Exception as exc:  # the user's factory failed: the task says why
                log.warning("agent factory failed", exc_info=True)
                return await self._fail(updater, f"cannot start a session: {exc}")
        async with session.lock:
            return await self._turn(session, text, updater)

    async def _fail(self, updater: TaskUpdater, why: str) -> int:
        """Fail the task saying ``why``; the bytes the task keeps of it."""
        message = self._message(updater, why)
        await updater.failed(message)
        return kept(message.ByteSize())

    async def _turn(self, session: Session, text: str, updater: TaskUpdater) -> int:
        turn = Turn()
        # What the task store keeps of this turn: every update's message, the answer.
        stored = 0

        async def send(kind: str, piece: str) -> None:
            nonlocal stored
            message = self._message(updater, piece)
            stored += kept(message.ByteSize())
            await updater.update_status(
                TaskState.TASK_STATE_WORKING, message=message, metadata={"kind": kind}
            )

        pump = asyncio.ensure_future(turn.pump(send))
        token = current_turn().set(turn)
        before = len(session.openai_messages())
        try:
            result = await self._streamed(session, text)
        except Exception as exc:  # bad input to the agent (a HarnessError): the task fails
            result, failure = None, f"{type(exc).__name__}: {exc}"
        finally:
            current_turn().reset(token)
            turn.close()
            await pump
        if result is None:
            return stored + await self._fail(updater, failure)
        session.conversation = result.conversation
        session.turns += 1
        stored += conversation_size(session.openai_messages()[before:])
        content = result.final.content
        if content:
            stored += kept(len(content.encode()))
            await updater.add_artifact([new_text_part(content)], name="answer", last_chunk=True)
        if str(result.termination) == "completed":
            await updater.complete()
            return stored
        return stored + await self._fail(updater, failure_text(result))

    @staticmethod
    async def _streamed(session: Session, text: str) -> Any:
        """Run the turn streamed, so that the model's replies come in pieces (the
        observer's ``harness_llm_chunk`` sends their text as it is generated, in order
        with the other updates); the run's result."""
        result = None
        async for event in session.agent.astream(text, session.conversation):
            if event.kind == "final":
                result = event.result
        return result

    @staticmethod
    def _message(updater: TaskUpdater, text: str) -> Any:
        return new_text_message(text, context_id=updater.context_id, task_id=updater.task_id)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Cancelling stops the turn (a2a-sdk cancels ``execute``); the task says so."""
        updater = TaskUpdater(event_queue, str(context.task_id), str(context.context_id))
        await updater.cancel()
