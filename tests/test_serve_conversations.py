"""harness serve answers several conversations from their own scripts on every wire,
through the vendors' own SDKs on 127.0.0.1: a conversation continues when its messages
extend an earlier request's (Chat Completions, Anthropic, Gemini) or when it is chained on
one of its responses (the Responses API's previous_response_id), interleaved with another.
"""

from __future__ import annotations

import pytest

from harness.llm._config import ConversationRule
from harness.llm._script import parse_step
from harness.serve import create_app, running_app

MAIN = "You coordinate."
SUB = "You research."


def _app():
    main = [parse_step(i, {"content": f"main {i + 1}"}) for i in range(2)]
    rule = ConversationRule.model_validate(
        {
            "name": "researcher",
            "match": {"system_contains": "research"},
            "script": [{"content": "sub 1"}, {"content": "sub 2"}],
        }
    )
    return create_app(main, conversations=[rule])


def test_responses_chains_continue_their_own_conversations():
    import openai

    with running_app(_app()) as url:
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)

        def ask(instructions, text, previous=None):
            return client.responses.create(
                model="m", instructions=instructions, input=text, previous_response_id=previous
            )

        main1 = ask(MAIN, "hi")
        sub1 = ask(SUB, "look it up")
        # Chained, each on its own conversation's response, without instructions.
        sub2 = client.responses.create(model="m", input="more", previous_response_id=sub1.id)
        main2 = client.responses.create(model="m", input="go on", previous_response_id=main1.id)

    assert [r.output_text for r in (main1, sub1, sub2, main2)] == [
        "main 1",
        "sub 1",
        "sub 2",
        "main 2",
    ]
    assert sub1.id == "resp_harness_c1_1"


def test_chat_completions_conversations_are_told_apart_by_their_messages():
    import openai

    with running_app(_app()) as url:
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)

        def ask(messages):
            reply = client.chat.completions.create(model="m", messages=messages)
            return reply.choices[0].message.content

        main = [{"role": "system", "content": MAIN}, {"role": "user", "content": "hi"}]
        sub = [{"role": "system", "content": SUB}, {"role": "user", "content": "look"}]
        answers = [ask(main), ask(sub)]
        answers.append(
            ask(
                [
                    *sub,
                    {"role": "assistant", "content": answers[1]},
                    {"role": "user", "content": "more"},
                ]
            )
        )
        answers.append(
            ask(
                [
                    *main,
                    {"role": "assistant", "content": answers[0]},
                    {"role": "user", "content": "go on"},
                ]
            )
        )
        # A retry of an earlier request gets the same answer again.
        answers.append(ask(sub))

    assert answers == ["main 1", "sub 1", "sub 2", "main 2", "sub 1"]


def test_anthropic_conversations_are_told_apart_by_their_messages():
    anthropic = pytest.importorskip("anthropic")

    with running_app(_app()) as url:
        client = anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="k", max_retries=0)

        def ask(system, messages):
            reply = client.messages.create(
                model="m", max_tokens=100, system=system, messages=messages
            )
            return reply.content[0].text

        first = [{"role": "user", "content": "hi"}]
        answers = [ask(MAIN, first), ask(SUB, first)]
        answers.append(
            ask(
                SUB,
                [
                    *first,
                    {"role": "assistant", "content": answers[1]},
                    {"role": "user", "content": "more"},
                ],
            )
        )
        answers.append(
            ask(
                MAIN,
                [
                    *first,
                    {"role": "assistant", "content": answers[0]},
                    {"role": "user", "content": "go on"},
                ],
            )
        )

    assert answers == ["main 1", "sub 1", "sub 2", "main 2"]


def test_gemini_conversations_are_told_apart_by_their_contents():
    genai = pytest.importorskip("google.genai")
    from google.genai import types

    with running_app(_app()) as url:
        options = types.HttpOptions(base_url=url.removesuffix("/v1"))
        client = genai.Client(api_key="k", http_options=options)

        def ask(system, contents):
            config = types.GenerateContentConfig(system_instruction=system)
            reply = client.models.generate_content(model="m", contents=contents, config=config)
            return reply.text

        def turn(role, text):
            return types.Content(role=role, parts=[types.Part(text=text)])

        first = [turn("user", "hi")]
        answers = [ask(MAIN, first), ask(SUB, first)]
        answers.append(ask(SUB, [*first, turn("model", answers[1]), turn("user", "more")]))
        answers.append(ask(MAIN, [*first, turn("model", answers[0]), turn("user", "go on")]))

    assert answers == ["main 1", "sub 1", "sub 2", "main 2"]


def test_a_moved_cache_marker_or_a_turn_resent_as_a_block_continues_the_conversation():
    """Claude Code marks its newest message with ``cache_control`` on every request (so an
    earlier message loses its marker) and sends an earlier text turn as a text block: the
    same history, so the same conversation (its step 2, not a new conversation's step 1)."""
    anthropic = pytest.importorskip("anthropic")
    cached = {"type": "ephemeral"}

    with running_app(_app()) as url:
        client = anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="k", max_retries=0)

        def ask(messages):
            reply = client.messages.create(model="m", max_tokens=100, system=SUB, messages=messages)
            return reply.content[0].text

        hi = {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": cached}]}
        first = ask([hi])
        again = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "text", "text": first}]},
            {
                "role": "user",
                "content": [{"type": "text", "text": "more", "cache_control": cached}],
            },
        ]
        second = ask(again)

    assert [first, second] == ["sub 1", "sub 2"]


def _worker_app():
    """A worker rule whose script calls a tool, then answers: each of its conversations
    gets the same two steps."""
    lookup = {"tool_calls": [{"lookup": {"q": "x"}}]}
    rule = ConversationRule.model_validate(
        {
            "name": "worker",
            "match": {"system_contains": "research"},
            "script": [lookup, {"content": "found it"}],
        }
    )
    return create_app([parse_step(0, {"content": "main 1"})], conversations=[rule])


def test_two_conversations_of_one_rule_give_their_calls_ids_of_their_own():
    """A worker called twice (a supervisor's worker, an agent as a tool) starts two
    conversations of one rule, each at its step 1; when the supervisor keeps both in its
    history, a repeated call id would pair a result with the wrong call."""
    import openai

    tools = [
        {
            "type": "function",
            "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}},
        }
    ]
    with running_app(_worker_app()) as url:
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)

        def ask(messages):
            reply = client.chat.completions.create(model="m", messages=messages, tools=tools)
            return reply.choices[0].message

        def worker(task):
            sent = [{"role": "system", "content": SUB}, {"role": "user", "content": task}]
            called = ask(sent)
            call = called.tool_calls[0]
            result = {"role": "tool", "tool_call_id": call.id, "content": "42"}
            done = ask([*sent, called.model_dump(exclude_none=True), result])
            return call.id, done.content

        first, second = worker("task 1"), worker("task 2")

    assert first == ("call_c1_1_0", "found it")
    assert second == ("call_c1-2_1_0", "found it")


def test_a_chain_on_a_rules_second_conversation_continues_it():
    import openai

    tools = [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]
    with running_app(_worker_app()) as url:
        client = openai.OpenAI(base_url=url, api_key="k", max_retries=0)
        first = client.responses.create(model="m", instructions=SUB, input="task 1", tools=tools)
        second = client.responses.create(model="m", instructions=SUB, input="task 2", tools=tools)
        output = {"type": "function_call_output", "output": "42"}
        answers = []
        for reply in (second, first):
            call = next(item for item in reply.output if item.type == "function_call")
            chained = client.responses.create(
                model="m",
                input=[{**output, "call_id": call.call_id}],
                previous_response_id=reply.id,
                tools=tools,
            )
            answers.append((reply.id, call.call_id, chained.output_text))

    assert answers == [
        ("resp_harness_c1-2_1", "call_c1-2_1_0", "found it"),
        ("resp_harness_c1_1", "call_c1_1_0", "found it"),
    ]
