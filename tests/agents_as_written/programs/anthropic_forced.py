"""The Anthropic SDK with forced tool choice: the first request forces `lookup_city`
(`tool_choice={"type": "tool", "name": ...}`), later ones leave the choice to the model
(`{"type": "auto"}`)."""

from __future__ import annotations

import anthropic

from tests.agents_as_written.programs import toolkit
from tests.agents_as_written.programs.anthropic_sync import TOOLS, tool_results


def answer(question: str) -> str:
    client = anthropic.Anthropic()
    messages: list[dict] = [{"role": "user", "content": question}]
    choice: dict = {"type": "tool", "name": "lookup_city"}
    while True:
        response = client.messages.create(
            model=toolkit.model("claude-sonnet-4-5"),
            max_tokens=1024,
            tools=TOOLS,
            tool_choice=choice,
            messages=messages,
        )
        if response.stop_reason != "tool_use":
            return "".join(b.text for b in response.content if b.type == "text")
        messages.append({"role": "assistant", "content": response.content})
        messages.append({"role": "user", "content": tool_results(response.content)})
        choice = {"type": "auto"}
