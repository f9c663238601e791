"""Which conversation a model request belongs to, and where in it it stands.

A target with several agents (agents as tools, a supervisor's workers) talks to the model
in several conversations at once (docs/external.md#several-conversations). A request
continues a conversation when its messages (read by its wire into harness's neutral
messages) extend the messages of a request that conversation already sent, or when it is
chained on a response of it (``previous_response_id``); otherwise it starts a new
conversation, which the scenario's ``llm.conversations`` rules match by this first
request (the first rule that matches wins; none: the main script).

Every request is kept as a hash chain over its items (the wire's own message objects, as
the client sends them again), so finding the longest earlier request it extends costs the
request's own length at most, and only its new items when it extends the last request of
its conversation.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness._canonical import canonical_json
from harness._messages import text_of
from harness.llm._config import ConversationMatch, ConversationRule
from harness.wires._neutral import Wire

__all__ = ["ConversationLimits", "Conversations", "Place", "matching_rule"]


@dataclass(frozen=True)
class ConversationLimits:
    """How long a server keeps a conversation (docs/wires.md#limits): at most
    ``max_conversations`` at once (the least recently continued forgotten first), at most
    ``max_requests`` requests kept across them, none idle longer than ``ttl`` seconds. A
    request continuing a forgotten conversation starts a new one."""

    max_conversations: int = 1000
    max_requests: int = 100_000
    ttl: float = 3600.0


@dataclass(frozen=True)
class Place:
    """Where a request stands: its conversation (``number``, 1 for the first one the run
    started), the rule that scripts it (``rule``: its index in ``llm.conversations``, None
    for the main script), its position in that script (0-based: the step it would get),
    whether it repeats an earlier request exactly, its key (the hash of its messages),
    and which of its rule's conversations it is (``ordinal``: 1 for the rule's first)."""

    number: int
    rule: int | None
    position: int
    repeat: bool
    key: str
    # The key of its messages but the last, and the last one's role and text.
    stem: str = ""
    last: tuple[str, str] | None = None
    ordinal: int = 1
    # The key of its dialogue: its messages without the system text (an agent handing
    # off to another changes only that).
    dialogue: str = ""


def _digest(previous: str, value: Any) -> str:
    return hashlib.sha256(f"{previous}\n{canonical_json(_resent(value))}".encode()).hexdigest()


def _resent(value: Any) -> Any:
    """An item as it counts for its conversation: what a client changes in an item it
    sends again, without changing the conversation, left out.

    Claude Code (and other Anthropic clients) move their ``cache_control`` marker to the
    newest message on every request and send an earlier text turn as a text block where
    it first sent a string; neither makes the history another one.
    """
    if isinstance(value, list):
        return [_resent(v) for v in value]
    if not isinstance(value, dict):
        return value
    kept = {k: _resent(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(kept.get("content"), str) and "role" in kept:
        kept["content"] = [{"type": "text", "text": kept["content"]}]
    return kept


def _texts(messages: Sequence[Any], role: str) -> list[str]:
    return [text_of(m.content) or "" for m in messages if getattr(m, "role", None) == role]


def _matches(match: ConversationMatch, wire: Wire, body: dict[str, Any]) -> bool:
    """Whether a conversation's first request ``body`` holds everything ``match`` asks."""
    if match.wire is not None and wire.api != match.wire:
        return False
    if match.model is not None and body.get("model") != match.model:
        return False
    if match.tools_include:
        offered = set(wire.tool_offer(body).names)
        if not set(match.tools_include) <= offered:
            return False
    if match.system_contains is None and match.user_contains is None:
        return True
    messages = [*wire.instructions(body), *wire.messages(wire.items(body))]
    wanted = (("system", match.system_contains), ("user", match.user_contains))
    return all(
        any(text in found for found in _texts(messages, role))
        for role, text in wanted
        if text is not None
    )


def matching_rule(
    rules: Sequence[ConversationRule], wire: Wire, body: dict[str, Any]
) -> int | None:
    """The index of the first rule whose match holds for a first request, else None."""
    for index, rule in enumerate(rules):
        if _matches(rule.match, wire, body):
            return index
    return None


def _system_items(items: list[Any]) -> int:
    """How many of ``items`` are leading system messages (Chat Completions sends the
    system text as its first messages; the other wires beside them)."""
    count = 0
    for item in items:
        if not isinstance(item, dict) or item.get("role") not in ("system", "developer"):
            break
        count += 1
    return count


def _last(wire: Wire, items: list[Any]) -> tuple[str, str] | None:
    """The role and text of the one message in ``items`` (None without text)."""
    messages = wire.messages(items)
    if len(messages) != 1:
        return None
    text = text_of(getattr(messages[0], "content", None))
    return (messages[0].role, text) if isinstance(text, str) else None


@dataclass(frozen=True)
class _Node:
    number: int
    rule: int | None
    position: int
    ordinal: int = 1


@dataclass
class _Kept:
    """What one conversation put in the tables (to forget it whole), and when it was last
    continued."""

    used: float
    keys: list[str] = field(default_factory=list)
    stems: list[str] = field(default_factory=list)
    responses: list[str] = field(default_factory=list)
    dialogues: list[str] = field(default_factory=list)


class Conversations:
    """The conversations of one run (or of one server's life), request by request."""

    def __init__(
        self,
        rules: Sequence[ConversationRule] = (),
        limits: ConversationLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rules = list(rules)
        self.limits = limits or ConversationLimits()
        self.clock = clock
        # Conversation number -> what it keeps, the least recently continued first.
        self._kept: OrderedDict[int, _Kept] = OrderedDict()
        self._requests = 0
        # The key of every request kept -> its place; a response id -> the request's key;
        # the key of a request's messages but its last -> (that last message's role and
        # text, the request's key), for a client that merges its next turn into it.
        self._nodes: dict[str, _Node] = {}
        self._stems: dict[str, list[tuple[str, str, str]]] = {}
        self._responses: dict[str, str] = {}
        # The hash chain of the last request placed of each conversation start (the key
        # after its first item): what the next request of it extends.
        self._recent: dict[str, list[str]] = {}
        self.started = 0
        # Conversations started, per rule (None: the main script's).
        self._per_rule: dict[int | None, int] = {}
        # The dialogue key of every request kept -> its place: a request whose system
        # text changed (a handoff) continues the request whose dialogue it extends.
        self._dialogues: dict[str, _Node] = {}

    def reset(self) -> None:
        """Forget every conversation."""
        self._kept.clear()
        self._requests = 0
        self._nodes.clear()
        self._stems.clear()
        self._responses.clear()
        self._recent.clear()
        self.started = 0
        self._per_rule.clear()
        self._dialogues.clear()

    def place(self, wire: Wire, body: dict[str, Any], replies: int) -> Place:
        """Where the request ``body`` of ``wire`` stands (``replies``: the model replies its
        input holds, the position of a new main conversation, as a stateless server
        counts them). Nothing is kept until ``keep``."""
        self._forget(self.clock())
        previous = wire.previous(body)
        start = self._responses.get(previous) if previous else None
        items = wire.items(body)
        chain = self._chain(start or _digest("", wire.instructions(body)), items)
        key = chain[-1]
        last = _last(wire, items[-1:])
        stem = chain[-2] if items else ""
        system = 0 if start else _system_items(items)
        dialogue = self._chain(start or "", items[system:])
        found = self._nodes.get(key)
        if found is not None:
            return Place(
                found.number,
                found.rule,
                found.position,
                True,
                key,
                stem,
                last,
                found.ordinal,
                dialogue[-1],
            )
        rule = matching_rule(self.rules, wire, body)
        parent = self._parent(chain, wire, items, bool(start))
        handed = self._handed_over(dialogue, parent, system, rule)
        if handed is not None:
            parent = handed
        if parent is not None:
            number, rule, position = parent[0].number, parent[0].rule, parent[0].position + 1
            ordinal = parent[0].ordinal
            return Place(number, rule, position, False, key, stem, last, ordinal, dialogue[-1])
        # A rule's conversation starts at its step 1 whatever history its first request
        # carries (a supervisor's worker is sent the supervisor's messages).
        position = replies if rule is None else 0
        ordinal = self._per_rule.get(rule, 0) + 1
        number = self.started + 1
        return Place(number, rule, position, False, key, stem, last, ordinal, dialogue[-1])

    def _handed_over(
        self,
        dialogue: list[str],
        parent: tuple[_Node, int] | None,
        system: int,
        rule: int | None,
    ) -> tuple[_Node, int] | None:
        """The request kept whose dialogue this one extends beyond ``parent`` (the one
        with the same system text, extended by ``parent[1]`` items): an agent that took
        over the conversation (an Agents SDK handoff) sends it under its own system text.
        A request that starts a conversation a rule of its own matches (a supervisor's
        worker, sent the supervisor's messages) is no handoff: None."""
        shortest = 1 if parent is None else max(1, parent[1] - system + 1)
        for length in range(len(dialogue) - 2, shortest - 1, -1):
            node = self._dialogues.get(dialogue[length])
            if node is None:
                continue
            if parent is None and rule is not None and rule != node.rule:
                return None
            if parent is not None and node.number != parent[0].number:
                return None
            return node, length + system
        return None

    def _chain(self, head: str, items: list[Any]) -> list[str]:
        """The hash chain over ``items`` after ``head``: the key of each prefix.

        A client sends its whole history again each time: when the request extends the
        last one of its conversation placed (the item where that one ended is the same),
        only the new items are hashed, so a request costs its new part, not the run's.
        """
        first = _digest(head, items[0]) if items else head
        known = self._recent.get(first)
        chain = [head]
        if known is not None and 1 < len(known) <= len(items) + 1:
            sent = len(known) - 1  # the items of that request
            # Its last item is this one's at the same place: the same history, extended.
            if _digest(known[-2], items[sent - 1]) == known[-1]:
                chain = known
        for item in items[len(chain) - 1 :]:
            chain.append(_digest(chain[-1], item))
        self._recent.pop(first, None)
        self._recent[first] = chain  # the most recent last: a cache of the latest few
        if len(self._recent) > _RECENT:
            del self._recent[next(iter(self._recent))]
        return chain

    def _parent(
        self, chain: list[str], wire: Wire, items: list[Any], chained: bool
    ) -> tuple[_Node, int] | None:
        """The latest request kept that this one extends, and how many of this one's
        items it holds: its messages, then more; or its messages with more text added to
        the last (smolagents sends a tool's result merged into the user message before it)."""
        for i in range(len(items) - 1, -1, -1):
            stems = self._stems.get(chain[i], ())
            message = _last(wire, items[i : i + 1]) if stems else None
            for role, earlier, parent in stems:
                if message is None or message[0] != role:
                    continue
                # Merged after a line break, as smolagents joins turns: a task that
                # merely starts with another one's text is a conversation of its own.
                text = message[1]
                if text[len(earlier) : len(earlier) + 1].isspace() and text.startswith(earlier):
                    return self._nodes[parent], i + 1
            if (i or chained) and chain[i] in self._nodes:
                return self._nodes[chain[i]], i
        first = self._nodes.get(chain[0]) if chained else None
        return (first, 0) if first is not None else None

    def keep(self, place: Place, response_id: str | None = None) -> None:
        """Keep a request that was answered (and the id of its response, if any), so that
        the requests extending it continue its conversation."""
        if place.number > self.started:
            self.started = place.number
            self._per_rule[place.rule] = place.ordinal
        now = self.clock()
        kept = self._kept.pop(place.number, None) or _Kept(now)
        kept.used = now
        self._kept[place.number] = kept  # the most recently continued, last
        if place.key not in self._nodes:
            node = _Node(place.number, place.rule, place.position, place.ordinal)
            self._nodes[place.key] = node
            kept.keys.append(place.key)
            self._requests += 1
            if place.last is not None:
                self._stems.setdefault(place.stem, []).append((*place.last, place.key))
                kept.stems.append(place.stem)
            if place.dialogue:
                self._dialogues[place.dialogue] = node
                kept.dialogues.append(place.dialogue)
        if response_id is not None:
            kept.responses.append(response_id)
            # Two conversations' responses may share an id (serve names a response by its
            # reply's number): a chain on such an id is then read statelessly.
            earlier = self._responses.setdefault(response_id, place.key)
            if earlier != place.key:
                self._responses[response_id] = ""
        self._forget(now)

    def _forget(self, now: float) -> None:
        """Forget the conversations past the limits: idle past the ttl, or the least
        recently continued while there are too many (or they keep too many requests)."""
        limits = self.limits
        while self._kept:
            number, oldest = next(iter(self._kept.items()))
            if (
                len(self._kept) <= limits.max_conversations
                and self._requests <= limits.max_requests
                and now - oldest.used < limits.ttl
            ):
                return
            del self._kept[number]
            self._drop(number, oldest)

    def _drop(self, number: int, kept: _Kept) -> None:
        keys = set(kept.keys)
        self._requests -= len(keys)
        for key in keys:
            self._nodes.pop(key, None)
        for stem in set(kept.stems):
            left = [entry for entry in self._stems.get(stem, ()) if entry[2] not in keys]
            if left:
                self._stems[stem] = left
            else:
                self._stems.pop(stem, None)
        for response in kept.responses:
            if self._responses.get(response) in (*keys, ""):
                del self._responses[response]
        for dialogue in kept.dialogues:
            node = self._dialogues.get(dialogue)
            if node is not None and node.number == number:
                del self._dialogues[dialogue]


# The hash chains kept of the latest conversation starts (``_chain``): what makes a
# request that extends its conversation's last one cost its new items only.
_RECENT = 256
