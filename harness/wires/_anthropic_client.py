"""The Messages API as the own loop's ``anthropic`` source writes it: harness's
conversation as ``system`` and ``messages`` of content blocks, its tools and tool_choice
in this API's form (``harness.wires._anthropic_messages`` reads the answers)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness._messages import AssistantMessage, Message, SystemMessage, ToolMessage
from harness.llm._base import LLMRequest
from harness.wires._neutral import WireError, WireReply

__all__ = ["DEFAULT_MAX_TOKENS", "MessagesClient", "request_tool", "request_tool_choice"]

# max_tokens is required by the API; the own loop sends this unless llm.options gives one.
DEFAULT_MAX_TOKENS = 4096


def _request_blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    """One harness message as (role, content blocks)."""
    if isinstance(message, ToolMessage):
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.content,
        }
        if message.is_error:
            block["is_error"] = True
        return "user", [block]
    if isinstance(message, AssistantMessage):
        # Thinking blocks go back first and unchanged: the API checks their signatures.
        blocks: list[dict[str, Any]] = [dict(b) for b in message.reasoning]
        if message.content:
            blocks.append({"type": "text", "text": message.content})
        for call in message.tool_calls:
            # The API takes an object; arguments that were not one are sent as none.
            blocks.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
            )
        return "assistant", blocks
    return "user", [{"type": "text", "text": str(message.content)}]


def request_tool(schema: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions tool schema as a Messages API tool."""
    function = schema.get("function", {})
    tool: dict[str, Any] = {"name": function.get("name")}
    if function.get("description"):
        tool["description"] = function["description"]
    tool["input_schema"] = function.get("parameters") or {"type": "object", "properties": {}}
    return tool


def request_tool_choice(choice: Any) -> Any:
    """A Chat Completions ``tool_choice`` as this API's."""
    if isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        return {"type": "tool", "name": choice["function"].get("name")}
    if choice in ("none", "auto"):
        return {"type": choice}
    if choice == "required":
        return {"type": "any"}
    return choice


class MessagesClient:
    """Requests of the own loop as Messages bodies (each message converted once while the
    conversation only grows; a user turn's tool results in one message), and whole
    messages read (by ``read``, the wire's reading of a whole answer)."""

    path = "/v1/messages"

    def __init__(self, read: Callable[[Any], WireReply | None]) -> None:
        self._read = read
        self._known: list[Any] = []
        self._built: list[dict[str, Any]] = []
        self._system: list[str] = []

    def body(
        self, model: str, request: LLMRequest, options: dict[str, Any], stream: bool
    ) -> dict[str, Any]:
        """``system``, ``messages``, ``tools``, ``max_tokens`` and the options."""
        messages = self._messages(request)
        params: dict[str, Any] = {"model": model, "max_tokens": DEFAULT_MAX_TOKENS}
        if self._system:
            params["system"] = "\n\n".join(self._system)
        params["messages"] = messages
        if request.tools:
            params["tools"] = [request_tool(t.openai_schema()) for t in request.tools]
        options = dict(options)
        if "tool_choice" in options:
            options["tool_choice"] = request_tool_choice(options["tool_choice"])
        params.update(options)
        if stream:
            params["stream"] = True
        return params

    def reply(self, answer: Any) -> WireReply:
        """The message's content; WireError when the answer is no message."""
        reply = self._read(answer)
        if reply is None:
            raise WireError(502, "the model returned no message")
        return reply

    def _messages(self, request: LLMRequest) -> list[dict[str, Any]]:
        messages = request.conversation.messages
        known, built = self._known, self._built
        n = len(known)
        same = n == 0 or (
            len(messages) >= n and messages[0] is known[0] and messages[n - 1] is known[n - 1]
        )
        if not same:
            known.clear()
            built.clear()
            self._system.clear()
        for message in messages[len(known) :]:
            known.append(message)
            if isinstance(message, SystemMessage):
                self._system.append(message.content)
                continue
            role, blocks = _request_blocks(message)
            if built and built[-1]["role"] == role:
                # One turn (a reply's tool results): a new dict, as the one before may
                # have been sent already.
                built[-1] = {"role": role, "content": [*built[-1]["content"], *blocks]}
            else:
                built.append({"role": role, "content": blocks})
        return list(built)
