"""The ``openai`` LLM source: the official SDK, live or through a vcrpy cassette.

Chat Completions (streamed or not) and the Responses API (``api: responses``). The SDK
sends the request and hands back the answer's JSON (each event's, streamed); the API's
wire (``harness.wires``) reads it, as ``harness serve``, the observer and freeze read the
same API. What it shares with the ``anthropic`` source (both SDKs are Stainless's) is
``harness.providers._stainless``; the cassette, key and client, with every recorded source
(``harness.providers._recorded``). ``openai`` and ``vcrpy`` are imported when the first
request is made, so importing harness stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness._vendors import OPENAI, WireVendor
from harness.hookspecs import hookimpl
from harness.llm._config import LLMConfig
from harness.providers._stainless import StainlessSource

if TYPE_CHECKING:
    from harness.wires import Wire

__all__ = ["PLACEHOLDER_API_KEY", "OpenAILLM"]

# Sent when replaying without a key: the SDK insists on one, a cassette
# does not need one, and this value is not a secret.
PLACEHOLDER_API_KEY = "sk-harness-placeholder"


class OpenAILLM(StainlessSource):
    """An LLM source on the official ``openai`` SDK, replaying or recording a cassette.

    A cassette session is opened at the first request and saved (if anything was
    recorded) by ``aclose()``, which the scenario runner calls; the built-in plugin
    also closes it when a run ends (``harness_agent_end``).
    """

    provider = "openai"
    example_model = "gpt-4o-mini"
    vendor: WireVendor = OPENAI
    placeholder_key = PLACEHOLDER_API_KEY

    def _sdk(self) -> Any:
        import openai

        return openai

    def _new_client(self, sdk: Any, kwargs: dict[str, Any]) -> Any:
        return sdk.AsyncOpenAI(**kwargs)

    def _wire_of(self, config: LLMConfig) -> Wire:
        from harness._modelwires import wire_named  # loaded with the first source, not with harness

        return wire_named(config.api)

    def _judge_wire(self) -> Wire:
        from harness._modelwires import wire_named

        return wire_named("chat")

    def _judge_params(self, messages: list[dict[str, Any]], model: str) -> dict[str, Any]:
        """A judge's request body: Chat Completions in JSON mode."""
        return {"model": model, "messages": messages, "response_format": {"type": "json_object"}}


# -- the plugin ----------------------------------------------------------------------------


@hookimpl
def harness_register_llms(register: Any) -> None:
    """``provider: openai``: the official SDK, replaying or recording a vcrpy cassette."""
    register("openai", OpenAILLM)
