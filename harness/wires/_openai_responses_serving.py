"""How ``harness serve`` answers the Responses API: the replies a request holds, and the
response it gets, whole or as a stream of events.

The model's earlier replies in ``input`` are counted in rounds (one per reply, however its
function calls and their outputs interleave), and a request asking for encrypted reasoning
must send back each earlier reply's reasoning item, as a reasoning model requires; a
step's ``reasoning`` text is that item's summary when the request asks for one
(``reasoning.summary``), as the API gives summaries only then. A
request chained on an earlier response (``previous_response_id``) continues that
response's conversation: serve's response ids name their reply (``resp_harness_3``), so
the chain's length is read from the id, statelessly.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from typing import Any

from harness.llm._chunks import pieces
from harness.wires._neutral import MODEL_ID, ServedReply, ServedRequest, WireError

__all__ = ["response_events", "response_object", "served_request"]

_REASONING_INCLUDE = "reasoning.encrypted_content"
# The ids serve gives a reply's items name its round: fc_harness_2_0, call_2_0, msg_harness_2.
_ROUND_ID = re.compile(r"^(?:(?:fc|msg|rs)_harness_(\d+)(?:_\d+)?|call_(\d+)_\d+)$")
_RESPONSE_ID = re.compile(r"^resp_harness_(?:c\d+(?:-\d+)?_)?([1-9]\d*)$")


def served_request(body: dict[str, Any], known: int) -> ServedRequest:
    """The replies a request holds (rounds in ``input`` plus those of its chain, ``known``:
    the replies the script holds), its conversation, and whether it asks for reasoning;
    WireError 400 for input the API would refuse."""
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list):
        raise WireError(400, "input must be a string or a list")
    reasoning = _REASONING_INCLUDE in (body.get("include") or [])
    previous = body.get("previous_response_id")
    chained = _chain_length(previous, known)
    rounds = _rounds(items)
    if reasoning:
        missing = _missing_reasoning(rounds, chained)
        if missing:
            raise WireError(400, missing)
    # A chained request is its own conversation: the same items after another response.
    conversation = items if previous is None else {"previous": previous, "input": items}
    return ServedRequest(chained + len(rounds), conversation, reasoning)


# -- serving: the replies a request holds ------------------------------------------------------


def _is_model_output(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    return item.get("type") in ("reasoning", "function_call") or item.get("role") == "assistant"


def _round_of(item: dict[str, Any]) -> int | None:
    """The reply an item came in, read from serve's own ids (None for other ids)."""
    for key in ("id", "call_id"):
        found = _ROUND_ID.match(str(item.get(key) or ""))
        if found:
            return int(found.group(1) or found.group(2))
    return None


def _rounds(items: list[Any]) -> list[list[dict[str, Any]]]:
    """The model's earlier replies in ``input`` (model rounds, not function calls).

    Items serve made carry their round in their ids, so calls of one reply count once
    even with their outputs between them (``[user, call A, output A, call B, output B]``,
    a layout the real API accepts); items with other ids count by maximal runs.
    """
    rounds: list[list[dict[str, Any]]] = []
    previous, last = False, None
    for item in items:
        if not _is_model_output(item):
            previous = False
            continue
        tag = _round_of(item)
        new = tag != last if tag is not None and last is not None else not previous
        if new or not rounds:
            rounds.append([])
        rounds[-1].append(item)
        previous, last = True, tag
    return rounds


def _chain_length(previous: Any, known: int) -> int:
    """The replies a ``previous_response_id`` chain holds (0 when there is none).

    Response ``resp_harness_N`` was reply N, and its conversation held the N-1 replies
    before it: the chain is N replies long. Any other id was never given by this server
    (nor one past the ``known`` replies of its script), and the real API's 400 says so.
    """
    if previous is None:
        return 0
    found = _RESPONSE_ID.match(str(previous))
    if found is None or int(found.group(1)) > known:
        raise WireError(
            400,
            f"Previous response with id '{previous}' not found.",
            "previous_response_not_found",
            "previous_response_id",
        )
    return int(found.group(1))


def _missing_reasoning(rounds: list[list[dict[str, Any]]], chained: int = 0) -> str | None:
    """Like a reasoning model, refuse input whose earlier reasoning items were dropped.

    A chained request's earlier replies are in the chain, not in ``input``: its own
    rounds are numbered after them.
    """
    for n, items in enumerate(rounds, chained + 1):
        first = items[0]
        sent_back = first.get("encrypted_content") == _opaque_reasoning(n)
        if first.get("type") != "reasoning" or not sent_back:
            return (
                f"reply {n} in `input` does not start with its reasoning item (unchanged, with "
                "encrypted_content): reasoning items must be sent back"
            )
    return None


# -- serving: the response ---------------------------------------------------------------------


def _opaque_reasoning(reply: int) -> str:
    # Stands for a reasoning model's encrypted state: the server checks that the
    # client sends it back unchanged.
    return base64.b64encode(f"harness-reasoning:{reply}".encode()).decode()


def _summary(body: dict[str, Any], reply: ServedReply) -> list[dict[str, Any]]:
    """The reasoning item's summary: the step's reasoning, when the request asks for one."""
    asked = body.get("reasoning")
    if not reply.reasoning or not isinstance(asked, dict) or not asked.get("summary"):
        return []
    return [{"type": "summary_text", "text": reply.reasoning}]


def _output(body: dict[str, Any], reply: ServedReply, reasoning: bool) -> list[dict[str, Any]]:
    """The response's output items: reasoning, the message, the function calls."""
    n = reply.n
    output: list[dict[str, Any]] = []
    if reasoning:
        output.append(
            {
                "type": "reasoning",
                "id": f"rs_harness_{n}",
                "summary": _summary(body, reply),
                "encrypted_content": _opaque_reasoning(n),
            }
        )
    if reply.content:
        output.append(
            {
                "type": "message",
                "id": f"msg_harness_{n}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.content, "annotations": []}],
            }
        )
    for i, (call_id, name, arguments) in enumerate(reply.tool_calls):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_harness_{n}_{i}",
                "call_id": call_id,
                "name": name,
                "arguments": arguments,
                "status": "completed",
            }
        )
    return output


def response_object(body: dict[str, Any], reply: ServedReply, reasoning: bool) -> dict[str, Any]:
    """The whole ``response`` object."""
    usage = reply.usage
    truncated = reply.finish_reason == "length"
    return {
        "id": f"resp_harness_{reply.tag}{reply.n}",
        "object": "response",
        "created_at": 0,
        "status": "incomplete" if truncated else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if truncated else None,
        "error": None,
        "instructions": body.get("instructions"),
        "model": body.get("model") or MODEL_ID,
        "previous_response_id": body.get("previous_response_id"),
        "output": _output(body, reply, reasoning),
        "parallel_tool_calls": True,
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": [_echoed_tool(t) for t in body.get("tools") or []],
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage["completion_tokens"],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage["total_tokens"],
        },
    }


def _echoed_tool(tool: Any) -> Any:
    """A request's tool as the Responses API echoes it: every field present.

    OpenAI fills in ``strict`` (true by default in this API) and ``description``; SDKs
    whose types require them fail to parse a ``response.completed`` event without them.
    """
    if not isinstance(tool, dict) or tool.get("type") != "function":
        return tool
    return {"description": None, **tool, "strict": tool.get("strict", True)}


class _Events:
    """Numbers the events of one stream (``sequence_number``, from 0)."""

    def __init__(self) -> None:
        self.sequence = 0

    def __call__(self, kind: str, **data: Any) -> str:
        payload = {"type": kind, "sequence_number": self.sequence, **data}
        self.sequence += 1
        return f"event: {kind}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n"


def _message_events(event: _Events, item: dict[str, Any], where: dict[str, int]) -> Iterator[str]:
    text = item["content"][0]["text"]
    yield event("response.output_item.added", item={**item, "content": []}, **where)
    empty = {"type": "output_text", "text": "", "annotations": []}
    ids = {"item_id": item["id"], "content_index": 0, **where}
    yield event("response.content_part.added", part=empty, **ids)
    for piece in pieces(text):
        yield event("response.output_text.delta", delta=piece, logprobs=[], **ids)
    yield event("response.output_text.done", text=text, logprobs=[], **ids)
    yield event("response.content_part.done", part=item["content"][0], **ids)


def _call_events(event: _Events, item: dict[str, Any], where: dict[str, int]) -> Iterator[str]:
    added = {**item, "arguments": "", "status": "in_progress"}
    yield event("response.output_item.added", item=added, **where)
    for piece in pieces(item["arguments"], 8):
        delta = {"item_id": item["id"], "delta": piece}
        yield event("response.function_call_arguments.delta", **delta, **where)
    yield event(
        "response.function_call_arguments.done",
        item_id=item["id"],
        arguments=item["arguments"],
        **where,
    )


def _reasoning_events(event: _Events, item: dict[str, Any], where: dict[str, int]) -> Iterator[str]:
    yield event("response.output_item.added", item={**item, "summary": []}, **where)
    for index, part in enumerate(item["summary"]):
        ids = {"item_id": item["id"], "summary_index": index, **where}
        empty = {"type": "summary_text", "text": ""}
        yield event("response.reasoning_summary_part.added", part=empty, **ids)
        for piece in pieces(part["text"]):
            yield event("response.reasoning_summary_text.delta", delta=piece, **ids)
        yield event("response.reasoning_summary_text.done", text=part["text"], **ids)
        yield event("response.reasoning_summary_part.done", part=part, **ids)


def response_events(response: dict[str, Any]) -> Iterator[str]:
    """The stream's events: created, each output item piece by piece, completed."""
    event = _Events()
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    for index, item in enumerate(response["output"]):
        where = {"output_index": index}
        if item["type"] == "message":
            yield from _message_events(event, item, where)
        elif item["type"] == "function_call":
            yield from _call_events(event, item, where)
        elif item["type"] == "reasoning":
            yield from _reasoning_events(event, item, where)
        else:
            yield event("response.output_item.added", item=item, **where)
        yield event("response.output_item.done", item=item, **where)
    final = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
    yield event(final, response=response)
