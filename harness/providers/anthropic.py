"""The ``anthropic`` LLM source: the official ``anthropic`` SDK, live or through a vcrpy
cassette, speaking the Messages API.

It is the ``openai`` source with another SDK and another wire: the cassette session,
record modes, replay, streaming and judges work the same way (``harness.providers.openai``);
the SDK carries the JSON the Messages wire (``harness.wires.anthropic_messages``) writes
and reads. ``anthropic`` is imported at the first request: ``pip install
'loop-harness[anthropic]'``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from harness.errors import HarnessError
from harness.hookspecs import hookimpl
from harness.llm.config import LLMConfig
from harness.providers.openai import OpenAILLM, _shared_ssl_context

if TYPE_CHECKING:
    from harness.cassettes.session import CassetteSession
    from harness.wires import Wire

__all__ = ["PLACEHOLDER_API_KEY", "AnthropicLLM"]

# Sent when replaying without ANTHROPIC_API_KEY: the SDK insists on a key, a cassette
# does not need one, and this value is not a secret.
PLACEHOLDER_API_KEY = "sk-ant-placeholder"  # short: no secret scanner takes it for a key

_ACCEPT_ENCODING = "gzip, deflate"
_INSTALL = "provider anthropic needs the anthropic SDK: pip install 'loop-harness[anthropic]'"


def _sdk() -> Any:
    try:
        import anthropic
    except ImportError:
        raise HarnessError(_INSTALL) from None
    return anthropic


def _httpx(anthropic: Any) -> Any:
    """The httpx flavour the installed SDK is built on (httpx2 for anthropic 2.x)."""
    try:
        import httpx2

        if issubclass(anthropic.DefaultAsyncHttpxClient, httpx2.AsyncClient):
            return httpx2
    except ImportError:
        pass
    import httpx

    return httpx


class AnthropicLLM(OpenAILLM):
    """An LLM source on the official ``anthropic`` SDK (the Messages API), replaying or
    recording a cassette like ``provider: openai``."""

    provider = "anthropic"
    example_model = "claude-sonnet-4-6"

    def _wire_of(self, config: LLMConfig) -> Wire:
        from harness.wires import ANTHROPIC_MESSAGES

        return ANTHROPIC_MESSAGES

    def _judge_wire(self) -> Wire:
        return self._wire

    def _judge_params(self, messages: list[dict[str, Any]], model: str) -> dict[str, Any]:
        """A judge's request: the system text apart, the rest as user turns; the Messages
        API has no JSON mode, and the judge's prompt asks for JSON."""
        system = [str(m.get("content") or "") for m in messages if m.get("role") == "system"]
        turns = [
            {
                "role": "user" if m.get("role") != "assistant" else "assistant",
                "content": m["content"],
            }
            for m in messages
            if m.get("role") != "system"
        ]
        params: dict[str, Any] = {"model": model, "max_tokens": 1024, "messages": turns}
        if system:
            params["system"] = "\n\n".join(system)
        return params

    def _sdk(self) -> Any:
        return _sdk()

    async def _post(self, client: Any, path: str, body: dict[str, Any]) -> Any:
        """POST the body as it is (the wire wrote it); the answer's JSON, or each event's."""
        from anthropic import AsyncStream

        stream = bool(body.get("stream"))
        return await client.post(
            path, body=body, cast_to=object, stream=stream, stream_cls=AsyncStream[object]
        )

    def _client(
        self, session: CassetteSession | None, headers: dict[str, str] | None = None
    ) -> Any:
        anthropic = _sdk()
        httpx = _httpx(anthropic)
        kwargs: dict[str, Any] = {
            "api_key": os.environ.get("ANTHROPIC_API_KEY") or PLACEHOLDER_API_KEY,
        }
        default_headers = dict(headers or {})
        if session is not None and not session.replays_only:
            default_headers["Accept-Encoding"] = _ACCEPT_ENCODING
        if default_headers:
            kwargs["default_headers"] = default_headers
        base_url = self.config.base_url or os.environ.get("ANTHROPIC_BASE_URL")
        if base_url:
            kwargs["base_url"] = base_url
        if self.config.timeout is not None:
            kwargs["timeout"] = self.config.timeout
        ssl_context = _shared_ssl_context(httpx)
        if session is not None:
            from harness.cassettes.session import cassette_transport

            # As for openai: no retries under a cassette (recorded 429s would be replayed
            # with real back-off sleeps, and the retry-count header would change).
            kwargs["max_retries"] = 0
            transport = cassette_transport(
                session, httpx, key_variable="ANTHROPIC_API_KEY", verify=ssl_context
            )
            kwargs["http_client"] = anthropic.DefaultAsyncHttpxClient(transport=transport)
        else:
            kwargs["http_client"] = anthropic.DefaultAsyncHttpxClient(verify=ssl_context)
        return anthropic.AsyncAnthropic(**kwargs)


@hookimpl
def harness_register_llms(register: Any) -> None:
    """``provider: anthropic``: the official SDK, replaying or recording a vcrpy cassette."""
    register("anthropic", AnthropicLLM)
