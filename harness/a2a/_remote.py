"""``RemoteAgentTool``: any A2A agent (harness's own server or another's) as a tool.

The call goes through a2a-sdk's client. Each parent run talks to the remote agent in
one context (``contextId``) of its own, so a follow-up call continues the remote
session; another run, even of the same Agent, starts a new one. The run's first call
sends no contextId: the agent names the context (an id nobody can guess, which is what
holds the session on a server without authentication) and the later calls of the run
send it back; a run's calls go one at a time, so that two calls of one plan share the
session. Everything that can
go wrong on the way (HTTP errors, timeouts, a task that failed) raises
``RemoteAgentError``, which the loop turns into an error result for the model, never
an exception in the parent.
"""

from __future__ import annotations

import asyncio
import re
import ssl
import uuid
import weakref
from collections.abc import Callable
from typing import Any

from pydantic import Field

from harness._errors import HarnessError
from harness._run import current_run
from harness._tools import Tool, arguments_model

__all__ = ["DEFAULT_TIMEOUT", "RemoteAgentError", "RemoteAgentTool", "tool_name"]

DEFAULT_TIMEOUT = 60.0
_CARD_PATH = "/.well-known/agent-card.json"


class _Session:
    """A parent run's remote session: its context, once the agent named it."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.context_id: str | None = None


class RemoteAgentError(Exception):
    """A remote agent could not answer (unreachable, timed out, failed its task)."""


def tool_name(text: str) -> str:
    """A tool name the OpenAI API accepts, made from an agent card's name."""
    name = re.sub(r"[^a-zA-Z0-9_-]+", "_", text).strip("_")[:64]
    return name or "remote_agent"


def _timed_out(exc: BaseException) -> bool:
    import httpx
    from a2a.client import A2AClientTimeoutError

    kinds = (TimeoutError, httpx.TimeoutException, A2AClientTimeoutError)
    return isinstance(exc, kinds) or isinstance(exc.__cause__, kinds)


def _checked(url: Any) -> str:
    if not isinstance(url, str) or not re.match(r"^https?://", url):
        raise HarnessError(
            f"RemoteAgentTool(url=...) takes the agent's http:// or https:// address, got {url!r}"
        )
    return url.rstrip("/")


def _card_from_dict(data: Any) -> Any:
    from a2a.types import AgentCard
    from google.protobuf.json_format import ParseDict

    # The card also carries its v0.3 fields for older clients: not ours to read.
    return ParseDict(data, AgentCard(), ignore_unknown_fields=True)


class RemoteAgentTool(Tool):
    """A tool that sends its ``task`` to an A2A agent and returns the agent's answer.

    ``name`` and ``description`` come from the agent card unless given (without a name
    the card is fetched at once; without a description, before the tool is first
    offered to a model). ``timeout``: wall seconds for one call. ``url`` may also be
    a function that returns the address: it is called once, when the address is first
    needed (outside the event loop during a call), to start an agent on demand.
    """

    def __init__(
        self,
        url: str | Callable[[], str],
        name: str | None = None,
        description: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        if callable(url):
            self._start: Callable[[], str] | None = url
            self.url = ""
        else:
            self._start = None
            self.url = _checked(url)
        self.timeout = timeout
        self._card: Any = None
        self._ssl: ssl.SSLContext | None = None
        # Remote session of each parent run; a run that is gone frees its entry.
        self._sessions: weakref.WeakKeyDictionary[Any, _Session] = weakref.WeakKeyDictionary()
        if name is None:
            card = self.fetch_card()
            name = tool_name(card.name)
            description = description if description is not None else card.description
        model = arguments_model(
            name, {"task": (str, Field(description="what to ask the remote agent"))}
        )
        super().__init__(self._call, name=name, description=description or "", model=model)
        self._described = description is not None

    # -- the agent card ------------------------------------------------------------------

    def endpoint(self) -> str:
        """The agent's base URL (the first time, a ``url`` function is called for it)."""
        if not self.url and self._start is not None:
            self.url = _checked(self._start())
        return self.url

    def fetch_card(self) -> Any:
        """The agent card, fetched once (synchronously); HarnessError when unreachable."""
        if self._card is None:
            import httpx

            url = self.endpoint() + _CARD_PATH
            try:
                response = httpx.get(url, timeout=min(self.timeout, 10.0))
                response.raise_for_status()
                self._card = _card_from_dict(response.json())
            except Exception as exc:
                raise HarnessError(
                    f"cannot read the agent card at {url}: {type(exc).__name__}: {exc}; "
                    "is the agent running? (or give name= and description=)"
                ) from None
        return self._card

    def openai_schema(self) -> dict[str, Any]:
        """The tools entry, with the card's description when none was given."""
        if not self._described:
            self._described = True
            try:
                self.description = self.fetch_card().description
            except HarnessError as exc:
                # Offered anyway: a call then reports the problem as an error result.
                self.description = f"A remote agent at {self.endpoint()} ({exc})"
        return super().openai_schema()

    # -- calling -------------------------------------------------------------------------

    def session(self) -> _Session:
        """The remote session of the current run (a new one per run; outside any run,
        one per call)."""
        run = current_run()
        if run is None:
            return _Session()
        session = self._sessions.get(run)
        if session is None:
            session = self._sessions[run] = _Session()
        return session

    async def _call(self, task: str) -> str:
        session = self.session()
        try:
            async with session.lock:
                return await asyncio.wait_for(self._turn(task, session), self.timeout)
        except (RemoteAgentError, HarnessError):
            raise
        except Exception as exc:
            if not _timed_out(exc):
                raise RemoteAgentError(
                    f"the remote agent at {self.url or self.name} could not be reached: "
                    f"{type(exc).__name__}: {exc}"
                ) from None
            raise RemoteAgentError(
                f"the remote agent at {self.url or self.name} did not answer within "
                f"{self.timeout:g} s"
            ) from None

    async def _turn(self, task: str, session: _Session) -> str:
        # A context is kept once the agent named it in an answer: a first call that
        # failed leaves none, so the next call starts another session.
        last = await self._send(task, session.context_id)
        named = _context_of(last)
        if named:
            session.context_id = named
        return _answer(last, self.url)

    async def _send(self, task: str, context_id: str | None) -> Any:
        """The last StreamResponse of sending ``task`` in ``context_id`` (none: the agent
        names a new context)."""
        import httpx
        from a2a.client import ClientConfig, create_client
        from a2a.types import Message, Part, Role, SendMessageRequest

        if self._ssl is None:
            # An SSL context costs milliseconds to build: once per tool, not per call.
            self._ssl = ssl.create_default_context()
        # Starting an agent on demand blocks: never on the event loop.
        url = self.url or await asyncio.to_thread(self.endpoint)
        async with httpx.AsyncClient(timeout=self.timeout, verify=self._ssl) as http:
            if self._card is None:
                response = await http.get(url + _CARD_PATH)
                response.raise_for_status()
                self._card = _card_from_dict(response.json())
            client = await create_client(
                self._card, client_config=ClientConfig(streaming=False, httpx_client=http)
            )
            request = SendMessageRequest(
                message=Message(
                    message_id=str(uuid.uuid4()),
                    role=Role.ROLE_USER,
                    parts=[Part(text=task)],
                    context_id=context_id or "",
                )
            )
            last = None
            async for answer in client.send_message(request):
                last = answer
        return last


def _context_of(response: Any) -> str | None:
    """The contextId an answer names (its task's, or its message's)."""
    if response is None:
        return None
    if response.HasField("task"):
        return str(response.task.context_id) or None
    if response.HasField("message"):
        return str(response.message.context_id) or None
    return None


def _answer(response: Any, url: str) -> str:
    """The text of the remote agent's answer; RemoteAgentError for a failed task."""
    from a2a.helpers import get_artifact_text, get_message_text
    from a2a.types import TaskState

    if response is None:
        raise RemoteAgentError(f"the remote agent at {url} sent no answer")
    if response.HasField("message"):
        return get_message_text(response.message)
    task = response.task
    state = task.status.state
    said = get_message_text(task.status.message) if task.status.HasField("message") else ""
    if state != TaskState.TASK_STATE_COMPLETED:
        name = TaskState.Name(state).removeprefix("TASK_STATE_").lower()
        raise RemoteAgentError(
            f"the remote agent's task ended {name}" + (f": {said}" if said else "")
        )
    texts = [get_artifact_text(artifact) for artifact in task.artifacts]
    return "\n".join(text for text in texts if text) or said
