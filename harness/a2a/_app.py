"""``create_app``: a FastAPI application that serves a harness Agent over A2A.

The protocol is a2a-sdk's (its request handler, task store and JSON-RPC routes, with
the v0.3 method names on the same endpoint); harness adds the sessions (one per
``contextId``: the caller's that started it when the server has callers, else the
contextId is the capability; harness.a2a._guard),
``GET /sessions/{contextId}`` and ``POST /sessions`` (a conversation saved and loaded in
OpenAI format), the bounds on what the server keeps (harness.a2a._sessions), a body size
limit, and error objects instead of tracebacks for everything else that can go wrong.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import agent_card_to_dict, build_error_response
from a2a.server.routes import create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH, PROTOCOL_VERSION_1_0
from a2a.utils.errors import (
    A2AError,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    MethodNotFoundError,
    TaskNotFoundError,
)
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from harness._messages import Conversation, MessageItemError, messages_from_openai
from harness.a2a._executor import HarnessExecutor
from harness.a2a._guard import (
    SCHEME,
    Callers,
    SessionCallContextBuilder,
    SessionRequestHandler,
    SessionUser,
)
from harness.a2a._sessions import (
    DEFAULT_MAX_MESSAGE,
    DEFAULT_MAX_SESSION,
    DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_TURNS,
    DEFAULT_SESSION_TTL,
    Refused,
    Sessions,
)

__all__ = ["body_limit", "create_app"]

log = logging.getLogger("harness")

# Room in a body for what is not a message's text (JSON-RPC, ids, escapes of a short text).
_BODY_SLACK = 64 * 1024
# The card's path before A2A 0.3 named it agent-card.json; older clients still ask there.
_OLD_CARD_PATH = "/.well-known/agent.json"


def create_app(
    agent_factory: Callable[[], Any],
    *,
    name: str = "harness-agent",
    description: str = "A tool-using agent run by harness",
    url: str | None = None,
    session_ttl: float = DEFAULT_SESSION_TTL,
    max_sessions: int = DEFAULT_MAX_SESSIONS,
    max_message: int = DEFAULT_MAX_MESSAGE,
    max_session: int = DEFAULT_MAX_SESSION,
    max_turns: int = DEFAULT_MAX_TURNS,
    max_body: int | None = None,
    callers: Mapping[str, str] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> FastAPI:
    """The A2A application; ``agent_factory()`` makes a fresh ``Agent`` for each session.

    ``url``: the address the agent card names (default: the address a request came
    to). ``session_ttl`` seconds idle and ``max_sessions`` bound the sessions kept;
    ``max_message`` bytes a message, ``max_session`` bytes what one session holds,
    ``max_turns`` the turns running or waiting at once; ``max_body`` bytes a request
    (default: ``body_limit(max_message, max_session)``). ``callers``: bearer token ->
    caller name; the card then declares a bearer scheme, every call must present one of
    the tokens, and a session is its caller's (without callers, the contextId is the
    capability: docs/a2a.md#sessions-and-their-owners).
    """
    if max_body is None:
        max_body = body_limit(max_message, max_session)
    bounds = {"max_message": max_message, "max_session": max_session, "max_turns": max_turns}
    if session_ttl <= 0 or min(max_sessions, max_body, *bounds.values()) < 1:
        raise ValueError("session_ttl must be > 0; max_sessions, max_body and max_* >= 1")
    if max_message > max_session:
        raise ValueError("max_message must not be more than max_session")
    known = Callers(callers) if callers is not None else None
    secured = known is not None
    card = agent_card(name, description, url or "http://127.0.0.1/", secured)
    executor = HarnessExecutor(
        agent_factory, session_ttl=session_ttl, max_sessions=max_sessions, clock=clock, **bounds
    )
    app = FastAPI(title=name, description=description, openapi_url=None)
    forget = _add_a2a_routes(app, executor, card, known)

    async def card_endpoint(request: Request) -> JSONResponse:
        """The agent card, naming the address it was asked at unless ``url`` was given."""
        served = card if url else agent_card(name, description, str(request.base_url), secured)
        return JSONResponse(agent_card_to_dict(served))

    app.add_api_route(AGENT_CARD_WELL_KNOWN_PATH, card_endpoint, methods=["GET"])
    app.add_api_route(_OLD_CARD_PATH, card_endpoint, methods=["GET"])
    _add_session_routes(app, executor.sessions, known)
    _add_error_handlers(app)
    app.add_middleware(_Housekeeping, forget=forget, max_body=max_body)
    _one_line_logs()
    return app


def _add_a2a_routes(
    app: FastAPI, executor: HarnessExecutor, card: AgentCard, callers: Callers | None
) -> Any:
    """a2a-sdk's JSON-RPC endpoint, its calls owned by sessions (harness.a2a._guard); the
    coroutine function that deletes the tasks of dropped sessions."""
    sessions = executor.sessions
    # Tasks are kept by owner (the caller's session): see SessionUser.
    store = InMemoryTaskStore()

    async def forget() -> None:
        await _forget(sessions, store)

    handler = SessionRequestHandler(
        sessions=sessions, forget=forget, agent_executor=executor, task_store=store, agent_card=card
    )
    app.state.sessions = sessions
    app.state.task_store = store
    context_builder = SessionCallContextBuilder(callers)
    for route in create_jsonrpc_routes(
        handler, rpc_url="/", context_builder=context_builder, enable_v0_3_compat=True
    ):
        app.router.routes.append(route)
    return forget


def body_limit(max_message: int, max_session: int) -> int:
    """The default size limit of a request body: room for the largest message in JSON
    (whose escapes may take up to four times its bytes) and for a saved session
    (``POST /sessions``). A body over it is refused before it is read or parsed: a
    server that parsed bodies it could never take would hold several copies of each."""
    return max(4 * max_message, max_session) + _BODY_SLACK


def agent_card(name: str, description: str, url: str, secured: bool = False) -> AgentCard:
    """The card of a harness agent served at ``url`` (JSON-RPC, streaming); ``secured``:
    callers authenticate with an HTTP bearer token (the card's ``bearer`` scheme)."""
    card = AgentCard(
        name=name,
        description=description,
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                protocol_binding="JSONRPC", url=url, protocol_version=PROTOCOL_VERSION_1_0
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id="chat",
                name=name,
                description=description,
                tags=["harness"],
                examples=[],
            )
        ],
    )
    if secured:
        card.security_schemes[SCHEME].CopyFrom(
            SecurityScheme(
                http_auth_security_scheme=HTTPAuthSecurityScheme(
                    scheme="bearer", description="a token the server's operator gave you"
                )
            )
        )
        card.security_requirements.append(SecurityRequirement(schemes={SCHEME: StringList()}))
    return card


# -- sessions: save and load --------------------------------------------------------------


def _error(status: int, error: A2AError) -> JSONResponse:
    """An A2A (JSON-RPC) error object with an HTTP status that says the same."""
    return JSONResponse(build_error_response(None, error), status_code=status)


def _caller(request: Request, callers: Callers | None) -> str | JSONResponse | None:
    """The request's caller (None without callers), or the refusal of a request that
    presents no known token on a server with callers."""
    if callers is None:
        return None
    name = callers.named(request.headers.get("authorization"))
    if name is None:
        return _error(
            401,
            InvalidRequestError(
                f"this agent's card asks callers to authenticate (its {SCHEME!r} scheme): "
                "send Authorization: Bearer TOKEN"
            ),
        )
    return name


def _add_session_routes(app: FastAPI, sessions: Sessions, callers: Callers | None) -> None:
    async def get_session(context_id: str, request: Request) -> JSONResponse:
        """GET /sessions/{contextId}: the conversation in OpenAI format, to whoever holds
        the contextId (to its caller, on a server with callers)."""
        who = _caller(request, callers)
        if isinstance(who, JSONResponse):
            return who
        session = sessions.get(context_id)
        # Another caller's session is not there, as its tasks are not: nothing to learn.
        if session is None or session.caller != who:
            return _error(
                404,
                TaskNotFoundError(
                    f"no session {context_id!r} (never started, expired or dropped); start "
                    "one with a message or POST /sessions"
                ),
            )
        return JSONResponse({"contextId": context_id, "messages": session.openai_messages()})

    async def post_session(request: Request) -> JSONResponse:
        """POST /sessions {"messages": [...], "contextId"?}: a session from a saved one."""
        who = _caller(request, callers)
        if isinstance(who, JSONResponse):
            return who
        try:
            body = await request.json()
        except ValueError as exc:
            return _error(400, InvalidRequestError(f"the body is not JSON: {exc}"))
        problem, conversation, context_id = _read_saved(body)
        if problem is not None:
            return _error(400, InvalidParamsError(problem))
        if context_id in sessions:
            return _error(
                409,
                InvalidParamsError(f"session {context_id!r} exists; give another contextId"),
            )
        try:
            sessions.open(context_id, conversation, who)
        except Refused as exc:
            return _error(400, InvalidRequestError(str(exc)))
        except Exception as exc:  # the user's factory failed
            log.warning("agent factory failed", exc_info=True)
            return _error(500, InternalError(f"cannot start a session: {exc}"))
        await _forget(sessions, app.state.task_store)
        return JSONResponse(
            {"contextId": context_id, "messages": len(conversation.messages)}, status_code=201
        )

    app.add_api_route("/sessions/{context_id}", get_session, methods=["GET"])
    app.add_api_route("/sessions", post_session, methods=["POST"])


def _read_saved(body: Any) -> tuple[str | None, Any, str]:
    """(problem or None, the conversation, the context id) of a POST /sessions body."""
    example = '{"messages": [{"role": "user", "content": "hi"}, ...]}'
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return f"expected {example} (GET /sessions/ID gives one)", None, ""
    context_id = body.get("contextId") or str(uuid.uuid4())
    if not isinstance(context_id, str):
        return "contextId must be a string", None, ""
    try:
        conversation = Conversation(messages=messages_from_openai(body["messages"]))
    except MessageItemError as exc:
        return f"messages: {exc}", None, ""
    return None, conversation, context_id


# -- errors and housekeeping -------------------------------------------------------------------


def _add_error_handlers(app: FastAPI) -> None:
    async def not_found(request: Request, exc: Exception) -> JSONResponse:
        return _error(
            404,
            MethodNotFoundError(
                f"no such endpoint: {request.method} {request.url.path}; A2A requests go to "
                f"POST /, the agent card is at {AGENT_CARD_WELL_KNOWN_PATH}"
            ),
        )

    async def not_allowed(request: Request, exc: Exception) -> JSONResponse:
        return _error(
            405, MethodNotFoundError(f"{request.method} is not allowed on {request.url.path}")
        )

    async def internal(request: Request, exc: Exception) -> JSONResponse:
        log.error("internal error serving %s", request.url.path, exc_info=exc)
        return _error(500, InternalError(f"internal error: {type(exc).__name__}: {exc}"))

    app.add_exception_handler(404, not_found)
    app.add_exception_handler(405, not_allowed)
    app.add_exception_handler(Exception, internal)


class _Housekeeping:
    """ASGI middleware: refuses bodies over the limit and drops expired sessions.

    The body is read here up to the limit, then handed on unchanged. A body over it is
    not kept: the rest of it is read and thrown away (up to a few times the limit, so
    that the client, still sending, gets the 413 rather than a reset connection), then
    the connection is closed.
    """

    def __init__(self, app: Any, *, forget: Callable[[], Any], max_body: int) -> None:
        self.app = app
        self.forget = forget
        self.max_body = max_body

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await self.forget()
        if scope["method"] not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        body = await self._body(scope, receive, send)
        if body is None:
            return
        sent = False

        async def replay() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _body(self, scope: Any, receive: Any, send: Any) -> bytes | None:
        """The whole body, or None when it was refused (or the client went away)."""
        declared = dict(scope.get("headers") or []).get(b"content-length")
        over = declared is not None and declared.isdigit() and int(declared) > self.max_body
        chunks: list[bytes] = []
        size = 0
        more = True
        while more and size <= 4 * self.max_body:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            more = bool(message.get("more_body"))
            over = over or size > self.max_body
            if not over:
                chunks.append(chunk)
        if not over:
            return b"".join(chunks)
        shown = int(declared) if declared is not None and declared.isdigit() else size
        response = _error(
            413,
            InvalidRequestError(
                f"Payload too large: {shown} bytes or more, the limit is {self.max_body} bytes"
            ),
        )
        response.headers["connection"] = "close"
        await response({"type": "http"}, _no_body, send)
        return None


async def _forget(sessions: Sessions, store: Any) -> None:
    """Drop expired sessions, and delete the tasks of every dropped session."""
    for session in sessions.sweep() + sessions.take_dropped():
        context = ServerCallContext(user=SessionUser(session))
        for task_id in session.task_ids:
            await store.delete(task_id, context)


class _OneLine(logging.Filter):
    """a2a-sdk logs a malformed request with its traceback (``Failed to validate ...``):
    one line instead, without the traceback; or none where a line saying the error it
    answered follows (``drop``). Long or multi-line texts (a parse error quoting the
    body) are flattened and cut short."""

    def __init__(self, drop: bool) -> None:
        super().__init__()
        self.drop = drop

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if record.exc_info and text.startswith("Failed to "):
            if self.drop:
                return False
            error = record.exc_info[1]
            text = f"{text}: {type(error).__name__}: {error}"
            record.exc_info, record.exc_text, record.levelno = None, None, logging.WARNING
            record.levelname = "WARNING"
        if "\n" in text or len(text) > 300 or record.args:
            record.msg, record.args = " ".join(text.split())[:300], ()
        return True


def _one_line_logs() -> None:
    # The 1.0 dispatcher logs the error it answers next; the v0.3 adapter does not.
    for name, drop in (
        ("a2a.server.routes.jsonrpc_dispatcher", True),
        ("a2a.compat.v0_3.jsonrpc_adapter", False),
    ):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _OneLine) for f in logger.filters):
            logger.addFilter(_OneLine(drop))


async def _no_body() -> Any:
    return {"type": "http.request", "body": b"", "more_body": False}
