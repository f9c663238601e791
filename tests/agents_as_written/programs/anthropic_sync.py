"""The Anthropic SDK, sync: the tool-use loop of Anthropic's tool-use docs.

`messages.create` until `stop_reason` is not `tool_use`; each `tool_use` block answered by a
`tool_result` block in one user turn, a failing tool's with `is_error: true`.
"""

from __future__ import annotations

import anthropic

from tests.agents_as_written.programs import toolkit

TOOLS = [
    {
        "name": "lookup_city",
        "description": toolkit.LOOKUP_DOC,
        "input_schema": toolkit.LOOKUP_SCHEMA,
    },
    {"name": "save_note", "description": toolkit.NOTE_DOC, "input_schema": toolkit.NOTE_SCHEMA},
]


def tool_results(content: list) -> list[dict]:
    """One tool_result block per tool_use block, errors marked as the docs say."""
    results = []
    for block in content:
        if block.type == "tool_use":
            text, failed = toolkit.run(block.name, block.input)
            result = {"type": "tool_result", "tool_use_id": block.id, "content": text}
            if failed:
                result["is_error"] = True
            results.append(result)
    return results


def answer(question: str) -> str:
    client = anthropic.Anthropic()
    messages: list[dict] = [{"role": "user", "content": question}]
    response = client.messages.create(
        model=toolkit.model("claude-sonnet-4-5"), max_tokens=1024, tools=TOOLS, messages=messages
    )
    while response.stop_reason == "tool_use":
        messages.append({"role": "assistant", "content": response.content})
        messages.append({"role": "user", "content": tool_results(response.content)})
        response = client.messages.create(
            model=toolkit.model("claude-sonnet-4-5"),
            max_tokens=1024,
            tools=TOOLS,
            messages=messages,
        )
    return "".join(block.text for block in response.content if block.type == "text")
