"""What a cassette recorded, read back for ``harness freeze``: calls, replies and runs.

Requests are compared in a normalized form: text by role, tool calls with parsed
arguments, tool results, tool definitions by name, description and parameters (but for
``additionalProperties``: stubs forbid extra arguments whatever was recorded). Clients
lay out the same conversation differently (``content: null`` or absent, text parts or a
string, the Responses API's items or Chat Completions' messages), and a cassette
recorded by another tool should compare equal to the same conversation sent by harness.
Reasoning items are left out: they are a model's opaque state, which a script does not
reproduce (a frozen step keeps only their readable text, as its ``reasoning``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from harness._canonical import canonical_json
from harness._errors import HarnessError
from harness._modelwires import wire_for, wire_named
from harness.cassettes._format import LoadedInteraction, interaction_line
from harness.cassettes._matching import parse_json_body
from harness.serve._threads import Threads
from harness.wires import Wire
from harness.wires._neutral import Item, ToolSpec, WireError, WireReply, answer_body

__all__ = [
    "FreezeError",
    "RecordedCall",
    "RecordedRun",
    "blank_free",
    "dialogue",
    "read_calls",
    "set_aside_blank_texts",
    "shape",
    "split_runs",
    "tool_items",
]


class FreezeError(HarnessError):
    """A cassette that cannot be frozen into a scenario."""


@dataclass
class RecordedCall:
    """One recorded request to the model and its answer."""

    number: int  # the interaction's 1-based position in the cassette
    api: str  # chat | responses
    body: dict[str, Any]  # the request's JSON body
    reply: WireReply | None  # None for an HTTP error
    error: dict[str, Any] | None  # {status, message} of an HTTP error
    conversation: tuple[Item, ...]
    response_id: str | None = None  # the Responses API's id of the answer
    chained: bool = False  # the conversation was rebuilt from a previous response


@dataclass
class RecordedRun:
    """The requests of one run of an agent, in order (number: 1-based, by recording order)."""

    number: int
    calls: list[RecordedCall]

    def describe(self, apis: bool = False) -> str:
        """``run 2: interactions 1, 3-4`` (``, Gemini API`` after it with ``apis``: the
        APIs its requests went to)."""
        numbers = [call.number for call in self.calls]
        spans: list[str] = []
        start = previous = numbers[0]
        for n in [*numbers[1:], None]:
            if n is not None and n == previous + 1:
                previous = n
                continue
            spans.append(str(start) if start == previous else f"{start}-{previous}")
            if n is not None:
                start = previous = n
        text = f"run {self.number}: interaction{'s' if len(numbers) > 1 else ''} {', '.join(spans)}"
        if apis:
            labels = dict.fromkeys(wire_named(call.api).label for call in self.calls)
            text += f", {' and '.join(labels)}"
        return text


# -- normalized conversations --------------------------------------------------------------


def tool_items(tools: Any, wire: Wire | None = None) -> tuple[Item, ...]:
    """The normalized tool definitions of a request (read by ``wire``, OpenAI's layouts by
    default)."""
    return tuple(_tool_item(spec) for spec in (wire or wire_named("chat")).tools(tools))


def _tool_item(spec: ToolSpec) -> Item:
    if spec.name is None:
        return ("other", canonical_json(spec.raw))
    parameters = spec.parameters or {"type": "object", "properties": {}}
    if isinstance(parameters, dict):
        # Stubs forbid extra arguments whatever the recorded schema said, and an object
        # without properties is one with none.
        parameters = {k: v for k, v in parameters.items() if k != "additionalProperties"}
        if parameters.get("type") == "object":
            parameters.setdefault("properties", {})
    return (spec.name, spec.description or None, canonical_json(parameters))


# -- reading calls ----------------------------------------------------------------------------


# Where a body's key paths can be, in harness's format, vcrpy's and vcrpy's older httpx one.
_BODY_FIELDS = {
    "request": (("request", "body"), ("request", "parsed_body")),
    "response": (
        ("response", "body", "string"),
        ("response", "parsed_body"),
        ("response", "content"),
    ),
}

_DAMAGED = (
    "the cassette was edited or damaged; restore the body from the recording, or record "
    "the run again with the client that made it"
)


def _json_error(raw: bytes | str | None) -> str:
    """Why ``raw`` is not JSON, with the error's position in the body."""
    try:
        json.loads(raw or "")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    except ValueError as exc:
        return f"{exc} of the body"
    return "valid JSON"


def _request_body(interaction: LoadedInteraction, api: str) -> dict[str, Any] | str:
    """The request's JSON object body, or what is wrong with it."""
    body = interaction.request_json
    if body is None:
        raw = interaction.request["body"]
        if raw is None or raw in (b"", ""):
            return f"the request to the {api} API has no body"
        body = parse_json_body(raw)
        if body is None:
            return f"the request body is not valid JSON ({_json_error(raw)}): {_DAMAGED}"
    if not isinstance(body, dict):
        return f"the request to the {api} API has a JSON body that is not an object"
    return body


def _unfinished(reply: WireReply) -> str | None:
    """What is wrong with a reply no scenario can replay (a stream that did not arrive
    whole, a response that failed), and what to do."""
    if reply.cut_off is not None:
        why = "; ".join(filter(None, (reply.cut_off, reply.not_json)))
        return (
            f"the streamed response is cut off ({why}): the cassette holds part of the reply "
            "only, so no scenario can replay it; use a recording whose streams ran to their end"
        )
    if reply.not_json is not None:
        return f"the streamed response is damaged ({reply.not_json}): {_DAMAGED}"
    if reply.failed is not None:
        return (
            f"the model's response failed (status failed: {reply.failed}): a scenario scripts "
            "replies and HTTP errors, not a response that failed; freeze a recording of a "
            "run that did not meet it, or script the failure as an error step by hand"
        )
    return None


def _reply(wire: Wire, answer: tuple[Any, bool] | None, raw: Any) -> WireReply | str:
    """The reply of a successful answer, or what is wrong with it."""
    if answer is None:
        why = _json_error(raw)
        return f"the response body is neither JSON ({why}) nor Server-Sent Events: {_DAMAGED}"
    reply = wire.read_reply(*answer)
    if reply is None:
        return f"the response body is not a {wire.label} response"
    return _unfinished(reply) or reply


def _whole(threads: Threads, wire: Wire, body: dict[str, Any], failed: bool) -> Any:
    """The whole request ``body`` stands for (a thread continue: the held conversation
    then its new messages), or what is wrong with it. A continue the API refused (its
    ``thread_not_found``, which the SDK answers by sending it all again) is kept as sent."""
    try:
        return threads.resume(wire, body)
    except WireError as e:
        if failed:
            return body
        if e.status != 404:
            return f"a request the API would refuse: {e.message}"
        return (
            "a message thread's continue (thread.previous_message_id) of a reply the "
            "cassette does not hold before it, so the conversation it stands for is not "
            "recorded; record the run from its first request"
        )


def read_calls(interactions: list[LoadedInteraction], path: Path, shown: str) -> list[RecordedCall]:
    """The recorded requests to the model (other requests, such as GET /models, are skipped).

    A problem is a FreezeError naming the file, the line of the body when it can be
    found, and the interaction.
    """

    def refuse(number: int, side: str, problem: str) -> FreezeError:
        line = interaction_line(path, number - 1, *_BODY_FIELDS[side])
        return FreezeError(f"{shown}{f':{line}' if line else ''}: interaction {number}: {problem}")

    calls: list[RecordedCall] = []
    threads = Threads()  # Anthropic's message threads, held as harness serve holds them
    for number, interaction in enumerate(interactions, 1):
        wire = wire_for(urlparse(interaction.request["uri"]).path)
        if wire is None:
            continue
        api = wire.api
        body = _request_body(interaction, api)
        if isinstance(body, str):
            raise refuse(number, "request", body)
        status = interaction.response["status"]["code"]
        raw = interaction.response["body"]["string"]
        answer = answer_body(raw)
        reply: WireReply | None = None
        error = None
        if status >= 400:
            failure = wire.read_error(status, answer[0] if answer is not None else None)
            error = {"status": status, "message": failure.message}
        else:
            answered = _reply(wire, answer, raw)
            if isinstance(answered, str):
                raise refuse(number, "response", answered)
            reply = answered
        sent, body = body, _whole(threads, wire, body, error is not None)
        if isinstance(body, str):
            raise refuse(number, "request", body)
        if reply is not None:
            threads.keep(wire, sent, body, answer)
        try:
            conversation = wire.normalized(body)
        except (AttributeError, TypeError):
            raise refuse(number, "request", "the request's conversation is malformed") from None
        call = RecordedCall(number, api, body, reply, error, conversation)
        if reply is not None:
            call.response_id = wire.answer_items(answer)[0]
        calls.append(call)
    return calls


# -- runs -------------------------------------------------------------------------------------


def dialogue(items: tuple[Item, ...]) -> tuple[Item, ...]:
    """A conversation without its system text, which a client may change inside a run
    (an Agents SDK handoff sends the next agent's instructions)."""
    return tuple(item for item in items if item[:2] != ("message", "system"))


def shape(items: tuple[Item, ...]) -> tuple[Item, ...]:
    """``items`` with each call id replaced by its order of first appearance.

    The same conversation may carry other ids on another request: a client continuing a
    Gemini run on another vendor sends the ids it made up for the calls, where the Gemini
    wire names the same calls from the reply (``call_0_NAME``). Compared in this shape,
    a request extends the earlier one whatever ids either side gave the same calls.
    """
    ids: dict[Any, str] = {}
    called: dict[str, int] = {}  # a call's shaped id -> its place among the calls
    shaped: list[Item] = []
    results: list[Item] = []  # the results since the last other item

    def place_results() -> None:
        # Results of one reply's calls in the order of the calls: a client running them
        # concurrently sends them as they finished (LlamaIndex's FunctionAgent), as the
        # cassette matches them (harness.cassettes._matching).
        if all(r[1] in called for r in results):
            results.sort(key=lambda r: called[r[1]])
        shaped.extend(results)
        results.clear()

    for item in items:
        if item[0] in ("call", "result") and len(item) > 1:
            item = (item[0], ids.setdefault(item[1], f"#{len(ids)}"), *item[2:])
            if item[0] == "call":
                called.setdefault(item[1], len(called))
            else:
                results.append(item)
                continue
        place_results()
        shaped.append(item)
    place_results()
    return tuple(shaped)


def _relation(before: RecordedCall, call: RecordedCall) -> str | None:
    """``next`` when ``call`` goes on in ``before``'s run, ``turn`` when it starts a new
    run after it (a new user turn after an answer), None when it does not extend it.
    Requests of different APIs compare alike: runs split whatever API they were sent on."""
    a, b = shape(dialogue(before.conversation)), shape(dialogue(call.conversation))
    if len(a) > len(b) or b[: len(a)] != a:
        return None
    if len(a) == len(b):
        # The same conversation again is a retry of a failed request, or another run.
        return "next" if before.error is not None else None
    # An answer without tool calls ends a run: what follows it is another turn.
    if before.reply is not None and not before.reply.tool_calls:
        return "turn"
    return "next"


def _blank_turn(item: Item) -> bool:
    return item[:2] == ("message", "assistant") and not str(item[2]).strip()


def set_aside_blank_texts(calls: list[RecordedCall]) -> list[int]:
    """Leave out of each recorded conversation the assistant texts that say nothing (in
    place); the interactions where the client added one (none when a recorded reply is
    a blank text: the model wrote them).

    Some clients send a model turn back with a text block the model did not write:
    simonw/llm's llm-anthropic puts a ``" "`` text block in front of a turn of
    ``tool_use`` blocks (the API refuses an empty one). A blank text says nothing the
    frozen run could replay, and harness's loop never sends one: it is not compared
    (``blank_free`` does the same to what the frozen run sends).
    """
    changed = []
    for call in calls:
        kept = blank_free(call.conversation)
        if kept != call.conversation:
            call.conversation = kept
            changed.append(call.number)
    # A model that wrote a blank text itself has it sent back by every client: no note.
    said = (call.reply.content for call in calls if call.reply is not None)
    if any(text is not None and not text.strip() for text in said):
        return []
    return changed


def blank_free(items: tuple[Item, ...]) -> tuple[Item, ...]:
    """``items`` without assistant texts that are blank (see ``set_aside_blank_texts``)."""
    return tuple(item for item in items if not _blank_turn(item))


def fill_client_ids(run: RecordedRun) -> list[str]:
    """Give the reply's calls the ids the client sent back; say which ids were replaced.

    Some OpenAI-compatible servers answer tool calls without ids; the client makes one
    up (pydantic-ai: ``pyd_ai_<hex>``) and uses it in the next request, for the call and
    its result. Other clients send back an id of their own (the item id ``fc_...`` as
    ``call_id``). The id the client sent is what the frozen scenario must send to replay
    the recording.
    """
    replaced: list[str] = []
    for call, following in zip(run.calls, run.calls[1:], strict=False):
        reply = call.reply
        if reply is None:
            continue
        added = dialogue(following.conversation)[len(dialogue(call.conversation)) :]
        sent = [item for item in added if item[0] == "call"]
        if len(sent) < len(reply.tool_calls):
            continue
        calls = []
        for (call_id, name, arguments), item in zip(reply.tool_calls, sent, strict=False):
            if item[2] == name and item[1] and item[1] != call_id:
                if call_id:
                    replaced.append(f"{item[1]} for {call_id}")
                call_id = item[1]
            calls.append((call_id, name, arguments))
        reply.tool_calls = calls
    return replaced


def _system(call: RecordedCall) -> tuple[Item, ...]:
    return tuple(item for item in call.conversation if item[:2] == ("message", "system"))


def _returned(calls: list[RecordedCall], parent: list[int | None], i: int) -> None:
    """When request ``i`` changed the system text of the request it extends back to that
    of an earlier request of its run, it goes on in that request's conversation (a
    supervisor after its worker answered: langgraph-supervisor sends the supervisor's
    instructions and the worker's last message only), and the requests between are a
    conversation of their own, held beside it (in place, on ``parent``). A system text
    that changes for good is a handoff: the run goes on (the Agents SDK's)."""
    at, below = parent[i], i
    own = _system(calls[i])
    if at is None or _system(calls[at]) == own:
        return
    while at is not None:
        if _system(calls[at]) == own:
            parent[i], parent[below] = at, None
            return
        below, at = at, parent[at]


def split_runs(calls: list[RecordedCall], one_input: bool = False) -> list[RecordedRun]:
    """The runs recorded in a cassette, in the order their last requests were recorded.

    A request belongs to the run of the latest earlier request whose conversation it
    extends (or, back at an earlier system text, to that one's: ``_returned``). One that
    extends none starts a new run; one that extends an earlier
    request but not the one before it (``new_episodes`` after a change: the first
    requests were replayed, the rest recorded) continues from that request. A request
    after an answer with no tool calls is a new user turn, another run, unless the
    recording's scenario gave its target ``one_input``: then the target's client made
    that turn up itself (smolagents sends its code's output as a user message).
    """
    parent: list[int | None] = []
    for i, call in enumerate(calls):
        # The request before is the usual parent: the search stops at the first request
        # this one extends (after an answer, it starts a run of its own).
        found = next(
            ((j, r) for j in range(i - 1, -1, -1) if (r := _relation(calls[j], call))), None
        )
        goes_on = found is not None and (found[1] == "next" or one_input)
        parent.append(found[0] if found is not None and goes_on else None)
        _returned(calls, parent, i)
    has_child = {p for p in parent if p is not None}
    runs: list[RecordedRun] = []
    for leaf in (i for i in range(len(calls)) if i not in has_child):
        chain: list[RecordedCall] = []
        at: int | None = leaf
        while at is not None:
            chain.append(calls[at])
            at = parent[at]
        runs.append(RecordedRun(len(runs) + 1, chain[::-1]))
    return runs
