"""What the loop sends to an LLM source and what it gets back."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from harness._messages import AssistantMessage, Conversation

__all__ = [
    "AGENT_ROLE",
    "JUDGE_ROLE",
    "LLM",
    "ROLE_HEADER",
    "USER_ROLE",
    "LLMRequest",
    "LLMResponse",
    "OfferedTool",
    "close_llm",
    "request_role",
]

# The request marker that tells a judge's request from the agent's own: sent as an HTTP
# header (recorded with the request in the cassette), read by cassette matching (a judge
# request only ever plays a judge interaction, and the reverse) and by `harness serve`
# (which answers it from the judge's script). A request without it is the agent's.
ROLE_HEADER = "x-harness-role"
JUDGE_ROLE = "judge"
AGENT_ROLE = "agent"
# A simulated user's request (``user: {simulator: llm}``): recorded and matched apart from
# the agent's, as a judge's; `harness serve` answers it as any conversation's.
USER_ROLE = "user"


def request_role(headers: Any) -> str:
    """The role a request's headers mark it with: ``judge``, ``user``, else ``agent``."""
    value = headers.get(ROLE_HEADER) if headers is not None else None
    if isinstance(value, list):
        value = value[0] if value else None
    return value if value in (JUDGE_ROLE, USER_ROLE) else AGENT_ROLE


class OfferedTool(Protocol):
    """A tool a request offers the model: an agent's ``Tool``, or a tool an external target
    declared in its own request (``harness.external._observe.ObservedTool``)."""

    @property
    def name(self) -> str:
        """The name the model calls it by."""
        ...

    def openai_schema(self) -> dict[str, Any]:
        """The Chat Completions form of the tool."""
        ...


@dataclass
class LLMRequest:
    """One request: the conversation so far, the tools, and per-request options."""

    conversation: Conversation
    tools: Sequence[OfferedTool]
    # Per-request options, e.g. {"tool_choice": "none"} for the final answer at the limit.
    options: dict[str, Any] = field(default_factory=dict)
    # 1-based number of this LLM call in the run.
    call: int = 1
    # The model API an external target's request came on, by its wire's name
    # (``openai-chat``, ``anthropic``, ...): set by the observer, which reads requests off
    # the HTTP boundary; None for harness's own loop, whose requests are on no wire.
    wire: str | None = None

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

    It raises ``harness._errors.LLMError`` for HTTP errors, timeouts and the like. It may
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
