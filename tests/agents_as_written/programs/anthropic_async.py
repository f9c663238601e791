"""The Anthropic SDK, async: `AsyncAnthropic` in the same tool-use loop, the tools of one
reply run concurrently with `asyncio.gather`."""

from __future__ import annotations

import asyncio

import anthropic

from tests.agents_as_written.programs import toolkit
from tests.agents_as_written.programs.anthropic_sync import TOOLS


async def _run(block) -> dict:
    text, failed = await asyncio.to_thread(toolkit.run, block.name, block.input)
    result = {"type": "tool_result", "tool_use_id": block.id, "content": text}
    if failed:
        result["is_error"] = True
    return result


async def answer(question: str) -> str:
    async with anthropic.AsyncAnthropic() as client:
        messages: list[dict] = [{"role": "user", "content": question}]
        while True:
            response = await client.messages.create(
                model=toolkit.model("claude-sonnet-4-5"),
                max_tokens=1024,
                tools=TOOLS,
                messages=messages,
            )
            if response.stop_reason != "tool_use":
                return "".join(b.text for b in response.content if b.type == "text")
            messages.append({"role": "assistant", "content": response.content})
            calls = [b for b in response.content if b.type == "tool_use"]
            results = await asyncio.gather(*(_run(b) for b in calls))
            messages.append({"role": "user", "content": list(results)})
