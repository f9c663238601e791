"""The ``anthropic`` LLM source: the official ``anthropic`` SDK, live or through a vcrpy
cassette, speaking the Messages API.

A sibling of the ``openai`` source on another SDK and another wire: both SDKs are
Stainless's, so the cassette session, record modes, replay, streaming and judges work the
same way (``harness.providers._stainless``); the SDK carries the JSON the Messages wire
(``harness.wires._anthropic_messages``) writes and reads. ``anthropic`` is imported at the
first request: ``pip install 'loop-harness[anthropic]'``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness._errors import HarnessError
from harness._vendors import ANTHROPIC
from harness.hookspecs import hookimpl
from harness.llm._config import LLMConfig
from harness.providers._stainless import StainlessSource

if TYPE_CHECKING:
    from harness.wires import Wire

__all__ = ["PLACEHOLDER_API_KEY", "AnthropicLLM"]

# Sent when replaying without a key: the SDK insists on one, a cassette
# does not need one, and this value is not a secret.
PLACEHOLDER_API_KEY = "sk-ant-placeholder"  # short: no secret scanner takes it for a key

_INSTALL = "provider anthropic needs the anthropic SDK: pip install 'loop-harness[anthropic]'"


def _sdk() -> Any:
    try:
        import anthropic
    except ImportError:
        raise HarnessError(_INSTALL) from None
    return anthropic


class AnthropicLLM(StainlessSource):
    """An LLM source on the official ``anthropic`` SDK (the Messages API), replaying or
    recording a cassette like ``provider: openai``."""

    provider = "anthropic"
    example_model = "claude-sonnet-4-6"
    vendor = ANTHROPIC
    placeholder_key = PLACEHOLDER_API_KEY

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

    def _new_client(self, sdk: Any, kwargs: dict[str, Any]) -> Any:
        return sdk.AsyncAnthropic(**kwargs)


@hookimpl
def harness_register_llms(register: Any) -> None:
    """``provider: anthropic``: the official SDK, replaying or recording a vcrpy cassette."""
    register("anthropic", AnthropicLLM)
