"""Agents written on the raw ``anthropic`` SDK: a loop of Messages API requests that runs the
tools the model asks for (``tool_use`` blocks) and sends their results back as
``tool_result`` blocks until it answers in text. Sync and streamed.

The client is built inside the call with the SDK's defaults, so it reaches whatever
``ANTHROPIC_BASE_URL`` says: harness sets it while the agent runs.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic

from scenarios.external.agents.tools import SCHEMAS, run_tool

MODEL = "claude-sonnet-4-6"
MAX_ROUNDS = 10
MAX_TOKENS = 1024

# The example tools in the Messages API's form.
TOOLS = [
    {
        "name": s["function"]["name"],
        "description": s["function"]["description"],
        "input_schema": s["function"]["parameters"],
    }
    for s in SCHEMAS
]


def _arguments(block: Any) -> str:
    """A call's arguments as text (``input`` is an object; a model's malformed arguments
    may come as the text itself)."""
    return block.input if isinstance(block.input, str) else json.dumps(block.input)


def _results(message: Any) -> list[dict]:
    """One user turn: a tool_result block per tool_use block, errors marked."""
    results = []
    for block in message.content:
        if block.type != "tool_use":
            continue
        text = run_tool(block.name, _arguments(block))
        result = {"type": "tool_result", "tool_use_id": block.id, "content": text}
        if text.startswith("error:"):
            result["is_error"] = True
        results.append(result)
    return results


def _text(message: Any) -> str:
    return "".join(b.text for b in message.content if b.type == "text")


def answer(question: str) -> str:
    """The sync agent."""
    client = anthropic.Anthropic()
    messages: list[dict] = [{"role": "user", "content": question}]
    for _ in range(MAX_ROUNDS):
        message = client.messages.create(
            model=MODEL, max_tokens=MAX_TOKENS, messages=messages, tools=TOOLS
        )
        messages.append({"role": "assistant", "content": message.content})
        if message.stop_reason != "tool_use":
            return _text(message)
        messages.append({"role": "user", "content": _results(message)})
    raise RuntimeError(f"no answer after {MAX_ROUNDS} rounds")


def answer_streaming(question: str) -> str:
    """The streaming agent: each reply read from the SDK's stream helper."""
    client = anthropic.Anthropic()
    messages: list[dict] = [{"role": "user", "content": question}]
    for _ in range(MAX_ROUNDS):
        with client.messages.stream(
            model=MODEL, max_tokens=MAX_TOKENS, messages=messages, tools=TOOLS
        ) as stream:
            for _event in stream:
                pass
            message = stream.get_final_message()
        messages.append({"role": "assistant", "content": message.content})
        if message.stop_reason != "tool_use":
            return _text(message)
        messages.append({"role": "user", "content": _results(message)})
    raise RuntimeError(f"no answer after {MAX_ROUNDS} rounds")
