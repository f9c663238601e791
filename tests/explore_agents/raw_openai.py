"""A tool-calling loop on the raw ``openai`` SDK, as its README shows one (Chat
Completions, ``tool_calls``, ``role: tool`` results), with one planted bug per function:

- ``no_retries``: the client is made with ``max_retries=0``: a 429 or a 5xx is the end.
- ``json_loads``: ``json.loads(tool_call.function.arguments)`` unguarded.
- ``tools_lookup``: ``TOOLS[name]`` of whatever tool the model names.
- ``empty_indexed``: the answer's first line, ``content.splitlines()[0]``, of an empty one.
- ``endless_retry``: ``while True: try ... except openai.APIError: continue``.

``answer`` is the same agent with every one fixed: the SDK's own retries, bad arguments
and unknown tools answered as errors to the model, an empty answer kept empty, a bounded
retry, and an API that stays down answered in words.
"""

from __future__ import annotations

import json

import openai

from explore_agents.tools import SCHEMAS, TOOLS

MODEL = "gpt-4o-mini"
MAX_ROUNDS = 8


def _create(client: openai.OpenAI, messages: list, bug: str | None):
    if bug == "endless_retry":
        while True:
            try:
                return client.chat.completions.create(model=MODEL, messages=messages, tools=SCHEMAS)
            except openai.APIError:
                continue
    return client.chat.completions.create(model=MODEL, messages=messages, tools=SCHEMAS)


def _run_tool(name: str, arguments: str, bug: str | None) -> str:
    if bug == "json_loads":
        args = json.loads(arguments)
    else:
        try:
            args = json.loads(arguments)
        except json.JSONDecodeError:
            return f"error: the arguments are not JSON: {arguments!r}"
    if bug == "tools_lookup":
        return TOOLS[name](**args)
    fn = TOOLS.get(name)
    if fn is None:
        return f"error: there is no tool {name!r}"
    try:
        return fn(**args)
    except TypeError as exc:
        return f"error: {exc}"


def _agent(question: str, bug: str | None = None) -> str:
    client = (
        openai.OpenAI(max_retries=0) if bug in ("no_retries", "endless_retry") else openai.OpenAI()
    )
    messages: list = [{"role": "user", "content": question}]
    for _ in range(MAX_ROUNDS):
        try:
            reply = _create(client, messages, bug)
        except openai.APIError as exc:
            if bug == "no_retries":
                raise
            return f"The model is unavailable ({type(exc).__name__}); please try again later."
        message = reply.choices[0].message
        if not message.tool_calls:
            if bug == "empty_indexed":
                return message.content.splitlines()[0]
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            content = _run_tool(call.function.name, call.function.arguments, bug)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
    return "No answer within the rounds allowed."


def answer(question: str) -> str:
    """The agent, every bug fixed."""
    return _agent(question)


def no_retries(question: str) -> str:
    """A client made with max_retries=0."""
    return _agent(question, "no_retries")


def json_loads(question: str) -> str:
    """Tool arguments read with an unguarded json.loads."""
    return _agent(question, "json_loads")


def tools_lookup(question: str) -> str:
    """The tool looked up as TOOLS[name]."""
    return _agent(question, "tools_lookup")


def empty_indexed(question: str) -> str:
    """The answer's first line taken from an answer that may be empty."""
    return _agent(question, "empty_indexed")


def endless_retry(question: str) -> str:
    """A failed request retried until it works."""
    return _agent(question, "endless_retry")
