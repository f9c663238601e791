"""What every recorded LLM source shares: its cassette session, opened at the first
request and saved when the run ends (docs/recording.md), the SDK's HTTP client through
that cassette (its vendor's key checked before anything is recorded), the key and base URL
read as the SDK reads them, streaming, and the run's llm_error. ``provider: openai``,
``anthropic`` and ``gemini`` are siblings on this base: each holds only what its SDK needs.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness._errors import HarnessError, LLMError, RecordingRefused
from harness._project import project_relative
from harness.llm._chunks import LLMChunk, message_chunks

if TYPE_CHECKING:
    from harness._vendors import WireVendor
    from harness.cassettes._session import CassetteSession
    from harness.llm._base import LLMRequest, LLMResponse
    from harness.llm._config import LLMConfig
    from harness.wires import Wire
    from harness.wires._neutral import WireReply

__all__ = ["RecordedSource"]

_ssl_contexts: dict[str, Any] = {}


class RecordedSource:
    """An LLM source on a vendor's SDK: its cassette, its HTTP client, its errors.

    A cassette session is opened at the first request and saved (if anything was
    recorded) by ``aclose()``, which the scenario runner calls; the built-in plugins
    also close it when a run ends (``harness_agent_end``).
    """

    # The provider's name in messages, and an example model.
    provider: str
    example_model: str
    # The vendor: its key and base-URL variables (read as its SDK reads them), its key
    # checked before recording and its refusals told apart (cassette_transport).
    vendor: WireVendor
    # Sent when replaying without a key: the SDK insists on one, a cassette does not.
    placeholder_key: str

    def __init__(self, config: LLMConfig) -> None:
        if not config.model:
            raise HarnessError(
                f"provider {self.provider} needs llm.model (e.g. `model: {self.example_model}`)"
            )
        self.config = config
        self.context = config.context
        self._session: CassetteSession | None = None
        # Why recording stopped with nothing written (the API refused the key), if it did.
        self.refused: str | None = None
        self._remaining: int | None = None
        self._stats: Any = None

    @property
    def uses_cassette(self) -> bool:
        """False under --disable-recording (live, nothing written)."""
        return not self.context.disable_recording

    @property
    def session(self) -> CassetteSession | None:
        """The open cassette session (None before the first request or when live)."""
        return self._session

    @property
    def cassette_path(self) -> Path:
        """Where this source's cassette is read and written."""
        from harness.cassettes._paths import resolve_cassette_path

        return resolve_cassette_path(self.config)

    def _open_session(self) -> CassetteSession | None:
        if not self.uses_cassette:
            return None
        if self._session is None:
            from harness.cassettes._session import CassetteSession

            path = self.cassette_path
            self._session = CassetteSession(
                path,
                record_mode=self.context.record_mode,
                match=self.config.match,
                match_ignore=tuple(self.config.match_ignore),
                scenario=self.context.scenario_id,
                shown_path=project_relative(path, self.context.project_root),
            )
            self._session_opened()
        return self._session

    def _session_opened(self) -> None:
        """Called when a new cassette session opens (state kept per session resets)."""

    # -- the SDK's client ----------------------------------------------------------------

    def _api_key(self) -> str:
        """The vendor's key from its variables, or the placeholder (a replay needs none)."""
        return self.vendor.key() or self.placeholder_key

    def _base_url(self) -> str | None:
        """``llm.base_url``, else the SDK's base-URL variable (None: the SDK's default)."""
        variable = self.vendor.base_url_variable
        return self.config.base_url or (os.environ.get(variable) if variable else None) or None

    def _http_client(
        self, client_class: Any, httpx: Any, session: CassetteSession | None, **kwargs: Any
    ) -> Any:
        """The SDK's async HTTP client (``client_class``, on ``httpx``): through the
        cassette when there is a session (the vendor's key checked before a request is
        recorded, a refusal never written), straight to the API when live."""
        ssl_context = _shared_ssl_context(httpx)
        if session is None:
            return client_class(verify=ssl_context, **kwargs)
        from harness.cassettes._session import cassette_transport

        transport = cassette_transport(session, httpx, vendor=self.vendor, verify=ssl_context)
        return client_class(transport=transport, **kwargs)

    # -- the request ---------------------------------------------------------------------

    @property
    def streams(self) -> bool:
        """``stream: true``: every reply comes as Server-Sent Events, so every run streams."""
        return self.config.stream

    async def stream(self, request: LLMRequest, emit: Callable[[LLMChunk], None]) -> LLMResponse:
        """The reply, each piece handed to ``emit`` as it arrives (``stream: true``); an
        unstreamed source (``stream: false``) gets its reply whole, then cut into pieces."""
        if not self.config.stream:
            response = await self.complete(request)
            for chunk in message_chunks(response.message, response.usage):
                emit(chunk)
            return response
        return await self.complete(request, emit)

    async def complete(
        self, request: LLMRequest, emit: Callable[[LLMChunk], None] | None = None
    ) -> LLMResponse:
        """Send the conversation through the SDK (or the cassette) and return the reply."""
        raise NotImplementedError

    def _options(self, request: LLMRequest) -> dict[str, Any]:
        options = {**self.config.options, **request.options}
        if not request.tools:
            # tool_choice without tools is an API error.
            options.pop("tool_choice", None)
        return options

    # -- failures ------------------------------------------------------------------------

    def _error(
        self, exc: Exception, request: LLMRequest, session: CassetteSession | None
    ) -> LLMError:
        """An SDK, HTTP or cassette failure as the run's llm_error (secrets scrubbed)."""
        from harness._secrets import Scrubber

        cassette = self._cassette_error(exc, request.call, session)
        if cassette is not None:
            return cassette
        scrub = Scrubber().text
        known = self._sdk_error(exc, scrub)
        if known is not None:
            return known
        return LLMError(scrub(f"{type(exc).__name__}: {exc}"), type="llm_error")

    def _sdk_error(self, exc: Exception, scrub: Callable[[str], str]) -> LLMError | None:
        """``exc`` as the run's llm_error when it is one of the SDK's own failures (an HTTP
        status, a timeout, a connection), its text through ``scrub``; None otherwise."""
        return None

    def _cassette_error(
        self, exc: BaseException, call: int, session: CassetteSession | None
    ) -> LLMError | None:
        """The run's llm_error when ``exc`` (or what caused it) is the cassette's: a miss,
        or a recording refused (the run ends there; the scenario runner stops the whole
        recording). vcrpy raises from inside the transport and the SDKs let it through."""
        if session is None:
            return None
        from vcr.errors import CannotOverwriteExistingCassetteException

        cause: BaseException | None = exc
        while cause is not None:
            if isinstance(cause, CannotOverwriteExistingCassetteException):
                return session.miss_error(cause, call)
            if isinstance(cause, RecordingRefused):
                self.refused = str(cause)
                return LLMError(str(cause), type="recording_refused")
            cause = cause.__cause__ or cause.__context__
        return None

    @property
    def remaining(self) -> int | None:
        """Recorded interactions the run left unplayed (None when live)."""
        if self._session is not None:
            return self._session.remaining
        return self._remaining

    @property
    def stats(self) -> Any:
        """ReplayStats of the current (or last) cassette session: matching, playing, loading."""
        return self._session.stats if self._session is not None else self._stats

    def close(self) -> None:
        """Save the cassette if anything was recorded, and end the session."""
        session, self._session = self._session, None
        if session is not None:
            self._remaining = session.remaining
            self._stats = session.stats
            session.save()

    async def aclose(self) -> None:
        """``close()``: called by ``Agent.arun`` when a run ends (the LLM protocol's
        optional end-of-run call), so a recording is saved whoever started the run."""
        self.close()


def _shared_ssl_context(httpx: Any) -> Any:
    # Building an SSL context loads the CA bundle (tens of milliseconds); a client is
    # opened per request (inside the running loop), so build the context once.
    # (One per httpx flavour: another SDK may be built on another.)
    name = httpx.__name__
    if name not in _ssl_contexts:
        _ssl_contexts[name] = httpx.create_ssl_context()
    return _ssl_contexts[name]


async def read_stream(wire: Wire, stream: Any, emit: Any) -> WireReply:
    """Read a streamed answer (its events as JSON objects) with ``wire``, each piece handed
    to ``emit`` as it arrives; LLMError when the stream says the answer failed, or ends
    without one. Every SDK source reads its streams so."""
    reader = wire.stream_reader()
    async for event in stream:
        if not isinstance(event, dict):
            continue
        chunk = reader.add(event)
        if emit is not None and chunk is not None:
            emit(chunk)
        if reader.problem is not None:
            raise LLMError(reader.problem, type="http_error")
    if reader.empty:
        raise LLMError("the response stream ended without a response", type="llm_error")
    closing = reader.closing()
    if emit is not None and closing is not None:
        emit(closing)
    return reader.reply()
