"""The Gemini API as the own loop's ``gemini`` source speaks it: harness's conversation
written as a ``generateContent`` body, and whole answers read.

System messages become ``systemInstruction``; a tool message becomes a
``functionResponse`` part (``{"result": text}``) in a ``user`` turn, tool messages in a
row sharing one turn, as the API wants every response to a model turn's calls together;
an assistant message becomes a ``model`` turn with its thoughts and signed parts sent
back as they came (thinking models refuse a call whose ``thoughtSignature`` is missing).
"""

from __future__ import annotations

from typing import Any

from harness._messages import AssistantMessage, Message, SystemMessage, ToolMessage
from harness.llm._base import LLMRequest
from harness.wires._gemini_serving import field
from harness.wires._neutral import Wire, WireError, WireReply

__all__ = ["GeminiClient", "declaration", "tool_config"]


def declaration(schema: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions tool schema as a function declaration (JSON Schema parameters)."""
    function = schema.get("function", {})
    out: dict[str, Any] = {"name": function.get("name")}
    if function.get("description"):
        out["description"] = function["description"]
    out["parametersJsonSchema"] = function.get("parameters") or {
        "type": "object",
        "properties": {},
    }
    return out


def tool_config(choice: Any) -> dict[str, Any] | None:
    """A Chat Completions ``tool_choice`` as ``toolConfig`` (None for auto or none given)."""
    if choice == "none":
        mode: dict[str, Any] = {"mode": "NONE"}
    elif choice == "required":
        mode = {"mode": "ANY"}
    elif isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        mode = {"mode": "ANY", "allowedFunctionNames": [choice["function"].get("name")]}
    else:
        return None
    return {"functionCallingConfig": mode}


def _signature(reasoning: list[dict[str, Any]], name: str) -> Any:
    """The thoughtSignature the model gave its call to ``name``, if any."""
    for part in reasoning:
        call = field(part, "functionCall")
        if isinstance(call, dict) and call.get("name") == name:
            return field(part, "thoughtSignature")
    return None


def _model_turn(message: AssistantMessage) -> dict[str, Any]:
    reasoning = message.reasoning
    parts: list[dict[str, Any]] = [dict(p) for p in reasoning if p.get("thought")]
    if message.content:
        signed = [p for p in reasoning if not p.get("thought") and "text" in p]
        parts.append(dict(signed[0]) if signed else {"text": message.content})
    used: set[int] = set()
    for call in message.tool_calls:
        part: dict[str, Any] = {
            "functionCall": {"id": call.id, "name": call.name, "args": call.arguments}
        }
        signature = _signature([p for i, p in enumerate(reasoning) if i not in used], call.name)
        if signature is not None:
            part["thoughtSignature"] = signature
            used.add(
                next(
                    i
                    for i, p in enumerate(reasoning)
                    if i not in used and field(p, "thoughtSignature") == signature
                )
            )
        parts.append(part)
    return {"role": "model", "parts": parts}


def _response(message: ToolMessage) -> dict[str, Any]:
    return {
        "functionResponse": {
            "id": message.tool_call_id,
            "name": message.name,
            "response": {"error" if message.is_error else "result": message.content},
        }
    }


def contents(messages: list[Message]) -> tuple[list[dict[str, Any]], str | None]:
    """The conversation as ``contents``, and the system text."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            system.append(message.content)
        elif isinstance(message, AssistantMessage):
            out.append(_model_turn(message))
        elif isinstance(message, ToolMessage):
            last = out[-1] if out else None
            answers = last is not None and last["role"] == "user" and last.get("_responses")
            if not answers:
                last = {"role": "user", "parts": [], "_responses": True}
                out.append(last)
            assert last is not None
            last["parts"].append(_response(message))
        else:
            out.append({"role": "user", "parts": [{"text": message.content}]})
    for content in out:
        content.pop("_responses", None)
    return out, "\n\n".join(system) if system else None


class GeminiClient:
    """Requests of the own loop as ``generateContent`` bodies, and answers read."""

    path = "/models/{model}:generateContent"

    def __init__(self, wire: Wire) -> None:
        self._wire = wire

    def body(
        self, model: str, request: LLMRequest, options: dict[str, Any], stream: bool
    ) -> dict[str, Any]:
        """``contents``, ``systemInstruction``, ``tools``, ``toolConfig`` and the options
        as ``generationConfig`` (the model and streaming are in the path)."""
        turns, system = contents(request.conversation.messages)
        body: dict[str, Any] = {"contents": turns}
        if system is not None:
            body["systemInstruction"] = {"parts": [{"text": system}]}
        options = dict(options)
        choice = options.pop("tool_choice", None)
        if request.tools:
            declarations = [declaration(schema) for schema in request.tool_schemas]
            body["tools"] = [{"functionDeclarations": declarations}]
            config = tool_config(choice)
            if config is not None:
                body["toolConfig"] = config
        if options:
            body["generationConfig"] = options
        return body

    def reply(self, answer: Any) -> WireReply:
        """Candidate 0; WireError when the answer holds no candidate."""
        reply = self._wire.read_reply(answer, False)
        if reply is None or not field(answer, "candidates"):
            raise WireError(502, "the model returned no candidates")
        return reply
