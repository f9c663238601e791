"""The ``openai`` LLM source: the official SDK, live or through a vcrpy cassette.

Chat Completions (streamed or not) and the Responses API (``api: responses``). The SDK
sends the request and hands back the answer's JSON (each event's, streamed); the API's
wire (``harness.wires``) reads it, as ``harness serve``, the observer and freeze read the
same API. ``openai`` and ``vcrpy`` are imported when the first request is made, so
importing harness stays fast.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError, LLMError
from harness.hookspecs import hookimpl
from harness.llm.base import JUDGE_ROLE, ROLE_HEADER, LLMRequest, LLMResponse
from harness.llm.chunks import LLMChunk, message_chunks
from harness.llm.config import LLMConfig
from harness.messages import (
    AssistantMessage,
    Conversation,
)
from harness.providers.recorded import RecordedSource
from harness.vendors import OPENAI, WireVendor

if TYPE_CHECKING:
    import openai

    from harness.cassettes.session import CassetteSession
    from harness.wires import Wire
    from harness.wires.neutral import WireReply

__all__ = ["PLACEHOLDER_API_KEY", "OpenAILLM"]

log = logging.getLogger("harness")

# Sent when replaying without a key: the SDK insists on one, a cassette
# does not need one, and this value is not a secret.
PLACEHOLDER_API_KEY = "sk-harness-placeholder"

# Only encodings vcrpy can decode; httpx2 would also offer zstd when zstandard is
# installed, and a zstd body could not be made readable in the cassette.
_ACCEPT_ENCODING = "gzip, deflate"

_ssl_contexts: dict[str, Any] = {}


def _httpx(sdk: Any = None) -> Any:
    """The httpx flavour the installed SDK (``sdk``, default openai) is built on (httpx2
    for openai 3.x and anthropic 2.x)."""
    if sdk is None:
        import openai as sdk

    try:
        import httpx2

        if issubclass(sdk.DefaultAsyncHttpxClient, httpx2.AsyncClient):
            return httpx2
    except ImportError:
        pass
    import httpx

    return httpx


def _shared_ssl_context(httpx: Any) -> Any:
    # Building an SSL context loads the CA bundle (tens of milliseconds); a client is
    # opened per request (inside the running loop), so build the context once.
    # (One per httpx flavour: another SDK may be built on another.)
    name = httpx.__name__
    if name not in _ssl_contexts:
        _ssl_contexts[name] = httpx.create_ssl_context()
    return _ssl_contexts[name]


class OpenAILLM(RecordedSource):
    """An LLM source on the official ``openai`` SDK, replaying or recording a cassette.

    A cassette session is opened at the first request and saved (if anything was
    recorded) by ``aclose()``, which the scenario runner calls; the built-in plugin
    also closes it when a run ends (``harness_agent_end``).
    """

    # The provider's name in messages, and an example model.
    provider = "openai"
    example_model = "gpt-4o-mini"
    # The vendor (its key checked before recording, its refusals told apart), the SDK's
    # own variables (read as it reads them), and the key sent when there is none.
    vendor: WireVendor = OPENAI
    key_variable = OPENAI.key_variables[0]
    base_url_variable: str = OPENAI.base_url_variable or ""
    placeholder_key = PLACEHOLDER_API_KEY

    def __init__(self, config: LLMConfig) -> None:
        if not config.model:
            raise HarnessError(
                f"provider {self.provider} needs llm.model (e.g. `model: {self.example_model}`)"
            )
        super().__init__(config)
        self._chains: dict[str, Any] = {}
        # The API's wire writes the requests and reads the answers.
        self._wire = self._wire_of(config)
        self._side = self._wire.client()
        self._judge_side = self._judge_wire().client()

    def _wire_of(self, config: LLMConfig) -> Wire:
        from harness.modelwires import wire_named  # loaded with the first source, not with harness

        return wire_named(config.api)

    def _judge_wire(self) -> Wire:
        from harness.modelwires import wire_named

        return wire_named("chat")

    def _session_opened(self) -> None:
        self._chains = {}  # Responses chains are per cassette session

    # -- the request ---------------------------------------------------------------------

    def _client(
        self, session: CassetteSession | None, headers: dict[str, str] | None = None
    ) -> Any:
        sdk = self._sdk()
        httpx = _httpx(sdk)
        kwargs: dict[str, Any] = {
            "api_key": os.environ.get(self.key_variable) or self.placeholder_key,
        }
        default_headers = dict(headers or {})
        if session is not None and not session.replays_only:
            # Only when recording: a live run asks for what the client can decode, and a
            # replay sends nothing (this header is not matched, so this changes no match).
            default_headers["Accept-Encoding"] = _ACCEPT_ENCODING
        if default_headers:
            kwargs["default_headers"] = default_headers
        base_url = self.config.base_url or os.environ.get(self.base_url_variable)
        if base_url:
            kwargs["base_url"] = base_url
        if self.config.timeout is not None:
            kwargs["timeout"] = self.config.timeout
        ssl_context = _shared_ssl_context(httpx)
        if session is not None:
            from harness.cassettes.session import cassette_transport

            # Retries under a cassette would replay recorded 429s with real back-off
            # sleeps and change the x-stainless-retry-count header between runs.
            kwargs["max_retries"] = 0
            transport = cassette_transport(session, httpx, vendor=self.vendor, verify=ssl_context)
            kwargs["http_client"] = sdk.DefaultAsyncHttpxClient(transport=transport)
        else:
            kwargs["http_client"] = sdk.DefaultAsyncHttpxClient(verify=ssl_context)
        return self._new_client(sdk, kwargs)

    def _new_client(self, sdk: Any, kwargs: dict[str, Any]) -> Any:
        return sdk.AsyncOpenAI(**kwargs)

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
        session = self._open_session()
        options = self._options(request)
        params = self._side.body(self.config.model or "", request, options, self.config.stream)
        token = None
        if session is not None:
            from harness.cassettes.session import expected_key

            session.requests_sent += 1
            if session.match == "body":
                started = time.perf_counter()
                key = session.keyer.incremental_key(params, self._chains)
                session.stats.match_seconds += time.perf_counter() - started
                token = expected_key.set(key)
        try:
            # The client is opened and closed inside the running loop: a client that
            # outlives its loop fails later with "Event loop is closed".
            async with self._client(session) as client:
                message, usage = await self._ask(client, params, request, emit)
        except LLMError:
            raise
        except Exception as exc:
            raise self._error(exc, request, session) from None
        finally:
            if token is not None:
                from harness.cassettes.session import expected_key

                expected_key.reset(token)
        return LLMResponse(message=message, usage=usage, latency=0.0)

    async def judge(self, messages: list[dict[str, Any]], model: str, call: int = 1) -> LLMResponse:
        """One judge request (Chat Completions, JSON mode) through this source's cassette.

        It carries the judge marker (``x-harness-role: judge``), so it is recorded into the
        scenario's cassette beside the agent's requests and replayed only from the judge's
        interactions. ``call`` numbers the scenario's judge requests (for a miss's message).
        """
        session = self._open_session()
        params = self._judge_params(messages, model)
        request = LLMRequest(conversation=Conversation(), tools=[], call=call)
        try:
            async with self._client(session, {ROLE_HEADER: JUDGE_ROLE}) as client:
                body = await self._post(client, self._judge_side.path, params)
        except LLMError:
            raise
        except Exception as exc:
            raise self._error(exc, request, session) from None
        try:
            reply = self._judge_side.reply(body)
        except _wire_error():
            raise LLMError("the judge model returned no choices", type="llm_error") from None
        message = AssistantMessage(content=reply.content, finish_reason="stop")
        return LLMResponse(message=message, usage=reply.usage or None, latency=0.0)

    async def converse(
        self, conversation: Conversation, model: str, call: int, role: str
    ) -> LLMResponse:
        """One request of a side conversation (a simulated user's: ``role`` ``user``)
        through this source's cassette, on the judge's wire, marked with ``role``: it is
        recorded beside the agent's requests and replayed only from its own role's."""
        session = self._open_session()
        request = LLMRequest(conversation=conversation, tools=[], call=call)
        params = self._judge_side.body(model, request, {}, False)
        try:
            async with self._client(session, {ROLE_HEADER: role}) as client:
                body = await self._post(client, self._judge_side.path, params)
            reply = self._judge_side.reply(body)
        except LLMError:
            raise
        except _wire_error() as exc:
            raise LLMError(str(exc), type="llm_error") from None
        except Exception as exc:
            raise self._error(exc, request, session) from None
        return LLMResponse(message=reply.message(call), usage=reply.usage or None, latency=0.0)

    def _judge_params(self, messages: list[dict[str, Any]], model: str) -> dict[str, Any]:
        """A judge's request body: Chat Completions in JSON mode."""
        return {"model": model, "messages": messages, "response_format": {"type": "json_object"}}

    def _sdk(self) -> Any:
        """The SDK module (its error classes are read from it)."""
        import openai

        return openai

    async def _post(self, client: Any, path: str, body: dict[str, Any]) -> Any:
        """POST ``body`` through the SDK's client (``_post``)."""
        return await _post(client, path, body)

    def _error(
        self, exc: Exception, request: LLMRequest, session: CassetteSession | None
    ) -> LLMError:
        """An SDK, HTTP or cassette failure as the run's llm_error."""
        from harness.secrets import Scrubber

        sdk = self._sdk()

        cassette = self._cassette_error(exc, request.call, session)
        if cassette is not None:
            return cassette
        scrub = Scrubber().text
        if isinstance(exc, sdk.APIStatusError):
            body = exc.body
            # The error object (openai's SDK unwraps it; anthropic's keeps the whole body).
            if isinstance(body, dict) and isinstance(body.get("error"), dict):
                body = body["error"]
            message = body.get("message") if isinstance(body, dict) else None
            if not isinstance(message, str) or not message:
                message = exc.message
            return LLMError(scrub(message), status=exc.status_code, type="http_error")
        if isinstance(exc, sdk.APITimeoutError):
            return LLMError("Request timed out.", type="timeout")
        if isinstance(exc, sdk.APIConnectionError):
            reason = exc.__cause__ or exc
            # The SDK's text ("All connection attempts failed") does not say where: a wrong
            # base_url or the SDK's base-URL variable is the usual cause, so name the URL tried.
            url = _request_url(exc)
            where = f" (tried {url})" if url else ""
            return LLMError(scrub(f"Connection error{where}: {reason}"), type="connection_error")
        return LLMError(scrub(f"{type(exc).__name__}: {exc}"), type="llm_error")

    # -- the request ---------------------------------------------------------------------

    def _options(self, request: LLMRequest) -> dict[str, Any]:
        options = {**self.config.options, **request.options}
        if not request.tools:
            # tool_choice without tools is an API error.
            options.pop("tool_choice", None)
        return options

    async def _ask(
        self, client: Any, params: dict[str, Any], request: LLMRequest, emit: Any
    ) -> tuple[AssistantMessage, dict[str, int] | None]:
        answer = await self._post(client, self._side.path, params)
        if params.get("stream"):
            reply = await _read_stream(self._wire, answer, emit)
        else:
            try:
                reply = self._side.reply(answer)
            except _wire_error() as exc:
                raise LLMError(str(exc), type="llm_error") from None
        return reply.message(request.call), reply.usage or None


def _request_url(exc: openai.APIConnectionError) -> str | None:
    """The URL of the request that failed, without its query (None when unknown)."""
    try:
        url = str(exc.request.url)
    except (AttributeError, RuntimeError):  # a request httpx never finished building
        return None
    return url.split("?", 1)[0]


async def _post(client: Any, path: str, body: dict[str, Any]) -> Any:
    """POST ``body`` as it is, through the SDK's client (auth, errors, SSE); the answer's
    JSON comes back as it is (a stream: each event's), for its wire to read.

    ``create()`` would first walk every message of the conversation through the SDK's
    typed-parameter transform, which leaves plain JSON unchanged and costs more than
    everything else in a replay (and grows with the history). The body is already in
    wire form, so it goes to the SDK's documented ``client.post`` instead.
    """
    from openai import AsyncStream

    stream = bool(body.get("stream"))
    return await client.post(
        path, body=body, cast_to=object, stream=stream, stream_cls=AsyncStream[object]
    )


def _wire_error() -> type[Exception]:
    from harness.wires.neutral import WireError

    return WireError


async def _read_stream(wire: Wire, stream: Any, emit: Any) -> WireReply:
    """Read a streamed answer with ``wire``, each piece handed to ``emit`` as it arrives;
    LLMError when the stream says the answer failed, or ends without one."""
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


# -- the plugin ----------------------------------------------------------------------------


@hookimpl
def harness_register_llms(register: Any) -> None:
    """``provider: openai``: the official SDK, replaying or recording a vcrpy cassette."""
    register("openai", OpenAILLM)
