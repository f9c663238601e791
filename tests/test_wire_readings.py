"""What each wire reads out of an answer, for the signals a user's results depend on: the
tokens billed, a reply cut short or blocked, a tool that failed.

The bodies are the APIs' own documented forms. Each test failed against a hand-made
mutant of the wire that the other tests let pass (scripts/mutation.py).
"""

from __future__ import annotations

import json

import pytest

from harness.serve import running_server
from harness.wires import ANTHROPIC_MESSAGES as ANTHROPIC
from harness.wires import GEMINI, OPENAI_RESPONSES
from harness.wires._failures import read_result, reports_error
from harness.wires._neutral import SSEBody, read_sse


def test_anthropic_prompt_tokens_count_the_cached_input_too():
    # The Messages API counts cached input apart from input_tokens; each is billed.
    usage = {
        "input_tokens": 10,
        "cache_creation_input_tokens": 200,
        "cache_read_input_tokens": 3000,
        "output_tokens": 7,
    }
    body = {"type": "message", "role": "assistant", "content": [], "usage": usage}
    body["stop_reason"] = "end_turn"
    reply = ANTHROPIC.read_reply(body, False)
    assert reply is not None
    assert reply.usage == {"prompt_tokens": 3210, "completion_tokens": 7, "total_tokens": 3217}


def test_gemini_completion_tokens_count_the_thoughts_too():
    # Gemini bills thinking as output; candidatesTokenCount leaves it out.
    body = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"text": "thinking it over", "thought": True}, {"text": "Sunny."}],
                },
                "finishReason": "STOP",
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 10,
            "candidatesTokenCount": 3,
            "thoughtsTokenCount": 40,
            "totalTokenCount": 53,
        },
    }
    reply = GEMINI.read_reply(body, False)
    assert reply is not None
    assert reply.usage == {"prompt_tokens": 10, "completion_tokens": 43, "total_tokens": 53}
    assert reply.content == "Sunny."  # the thought is reasoning, not the answer


def test_gemini_a_reply_blocked_for_safety_is_content_filtered():
    body = {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "SAFETY"}]}
    reply = GEMINI.read_reply(body, False)
    assert reply is not None and reply.finish_reason == "content_filter"


def test_gemini_id_less_calls_of_one_tool_get_ids_of_their_own():
    parts = [
        {"functionCall": {"name": "weather", "args": {"city": "Paris"}}},
        {"functionCall": {"name": "weather", "args": {"city": "Rome"}}},
    ]
    body = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}
    reply = GEMINI.read_reply(body, False)
    assert reply is not None and reply.finish_reason == "tool_calls"
    ids = [call_id for call_id, _, _ in reply.tool_calls]
    assert len(set(ids)) == 2 and all(ids)


def test_responses_an_incomplete_answer_is_length_and_a_failed_one_says_why():
    incomplete = {
        "object": "response",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "The weather in Par"}],
            }
        ],
    }
    reply = OPENAI_RESPONSES.read_reply(incomplete, False)
    assert reply is not None and reply.finish_reason == "length"
    failed = {
        "object": "response",
        "status": "failed",
        "error": {"code": "server_error", "message": "The model failed."},
        "output": [],
    }
    reply = OPENAI_RESPONSES.read_reply(failed, False)
    assert reply is not None and reply.failed == "The model failed."


def test_an_error_key_that_names_no_error_is_not_a_failure():
    # {"error": null} is how some tools say "no error": a result, not a failed call.
    assert not reports_error({"error": None, "result": 3})
    assert not read_result('{"error": null, "result": 3}').failed
    assert read_result('{"error": "no such city"}').failed


def test_a_wire_s_failure_flag_fails_a_result_whatever_its_text():
    assert read_result("the weather is fine", flagged=True).failed
    assert not read_result("the weather is fine").failed


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_anthropic_a_reply_cut_at_its_length_is_max_tokens_both_ways(stream):
    # Served: the SDK sees stop_reason max_tokens (a client that continues a cut answer
    # relies on it); read back, the reply is length-cut, not a whole answer.
    anthropic = pytest.importorskip("anthropic")
    step = {"content": "The weather in Par", "finish_reason": "length"}
    with running_server([step]) as url:
        client = anthropic.Anthropic(
            base_url=url.removesuffix("/v1"), api_key="sk-harness-test", max_retries=0
        )
        asked = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 16,
            "messages": [{"role": "user", "content": "weather?"}],
        }
        if stream:
            with client.messages.stream(**asked) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(**asked)
    assert message.stop_reason == "max_tokens"
    reply = ANTHROPIC.read_reply(message.model_dump(mode="json"), False)
    assert reply is not None and reply.finish_reason == "length"


def _sse(*events: dict) -> SSEBody:
    return read_sse("".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events))


MESSAGES_STREAM = [
    {
        "type": "message_start",
        "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [],
                    "usage": {"input_tokens": 10, "output_tokens": 1}},
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Sunny"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}},
    {"type": "message_stop"},
]  # fmt: skip


def test_anthropic_a_stream_cut_before_its_end_is_said_cut_off():
    whole = ANTHROPIC.read_reply(_sse(*MESSAGES_STREAM), True)
    assert whole is not None and whole.content == "Sunny" and whole.cut_off is None
    cut = ANTHROPIC.read_reply(_sse(*MESSAGES_STREAM[:3]), True)
    assert cut is not None and cut.content == "Sunny"
    assert cut.cut_off == "no message_stop event and no stop_reason"


def test_anthropic_an_error_event_in_a_stream_fails_the_reply():
    # The API sends `event: error` mid-stream (overloaded_error) with a 200 status.
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    reply = ANTHROPIC.read_reply(_sse(*MESSAGES_STREAM[:3], error), True)
    assert reply is not None and reply.failed == "Overloaded"


RESPONSES_STREAM = [
    {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}},
    {"type": "response.output_item.added", "output_index": 0,
     "item": {"type": "message", "role": "assistant", "content": []}},
    {"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Sunny"},
    {"type": "response.output_item.done", "output_index": 0,
     "item": {"type": "message", "role": "assistant",
              "content": [{"type": "output_text", "text": "Sunny"}]}},
]  # fmt: skip


def test_responses_a_stream_cut_before_its_end_is_said_cut_off():
    done = {
        "type": "response.completed",
        "response": {
            "id": "resp_1",
            "status": "completed",
            "output": [RESPONSES_STREAM[3]["item"]],
        },
    }
    whole = OPENAI_RESPONSES.read_reply(_sse(*RESPONSES_STREAM, done), True)
    assert whole is not None and whole.content == "Sunny" and whole.cut_off is None
    cut = OPENAI_RESPONSES.read_reply(_sse(*RESPONSES_STREAM), True)
    assert cut is not None and cut.content == "Sunny" and cut.cut_off is not None


def test_responses_a_streamed_failure_fails_the_reply():
    failed = {
        "type": "response.failed",
        "response": {"id": "resp_1", "status": "failed", "output": [],
                     "error": {"code": "server_error", "message": "The model failed."}},
    }  # fmt: skip
    reply = OPENAI_RESPONSES.read_reply(_sse(*RESPONSES_STREAM[:3], failed), True)
    assert reply is not None and reply.failed == "The model failed."
    # Read live, event by event (harness's openai source): the failure stops the stream
    # with the API's message, not an empty reply.
    reader = OPENAI_RESPONSES.stream_reader()
    for event in [*RESPONSES_STREAM[:3], failed]:
        reader.add(event)
    assert reader.problem == "The model failed."
    mid_stream = OPENAI_RESPONSES.stream_reader()
    mid_stream.add({"type": "error", "code": "server_error", "message": "Overloaded"})
    assert mid_stream.problem == "Overloaded"
