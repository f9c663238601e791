"""Recordings made by other clients: chained Responses requests, skipped interactions.

A Responses API request may carry only its new items and name the conversation it
continues (``previous_response_id``, or a ``conversation`` object kept by the API). Every
response of such a chain is in the cassette, so the whole conversation each request
continued is rebuilt from it, and freeze compares and replays that conversation.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from harness._modelwires import wire_for, wire_named
from harness._vendors import OPENAI
from harness.cassettes._format import LoadedInteraction
from harness.freeze._recorded import FreezeError, Item, RecordedCall, dialogue

__all__ = ["history_of", "rebuild_chains", "skipped_interactions"]

# Interactions with OpenAI's own API are named by their path alone.
_OPENAI_HOST = urlparse(OPENAI.base_url).netloc


def rebuild_chains(calls: list[RecordedCall], shown: str) -> None:
    """Give each chained request the whole conversation it continues (in place)."""
    by_id: dict[str, RecordedCall] = {}
    latest: dict[str, RecordedCall] = {}  # conversation id -> its latest answered request
    for call in calls:
        wire = wire_named(call.api)
        previous = wire.previous(call.body)
        conversation = wire.thread(call.body)
        parent = None
        if previous:
            parent = by_id.get(str(previous))
            if parent is None:
                raise FreezeError(
                    f"{shown}: interaction {call.number} continues response {previous} "
                    "(previous_response_id), which the cassette does not hold: the "
                    "conversation before it was not recorded, so no scenario can replay "
                    "it; record the run from its first request"
                )
        elif conversation is not None:
            parent = latest.get(conversation)
        if parent is not None and parent.reply is not None:
            own = call.conversation
            system = own[: len(own) - len(dialogue(own))]
            call.conversation = (
                system + dialogue(parent.conversation) + parent.reply.items() + dialogue(own)
            )
            call.chained = True
        if call.reply is not None:
            if call.response_id:
                by_id[call.response_id] = call
            if conversation is not None:
                latest[conversation] = call


def skipped_interactions(interactions: list[LoadedInteraction]) -> list[str]:
    """``3 (DELETE /v1/conversations/...)`` for each interaction that is not a request to
    the Chat Completions or Responses API (other endpoints, other providers, trace
    uploads): freeze says it left them out."""
    skipped = []
    for number, interaction in enumerate(interactions, 1):
        request = interaction.request
        url = urlparse(str(request.get("uri", "")))
        if wire_for(url.path) is not None:
            continue
        where = f"{url.netloc}{url.path}" if url.netloc != _OPENAI_HOST else url.path
        skipped.append(f"{number} ({request.get('method', '?')} {where})")
    return skipped


def history_of(items: tuple[Item, ...]) -> list[dict[str, Any]]:
    """Chat Completions messages that normalize to ``items`` (a scenario's ``history``)."""
    messages: list[dict[str, Any]] = []
    for item in items:
        kind = item[0]
        if kind == "message":
            messages.append({"role": item[1], "content": item[2]})
        elif kind == "call":
            arguments = item[3][1] if isinstance(item[3], tuple) else item[3]
            call = {"id": item[1], "type": "function"}
            call["function"] = {"name": item[2], "arguments": arguments}
            last = messages[-1] if messages else None
            if last is None or last["role"] != "assistant":
                last = {"role": "assistant", "content": None}
                messages.append(last)
            last.setdefault("tool_calls", []).append(call)
        elif kind == "result":
            messages.append({"role": "tool", "tool_call_id": item[1], "content": item[2]})
        else:
            raise FreezeError(f"the conversation holds an item a scenario cannot send: {item[-1]}")
    return messages
