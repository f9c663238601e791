"""The Anthropic SDK with extended thinking: `thinking={"type": "enabled", "budget_tokens": ...}`,
the assistant turn sent back whole (thinking blocks first, unchanged, as the docs require
during tool use)."""

from __future__ import annotations

import anthropic

from tests.agents_as_written.programs import toolkit
from tests.agents_as_written.programs.anthropic_sync import TOOLS, tool_results

THINKING = {"type": "enabled", "budget_tokens": 2048}


def answer(question: str) -> str:
    client = anthropic.Anthropic()
    messages: list[dict] = [{"role": "user", "content": question}]
    while True:
        response = client.messages.create(
            model=toolkit.model("claude-sonnet-4-5"),
            max_tokens=4096,
            thinking=THINKING,
            tools=TOOLS,
            messages=messages,
        )
        if response.stop_reason != "tool_use":
            return "".join(b.text for b in response.content if b.type == "text")
        messages.append({"role": "assistant", "content": response.content})
        messages.append({"role": "user", "content": tool_results(response.content)})
