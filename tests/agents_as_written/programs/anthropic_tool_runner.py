"""The Anthropic SDK's tool runner (`client.beta.messages.tool_runner`), the loop Anthropic's
docs recommend: tools are `@beta_tool` functions, the runner calls them and sends their
results back; a tool that raises is sent back as a `tool_result` with `is_error: true`."""

from __future__ import annotations

import anthropic
from anthropic import beta_tool

from tests.agents_as_written.programs import toolkit


@beta_tool
def lookup_city(city: str) -> str:
    """Look up a city's country and population.

    Args:
        city: The city's name
    """
    return toolkit.lookup_city(city)


@beta_tool
def save_note(text: str) -> str:
    """Save a short note to the user's notes file.

    Args:
        text: The note
    """
    return toolkit.save_note(text)


def answer(question: str) -> str:
    client = anthropic.Anthropic()
    runner = client.beta.messages.tool_runner(
        model=toolkit.model("claude-sonnet-4-5"),
        max_tokens=1024,
        tools=[lookup_city, save_note],
        messages=[{"role": "user", "content": question}],
    )
    final = runner.until_done()
    return "".join(b.text for b in final.content if b.type == "text")
