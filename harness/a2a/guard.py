"""Who may touch which session: the caller's session token, checked on every A2A call.

a2a-sdk keeps each task under an owner (its task store's ``owner_resolver``, the call
context's user): here the user is the session whose token the request presents in the
``Harness-Session-Token`` header (``SessionCallContextBuilder``), so ``GetTask``,
``CancelTask``, ``SubscribeToTask`` and ``ListTasks`` see only that session's tasks.
``SessionRequestHandler`` admits every message to its session before it runs
(harness.a2a.sessions: a new session for a new context, its token given in the first
reply; another client's session, or a message past a bound, refused with an A2A
error) and refuses ``ListTasks`` without a token.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from a2a.auth.user import UnauthenticatedUser, User
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler, validate_request_params
from a2a.server.routes import DefaultServerCallContextBuilder
from a2a.utils.errors import InvalidRequestError

from harness.a2a.sessions import TOKEN_HEADER, TOKEN_KEY, Refused, Session, Sessions, Ticket

__all__ = [
    "TICKET",
    "SessionCallContextBuilder",
    "SessionRequestHandler",
    "SessionUser",
    "caller",
]

# Where the handler leaves a message's Ticket for the executor (the call context's state).
TICKET = "harness.ticket"


class SessionUser(User):
    """The caller, known by the session its token names; it owns that session's tasks."""

    def __init__(self, session: Session) -> None:
        self.session = session

    @property
    def is_authenticated(self) -> bool:
        """A token named a live session."""
        return True

    @property
    def user_name(self) -> str:
        """The task store's owner of the session's tasks (never the token)."""
        return self.session.owner


def caller(context: ServerCallContext) -> Session | None:
    """The session whose token the call presented, or None."""
    user = context.user
    return user.session if isinstance(user, SessionUser) else None


class SessionCallContextBuilder(DefaultServerCallContextBuilder):
    """Builds each call's context with the session its token names as the user."""

    def __init__(self, sessions: Sessions) -> None:
        self.sessions = sessions

    def build(self, request: Any) -> ServerCallContext:
        """The call context, without the token among the headers it keeps."""
        context = super().build(request)
        context.state.get("headers", {}).pop(TOKEN_HEADER.lower(), None)
        return context

    def build_user(self, request: Any) -> User:
        """The session the token names, or an anonymous caller."""
        session = self.sessions.by_token(request.headers.get(TOKEN_HEADER))
        return SessionUser(session) if session is not None else UnauthenticatedUser()


class SessionRequestHandler(DefaultRequestHandler):
    """a2a-sdk's request handler, with every message admitted to its session first.

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
        """``ListTasks``: the tasks of the caller's session; refused without a token."""
        if caller(context) is None:
            raise InvalidRequestError(
                "ListTasks lists the tasks of one session: send its session token in the "
                f"{TOKEN_HEADER} header (the {TOKEN_KEY} of its first reply's metadata)"
            )
        return await super().on_list_tasks(params, context)

    async def _admit(self, params: Any, context: ServerCallContext) -> Ticket:
        message = params.message
        if not message.context_id:
            # The server names a new session: an id nobody can guess.
            message.context_id = str(uuid.uuid4())
        try:
            ticket = self.sessions.admit(message.context_id, caller(context), params.ByteSize())
        except Refused as exc:
            raise InvalidRequestError(str(exc)) from None
        # The session owns the task this message makes, whoever asked.
        context.user = SessionUser(ticket.session)
        context.state[TICKET] = ticket
        await self.forget()
        return ticket
