"""What the loop sends to an LLM source and what it gets back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from harness.messages import AssistantMessage, Conversation

if TYPE_CHECKING:
    from harness.tools import Tool

__all__ = ["LLM", "LLMRequest", "LLMResponse", "close_llm"]


@dataclass
class LLMRequest:
    """One request: the conversation so far, the tools, and per-request options."""

    conversation: Conversation
    tools: list[Tool]
    # Per-request options, e.g. {"tool_choice": "none"} for the final answer at the limit.
    options: dict[str, Any] = field(default_factory=dict)
    # 1-based number of this LLM call in the run.
    call: int = 1

    @property
    def messages(self) -> list[dict[str, Any]]:
        """Chat Completions ``messages`` (built from the conversation's per-message cache)."""
        return self.conversation.to_openai()

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        """Chat Completions ``tools``."""
        return [t.openai_schema() for t in self.tools]

    @property
    def tool_choice(self) -> Any:
        """The requested tool_choice, if any."""
        return self.options.get("tool_choice")


@dataclass
class LLMResponse:
    """A reply: the assistant message, token usage, and simulated latency in seconds."""

    message: AssistantMessage
    usage: dict[str, int] | None = None
    latency: float = 0.0


class LLM(Protocol):
    """An LLM source: anything with ``async complete(request) -> LLMResponse``.

    It raises ``harness.errors.LLMError`` for HTTP errors, timeouts and the like. It may
    also have ``async aclose()``: ``Agent.arun`` awaits it when each run ends (a cassette
    source saves its recording there). Use ``close_llm`` to call it.
    """

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The model's reply to ``request``."""
        ...


async def close_llm(llm: LLM) -> None:
    """Await the source's optional ``aclose()`` (sources without one need no closing)."""
    close = getattr(llm, "aclose", None)
    if close is not None:
        await close()
