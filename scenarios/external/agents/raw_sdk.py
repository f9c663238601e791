"""Agents written on the raw ``openai`` SDK: a loop of Chat Completions requests that runs
the tools the model asks for until it answers in text. Sync, async and streamed.

The client is built inside the call with the SDK's defaults, so it reaches whatever
``OPENAI_BASE_URL`` says: harness sets it while the agent runs.
"""

from __future__ import annotations

import openai

from scenarios.external.agents.tools import SCHEMAS, run_tool

MODEL = "gpt-4o-mini"
MAX_ROUNDS = 10


def _tool_messages(calls: list) -> list[dict]:
    return [
        {
            "role": "tool",
            "tool_call_id": c.id,
            "content": run_tool(c.function.name, c.function.arguments),
        }
        for c in calls
    ]


def _assistant(message) -> dict:
    return message.model_dump(exclude_none=True, exclude={"refusal", "annotations", "audio"})


def answer(question: str) -> str:
    """The sync agent."""
    client = openai.OpenAI(max_retries=0)
    messages: list[dict] = [{"role": "user", "content": question}]
    for _ in range(MAX_ROUNDS):
        reply = client.chat.completions.create(model=MODEL, messages=messages, tools=SCHEMAS)
        message = reply.choices[0].message
        messages.append(_assistant(message))
        if not message.tool_calls:
            return message.content or ""
        messages.extend(_tool_messages(message.tool_calls))
    raise RuntimeError(f"no answer after {MAX_ROUNDS} rounds")


async def answer_async(question: str) -> str:
    """The async agent."""
    async with openai.AsyncOpenAI(max_retries=0) as client:
        messages: list[dict] = [{"role": "user", "content": question}]
        for _ in range(MAX_ROUNDS):
            reply = await client.chat.completions.create(
                model=MODEL, messages=messages, tools=SCHEMAS
            )
            message = reply.choices[0].message
            messages.append(_assistant(message))
            if not message.tool_calls:
                return message.content or ""
            messages.extend(_tool_messages(message.tool_calls))
    raise RuntimeError(f"no answer after {MAX_ROUNDS} rounds")


def answer_streaming(question: str, base_url: str) -> str:
    """The streaming agent (it takes ``base_url``: harness passes the served URL)."""
    client = openai.OpenAI(base_url=base_url, max_retries=0)
    messages: list[dict] = [{"role": "user", "content": question}]
    for _ in range(MAX_ROUNDS):
        with client.chat.completions.stream(
            model=MODEL,
            messages=messages,
            tools=SCHEMAS,
            stream_options={"include_usage": True},
        ) as stream:
            for _event in stream:
                pass
            message = stream.get_final_completion().choices[0].message
        messages.append(_assistant(message))
        if not message.tool_calls:
            return message.content or ""
        messages.extend(_tool_messages(message.tool_calls))
    raise RuntimeError(f"no answer after {MAX_ROUNDS} rounds")
