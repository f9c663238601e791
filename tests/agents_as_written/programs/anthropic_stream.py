"""The Anthropic SDK, streamed: `messages.stream(...)`, text printed as it comes
(`stream.text_stream`), the whole message from `get_final_message()`."""

from __future__ import annotations

import anthropic

from tests.agents_as_written.programs import toolkit
from tests.agents_as_written.programs.anthropic_sync import TOOLS, tool_results


def answer(question: str) -> str:
    client = anthropic.Anthropic()
    messages: list[dict] = [{"role": "user", "content": question}]
    while True:
        with client.messages.stream(
            model=toolkit.model("claude-sonnet-4-5"),
            max_tokens=1024,
            tools=TOOLS,
            messages=messages,
        ) as stream:
            for text in stream.text_stream:
                print(text, end="", flush=True)
            message = stream.get_final_message()
        if message.stop_reason != "tool_use":
            return "".join(b.text for b in message.content if b.type == "text")
        messages.append({"role": "assistant", "content": message.content})
        messages.append({"role": "user", "content": tool_results(message.content)})
