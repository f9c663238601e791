"""The ``gemini`` LLM source: the official ``google-genai`` SDK, live or through a vcrpy
cassette (docs/recording.md#gemini).

The Gemini wire (``harness.wires._gemini``) writes the request body and reads the answer;
the SDK sends it (the key, the path by model and API version, errors, Server-Sent
Events). Whole answers are read from the raw body the SDK hands back
(``should_return_http_response``), streamed ones from each chunk as JSON. Under a cassette
the SDK's async client goes through one vcrpy transport of its own, as the ``openai``
source's does. ``google-genai`` (``pip install 'loop-harness[gemini]'``) and ``vcrpy`` are
imported when the first request is made.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from harness._errors import LLMError
from harness._messages import AssistantMessage, Conversation, UserMessage
from harness._vendors import GEMINI
from harness.hookspecs import hookimpl
from harness.llm._base import JUDGE_ROLE, ROLE_HEADER, LLMRequest, LLMResponse
from harness.llm._chunks import LLMChunk
from harness.llm._config import LLMConfig
from harness.providers._recorded import RecordedSource, read_stream

if TYPE_CHECKING:
    from harness.cassettes._session import CassetteSession

__all__ = [
    "DEFAULT_BASE_URL",
    "KEY_VARIABLES",
    "PLACEHOLDER_API_KEY",
    "GeminiLLM",
]

DEFAULT_BASE_URL = GEMINI.base_url
# google-genai reads either; the first wins when both are set.
KEY_VARIABLES = GEMINI.key_variables
# Sent when replaying without a key: the SDK insists on one, a cassette does not.
PLACEHOLDER_API_KEY = "harness-placeholder-key"


class GeminiLLM(RecordedSource):
    """An LLM source on the official ``google-genai`` SDK, replaying or recording a cassette.

    The cassette session opens at the first request and is saved by ``aclose()`` (called
    when a run ends), as the ``openai`` source's is.
    """

    provider = "gemini"
    example_model = "gemini-2.5-flash"
    vendor = GEMINI
    placeholder_key = PLACEHOLDER_API_KEY

    def __init__(self, config: LLMConfig) -> None:
        super().__init__(config)
        from harness._modelwires import wire_named  # loaded with the first source, not with harness

        self._wire = wire_named("gemini")
        self._side = self._wire.client()

    # -- the client ----------------------------------------------------------------------

    def _client(self, session: CassetteSession | None, headers: dict[str, str]) -> Any:
        from google import genai
        from google.genai import types

        from harness.cassettes._httpx import httpx_of

        httpx = httpx_of()
        timeout = self.config.timeout if self.config.timeout is not None else 600.0
        options = types.HttpOptions(
            base_url=self._base_url() or DEFAULT_BASE_URL,
            headers=headers or None,
            httpx_async_client=self._http_client(
                httpx.AsyncClient, httpx, session, timeout=timeout
            ),
        )
        # Held by the caller for the whole request: a client nobody holds is closed by
        # the garbage collector in the middle of it.
        return genai.Client(api_key=self._api_key(), http_options=options)

    def _config(self, body: dict[str, Any], stream: bool) -> Any:
        from google.genai import types

        fields = {k: v for k, v in body.items() if k not in ("contents", "generationConfig")}
        fields.update(body.get("generationConfig") or {})
        config = types.GenerateContentConfig.model_validate(fields)
        config.automatic_function_calling = types.AutomaticFunctionCallingConfig(disable=True)
        if not stream:
            config.should_return_http_response = True
        return config

    # -- the request ---------------------------------------------------------------------

    async def complete(
        self, request: LLMRequest, emit: Callable[[LLMChunk], None] | None = None
    ) -> LLMResponse:
        """Send the conversation through the SDK (or the cassette) and return the reply."""
        body = self._side.body(
            self.config.model or "", request, self._options(request), self.config.stream
        )
        message, usage = await self._send(body, request, emit, {})
        return LLMResponse(message=message, usage=usage, latency=0.0)

    async def judge(self, messages: list[dict[str, Any]], model: str, call: int = 1) -> LLMResponse:
        """One judge request (JSON answer) through this source's cassette, marked as a
        judge's (``x-harness-role: judge``)."""
        conversation = Conversation()
        for asked in messages:
            conversation.append(UserMessage(content=str(asked.get("content") or "")))
        request = LLMRequest(conversation=conversation, tools=[], call=call)
        body = self._side.body(model, request, {"responseMimeType": "application/json"}, False)
        message, usage = await self._send(body, request, None, {ROLE_HEADER: JUDGE_ROLE}, model)
        return LLMResponse(
            message=AssistantMessage(content=message.content, finish_reason="stop"),
            usage=usage,
            latency=0.0,
        )

    async def converse(
        self, conversation: Conversation, model: str, call: int, role: str
    ) -> LLMResponse:
        """One request of a side conversation (a simulated user's), marked with ``role``,
        through this source's cassette (never streamed)."""
        request = LLMRequest(conversation=conversation, tools=[], call=call)
        body = self._side.body(model, request, {}, False)
        message, usage = await self._send(body, request, None, {ROLE_HEADER: role}, model)
        return LLMResponse(message=message, usage=usage, latency=0.0)

    async def _send(
        self,
        body: dict[str, Any],
        request: LLMRequest,
        emit: Any,
        headers: dict[str, str],
        model: str | None = None,
    ) -> tuple[AssistantMessage, dict[str, int] | None]:
        session = self._open_session()
        if session is not None:
            session.requests_sent += 1
        stream = self.config.stream and ROLE_HEADER not in headers  # judges never stream
        try:
            client = self._client(session, headers)
            try:
                reply = await self._ask(
                    client, model or self.config.model or "", body, stream, emit
                )
            finally:
                await client.aio.aclose()
        except LLMError:
            raise
        except Exception as exc:
            raise self._error(exc, request, session) from None
        return reply.message(request.call), reply.usage or None

    async def _ask(
        self, client: Any, model: str, body: dict[str, Any], stream: bool, emit: Any
    ) -> Any:
        from harness.wires._neutral import WireError

        config = self._config(body, stream)
        models = client.aio.models
        if not stream:
            answer = await models.generate_content(
                model=model, contents=body["contents"], config=config
            )
            raw = answer.sdk_http_response.body if answer.sdk_http_response else None
            try:
                return self._side.reply(json.loads(raw or "{}"))
            except WireError as exc:
                raise LLMError(str(exc), type="llm_error") from None
        chunks = await models.generate_content_stream(
            model=model, contents=body["contents"], config=config
        )
        events = (
            chunk.model_dump(mode="json", by_alias=True, exclude_none=True)
            async for chunk in chunks
        )
        return await read_stream(self._wire, events, emit)

    def _sdk_error(self, exc: Exception, scrub: Callable[[str], str]) -> LLMError | None:
        from google.genai import errors

        if isinstance(exc, errors.APIError):
            message = exc.message or exc.status or f"HTTP {exc.code}"
            return LLMError(scrub(str(message)), status=exc.code, type="http_error")
        name = type(exc).__name__
        if "Timeout" in name:
            return LLMError("Request timed out.", type="timeout")
        if "Connect" in name:
            return LLMError(scrub(f"Connection error: {exc}"), type="connection_error")
        return None


@hookimpl
def harness_register_llms(register: Any) -> None:
    """``provider: gemini``: the official google-genai SDK, replaying or recording a
    vcrpy cassette."""
    register("gemini", GeminiLLM)
