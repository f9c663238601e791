"""Who may touch which session, as the A2A protocol has it, checked on every call.

- **With callers** (``create_app(callers={token: name})``): the agent card declares an
  HTTP bearer security scheme, and every JSON-RPC call must present one of the tokens
  (``Authorization: Bearer TOKEN``, which a2a-sdk's ``AuthInterceptor`` sends from the
  card); a session belongs to the caller that started it, and another caller's messages
  to it are refused, its tasks not found.
- **Without callers**: the ``contextId`` is the capability. A message without one starts
  a session the server names with a random UUID (122 random bits); whoever presents the
  contextId continues it, as whoever presents a task id (server-made too) gets that task.

a2a-sdk keeps each task under an owner (its task store's ``owner_resolver``, the call
context's user): ``SessionRequestHandler`` sets the user of each call to the session it
touches (found by its contextId, or by the task's id), so a call reaches that session's
tasks and no other. ``ListTasks`` never enumerates sessions it was not asked for:
without callers it lists the one session whose contextId it names (a contextId is
required), with callers the caller's own. ``SessionRequestHandler`` also admits every
message to its session before it runs (harness.a2a._sessions: a session past a bound is
refused with an A2A error).
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from typing import Any

from a2a.auth.user import UnauthenticatedUser, User
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler, validate_request_params
from a2a.server.routes import DefaultServerCallContextBuilder
from a2a.types import ListTasksResponse
from a2a.utils.errors import InvalidRequestError, TaskNotFoundError

from harness.a2a._sessions import Refused, Session, Sessions, Ticket, caller_owner

__all__ = [
    "SCHEME",
    "TICKET",
    "CallerUser",
    "Callers",
    "SessionCallContextBuilder",
    "SessionRequestHandler",
    "SessionUser",
]

# Where the handler leaves a message's Ticket for the executor (the call context's state).
TICKET = "harness.ticket"
# The agent card's name of the bearer scheme callers authenticate with.
SCHEME = "bearer"


class Callers:
    """The callers a server knows: bearer token -> name, the tokens kept by their hash
    (the table never holds a usable token)."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        for token, name in tokens.items():
            if not isinstance(token, str) or len(token) < 16:
                raise ValueError("callers: each token must be a string of 16 characters or more")
            if not isinstance(name, str) or not name:
                raise ValueError("callers: each caller needs a name")
        self._names = {_digest(token): name for token, name in tokens.items()}

    def named(self, authorization: str | None) -> str | None:
        """The caller whose token an ``Authorization: Bearer TOKEN`` header presents."""
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return self._names.get(_digest(token.strip()))


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class SessionUser(User):
    """The owner of one session's tasks (the user of a call that touches it)."""

    def __init__(self, session: Session) -> None:
        self.session = session

    @property
    def is_authenticated(self) -> bool:
        """The call reached its session by its contextId, or as its caller."""
        return True

    @property
    def user_name(self) -> str:
        """The task store's owner of the session's tasks."""
        return self.session.owner


class CallerUser(User):
    """A caller authenticated by the card's bearer scheme."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def is_authenticated(self) -> bool:
        """Its token is one of the server's."""
        return True

    @property
    def user_name(self) -> str:
        """The task store's owner of the caller's tasks."""
        return caller_owner(self.name)


def caller_of(context: ServerCallContext) -> str | None:
    """The authenticated caller of a call, or None."""
    user = context.user
    if isinstance(user, CallerUser):
        return user.name
    return user.session.caller if isinstance(user, SessionUser) else None


class SessionCallContextBuilder(DefaultServerCallContextBuilder):
    """Builds each call's context with its caller as the user (with callers, a call
    without a known token is refused here, before any method runs)."""

    def __init__(self, callers: Callers | None) -> None:
        self.callers = callers

    def build(self, request: Any) -> ServerCallContext:
        """The call context, without the caller's credentials among the headers it keeps."""
        context = super().build(request)
        context.state.get("headers", {}).pop("authorization", None)
        return context

    def build_user(self, request: Any) -> User:
        """The caller the token names; refused without one when the server has callers."""
        if self.callers is None:
            return UnauthenticatedUser()
        name = self.callers.named(request.headers.get("authorization"))
        if name is None:
            raise InvalidRequestError(
                f"this agent's card asks callers to authenticate (its {SCHEME!r} scheme): "
                "send Authorization: Bearer TOKEN with a token the server was given"
            )
        return CallerUser(name)


class SessionRequestHandler(DefaultRequestHandler):
    """a2a-sdk's request handler, each call given the session it touches as its user,
    every message admitted to its session first.

    ``forget()`` deletes the tasks of sessions dropped to make room for a new one.
    """

    def __init__(
        self, *, sessions: Sessions, forget: Callable[[], Awaitable[None]], **kwargs: Any
    ) -> None:
        super().__init__(**kwargs)
        self.sessions = sessions
        self.forget = forget

    # Validated first (as a2a-sdk's own methods are): a request missing its message
    # must not make a session.
    @validate_request_params
    async def on_message_send(self, params: Any, context: ServerCallContext) -> Any:
        """``SendMessage``: admitted to its session, then a2a-sdk's."""
        ticket = await self._admit(params, context)
        try:
            return await super().on_message_send(params, context)
        finally:
            self.sessions.give_back(ticket)

    @validate_request_params
    async def on_message_send_stream(
        self, params: Any, context: ServerCallContext
    ) -> AsyncGenerator[Any, None]:
        """``SendStreamingMessage``: admitted to its session, then a2a-sdk's."""
        ticket = await self._admit(params, context)
        try:
            # Closed explicitly, so that a2a-sdk's clean-up runs when the client goes.
            async with contextlib.aclosing(
                super().on_message_send_stream(params, context)
            ) as events:
                async for event in events:
                    yield event
        finally:
            self.sessions.give_back(ticket)

    async def on_list_tasks(self, params: Any, context: ServerCallContext) -> Any:
        """``ListTasks``: the caller's own tasks, or (without callers) the tasks of the one
        session whose contextId the request names."""
        if caller_of(context) is None:
            if not params.context_id:
                raise InvalidRequestError(
                    "ListTasks lists the tasks of one session: give its contextId (this "
                    "server lists no session it was not asked for)"
                )
            session = self.sessions.get(params.context_id)
            if session is None:
                return ListTasksResponse()
            context.user = SessionUser(session)
        return await super().on_list_tasks(params, context)

    async def on_get_task(self, params: Any, context: ServerCallContext) -> Any:
        """``GetTask``: the task, in its session."""
        self._to_task(params.id, context)
        return await super().on_get_task(params, context)

    async def on_cancel_task(self, params: Any, context: ServerCallContext) -> Any:
        """``CancelTask``: the task, in its session."""
        self._to_task(params.id, context)
        return await super().on_cancel_task(params, context)

    async def on_subscribe_to_task(
        self, params: Any, context: ServerCallContext
    ) -> AsyncGenerator[Any, None]:
        """``SubscribeToTask``: the task, in its session."""
        self._to_task(params.id, context)
        async with contextlib.aclosing(super().on_subscribe_to_task(params, context)) as events:
            async for event in events:
                yield event

    def _to_task(self, task_id: str, context: ServerCallContext) -> None:
        """Make the session of task ``task_id`` the call's user: the task id is the
        capability, and with callers the session must be the caller's too."""
        session = self.sessions.by_task(task_id)
        if session is None or session.caller != caller_of(context):
            raise TaskNotFoundError
        context.user = SessionUser(session)

    async def _admit(self, params: Any, context: ServerCallContext) -> Ticket:
        message = params.message
        if not message.context_id:
            # The server names a new session: an id nobody can guess.
            message.context_id = str(uuid.uuid4())
        try:
            ticket = self.sessions.admit(message.context_id, caller_of(context), params.ByteSize())
        except Refused as exc:
            raise InvalidRequestError(str(exc)) from None
        # The session owns the task this message makes.
        context.user = SessionUser(ticket.session)
        context.state[TICKET] = ticket
        await self.forget()
        return ticket
