"""Request matching for `match: body`: canonical JSON keys, built incrementally.

A request body holds the whole conversation, so hashing it from scratch would make
each replayed request cost more than the one before. The key is instead a chain: one
digest per conversation item (in the field each wire names: ``messages`` for Chat
Completions, ``input`` for the Responses API), chained in order, plus one digest of
everything else. The LLM source keeps the chain of the conversation it is sending and
extends it by the new items only; a cassette computes the same key from a stored body
when it loads.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
from collections.abc import Iterable, Sequence
from typing import Any

from harness._canonical import canonical_json
from harness._modelwires import item_fields, wires_of_field

__all__ = [
    "VOLATILE_FIELDS",
    "BodyKeyer",
    "ItemChain",
    "body_diff",
    "parse_json_body",
]

# Top-level request fields that differ between two runs of the same scenario without
# changing what the model is asked: end-user ids, cache and tracing keys. They are
# never compared; `match_ignore` adds more.
VOLATILE_FIELDS: tuple[str, ...] = (
    "user",
    "metadata",
    "prompt_cache_key",
    "safety_identifier",
    "previous_response_id",
)

_WILDCARD = "*"


def parse_json_body(body: bytes | str | None) -> Any:
    """The JSON value of a request body, or None when it is not JSON."""
    if body is None or body == b"" or body == "":
        return None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None


def _digest(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8"), usedforsecurity=False).digest()


def _drop(value: Any, path: Sequence[str]) -> None:
    """Remove ``path`` (dotted parts, ``*`` for any key or index) from ``value`` in place."""
    if not path:
        return
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        keys = list(value) if head == _WILDCARD else [head] if head in value else []
        for key in keys:
            if rest:
                _drop(value[key], rest)
            else:
                del value[key]
    elif isinstance(value, list):
        if head == _WILDCARD:
            indexes: range | list[int] = range(len(value))
        elif head.lstrip("-").isdigit() and -len(value) <= int(head) < len(value):
            indexes = [int(head) % len(value)]
        else:
            indexes = []
        if rest:
            for i in indexes:
                _drop(value[i], rest)
        else:
            for i in sorted(indexes, reverse=True):
                del value[i]


class BodyKeyer:
    """Turns a JSON request body into its match key, ignoring volatile fields.

    ``ignore`` holds dotted paths (``temperature``, ``messages.0.content``,
    ``tools.*.function.description``); ``*`` stands for any key or list index.
    """

    def __init__(self, ignore: Iterable[str] = ()) -> None:
        self.ignore = tuple(ignore)
        paths = [tuple(p.split(".")) for p in self.ignore if p]
        # The fields that hold a conversation, hashed item by item: each wire's.
        self._item_fields = fields = item_fields()
        self._top = set(VOLATILE_FIELDS) | {p[0] for p in paths if len(p) == 1}
        # Paths below the top level, outside the conversation fields.
        self._nested = [p for p in paths if len(p) > 1 and p[0] not in fields]
        # Paths inside conversation items: (field, index or "*", rest of the path).
        self._item_rules = [(p[0], p[1], p[2:]) for p in paths if len(p) > 2 and p[0] in fields]
        # `messages.3` (a whole item) is dropped from the chain.
        self._item_drops = [(p[0], p[1]) for p in paths if len(p) == 2 and p[0] in fields]
        # A top-level path naming a conversation field drops the whole list from the key.
        self._items_ignored = {f for f in fields if f in self._top}

    # -- pieces ----------------------------------------------------------------------

    def item_digest(
        self, field: str, index: int, item: Any, ids: dict[str, str] | None = None
    ) -> bytes | None:
        """The digest of one conversation item (None when the item is ignored); ``ids``
        numbers the tool call ids met so far in the conversation (see ``_numbered``)."""
        item = _numbered(field, item, {} if ids is None else ids)
        for rule_field, where in self._item_drops:
            if rule_field == field and where in (_WILDCARD, str(index)):
                return None
        rules = [
            rest
            for rule_field, where, rest in self._item_rules
            if rule_field == field and where in (_WILDCARD, str(index))
        ]
        if rules:
            item = copy.deepcopy(item)
            for rest in rules:
                _drop(item, rest)
        return _digest(canonical_json(item))

    def items_field(self, body: dict[str, Any]) -> str | None:
        """The conversation field of this body (None when it has none as a list)."""
        for field in self._item_fields:
            if isinstance(body.get(field), list) and field not in self._items_ignored:
                return field
        return None

    def rest_digest(self, body: dict[str, Any], field: str | None) -> bytes:
        """The digest of everything but the conversation and the ignored fields."""
        rest = {k: v for k, v in body.items() if k != field and k not in self._top}
        if isinstance(rest.get("tools"), list):
            rest["tools"] = _unordered(rest["tools"])
        if self._nested:
            rest = copy.deepcopy(rest)
            for path in self._nested:
                _drop(rest, path)
        return _digest(canonical_json(rest))

    @staticmethod
    def combine(rest: bytes, field: str | None, chain: bytes) -> str:
        """The key from its parts."""
        h = hashlib.sha1(rest, usedforsecurity=False)
        h.update((field or "").encode())
        h.update(chain)
        return h.hexdigest()

    def incremental_key(self, body: dict[str, Any], chains: dict[str, ItemChain]) -> str:
        """``key(body)``, reusing ``chains`` (one per conversation field) across requests."""
        field = self.items_field(body)
        digest = b""
        if field is not None:
            chain = chains.get(field)
            if chain is None or chain.keyer is not self:
                chain = chains[field] = ItemChain(self, field)
            digest = chain.update(body[field])
        return self.combine(self.rest_digest(body, field), field, digest)

    # -- whole bodies ------------------------------------------------------------------

    def key(self, body: Any) -> str:
        """The match key of a parsed JSON body (any JSON value)."""
        if not isinstance(body, dict):
            return hashlib.sha1(canonical_json(body).encode(), usedforsecurity=False).hexdigest()
        field = self.items_field(body)
        chain = ItemChain(self, field or "")
        if field is not None:
            chain.update(body[field])
        return self.combine(self.rest_digest(body, field), field, chain.digest)

    def key_of_bytes(self, body: bytes | str | None) -> str:
        """The match key of a raw body: JSON bodies canonically, anything else as bytes."""
        parsed = parse_json_body(body)
        if parsed is not None:
            return self.key(parsed)
        raw = body.encode() if isinstance(body, str) else (body or b"")
        return "raw:" + hashlib.sha1(raw, usedforsecurity=False).hexdigest()


class ItemChain:
    """The chained digest of a conversation, extended as it grows.

    ``update(items)`` costs the new items only while ``items`` extends the list seen
    last time (checked by the identity of its first and last known items: the
    Conversation's cached OpenAI forms are created once per message and never
    mutated); any other list is digested from scratch.
    """

    def __init__(self, keyer: BodyKeyer, field: str) -> None:
        self.keyer = keyer
        self.field = field
        self._items: list[Any] = []  # the items digested, kept alive for identity checks
        self._chain: list[bytes] = []  # chain digest after each item
        self._ids: dict[str, str] = {}  # tool call id -> its number in the conversation
        self.digest = b""

    def update(self, items: Sequence[Any]) -> bytes:
        """The chain digest of ``items``."""
        known = self._items
        n = len(known)
        if n and not (len(items) >= n and items[0] is known[0] and items[n - 1] is known[n - 1]):
            known.clear()
            self._chain.clear()
            self._ids.clear()
            n = 0
        chain = self._chain[-1] if self._chain else b""
        for index in range(n, len(items)):
            item = items[index]
            item_digest = self.keyer.item_digest(self.field, index, item, self._ids)
            if item_digest is not None:
                chain = hashlib.sha1(chain + item_digest, usedforsecurity=False).digest()
            known.append(item)
            self._chain.append(chain)
        self.digest = chain
        return chain


def _numbered(field: str, item: Any, ids: dict[str, str]) -> Any:
    """``item`` with each tool call id replaced by its number in the conversation (the
    order ids first appear in): a client may make ids up on every run (langgraph-supervisor
    gives its handoff-back messages uuid4 ids), and what a request asks is which result
    answers which call, not the ids' text."""

    def number(call_id: str) -> str:
        return ids.setdefault(call_id, f"<call {len(ids) + 1}>")

    for wire in wires_of_field(field):
        item = wire.with_call_ids(item, number)
    return _results_in_call_order(item)


def _result_number(part: Any) -> int | None:
    """The number of the call a result part answers (a Gemini ``functionResponse``, an
    Anthropic ``tool_result``), -1 for a result naming no numbered call; None otherwise."""
    if not isinstance(part, dict):
        return None
    answer = part.get("functionResponse", part.get("function_response"))
    if isinstance(answer, dict):
        call_id = answer.get("id")
    elif part.get("type") == "tool_result":
        call_id = part.get("tool_use_id")
    else:
        return None
    if isinstance(call_id, str) and call_id.startswith("<call ") and call_id[6:-1].isdigit():
        return int(call_id[6:-1])
    return -1


def _results_in_call_order(item: Any) -> Any:
    """``item`` with the results it carries for the calls of one reply in the order of
    those calls: a client that runs parallel calls concurrently sends their results in
    the order they finished (LlamaIndex's FunctionAgent), and which result answers which
    call is what a request asks. Results by name only (no id) keep their places: their
    order says which call each answers."""
    if not isinstance(item, dict):
        return item
    key = "parts" if isinstance(item.get("parts"), list) else "content"
    parts = item.get(key)
    if not isinstance(parts, list):
        return item
    numbers = [_result_number(part) for part in parts]
    slots = [i for i, n in enumerate(numbers) if n is not None]
    if len(slots) < 2 or any(numbers[i] == -1 for i in slots):
        return item
    ordered = sorted(slots, key=lambda i: numbers[i] or 0)
    if ordered == slots:
        return item
    placed = list(parts)
    for slot, source in zip(slots, ordered, strict=True):
        placed[slot] = parts[source]
    return {**item, key: placed}


def _unordered(tools: list[Any]) -> list[Any]:
    """A request's tools in a canonical order (and a tool's list of named declarations,
    Gemini's ``functionDeclarations``): a client may build them from a set, whose order
    follows PYTHONHASHSEED (langgraph-supervisor's handoff tools); the model is offered
    the same tools."""
    canonical = []
    for tool in tools:
        if isinstance(tool, dict):
            tool = {
                k: sorted(v, key=canonical_json) if _named_list(v) else v for k, v in tool.items()
            }
        canonical.append(tool)
    return sorted(canonical, key=canonical_json)


def _named_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) and "name" in v for v in value)


def _pretty(body: Any) -> list[str]:
    if body is None:
        return ["(no body)"]
    if isinstance(body, bytes | str):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        return text.splitlines()
    return json.dumps(body, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def body_diff(
    recorded: Any, sent: Any, *, recorded_name: str, sent_name: str, limit: int = 120
) -> str:
    """A unified diff of two request bodies (pretty JSON, sorted keys), cut at ``limit`` lines."""
    lines = list(
        difflib.unified_diff(
            _pretty(recorded), _pretty(sent), fromfile=recorded_name, tofile=sent_name, lineterm=""
        )
    )
    if not lines:
        return "(no difference in the bodies)"
    if len(lines) > limit:
        hidden = len(lines) - limit
        lines = [*lines[:limit], f"... ({hidden} more diff lines)"]
    return "\n".join(lines)
