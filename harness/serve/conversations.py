"""Which conversation a model request belongs to, and where in it it stands.

A target with several agents (agents as tools, a supervisor's workers) talks to the model
in several conversations at once (docs/external.md#several-conversations). A request
continues a conversation when its messages (read by its wire into harness's neutral
messages) extend the messages of a request that conversation already sent, or when it is
chained on a response of it (``previous_response_id``); otherwise it starts a new
conversation, which the scenario's ``llm.conversations`` rules match by this first
request (the first rule that matches wins; none: the main script).

Every request is kept as a hash chain over its messages, so finding the longest earlier
request it extends costs the request's own length, not the run's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.canonical import canonical_json
from harness.llm.config import ConversationMatch, ConversationRule
from harness.messages import text_of
from harness.wires.neutral import Wire

__all__ = ["Conversations", "Place", "matching_rule"]


@dataclass(frozen=True)
class Place:
    """Where a request stands: its conversation (``number``, 1 for the first one the run
    started), the rule that scripts it (``rule``: its index in ``llm.conversations``, None
    for the main script), its position in that script (0-based: the step it would get),
    whether it repeats an earlier request exactly, and its key (the hash of its messages)."""

    number: int
    rule: int | None
    position: int
    repeat: bool
    key: str


def _digest(previous: str, value: Any) -> str:
    return hashlib.sha256(f"{previous}\n{canonical_json(value)}".encode()).hexdigest()


def _texts(messages: Sequence[Any], role: str) -> list[str]:
    return [text_of(m.content) or "" for m in messages if getattr(m, "role", None) == role]


def _matches(match: ConversationMatch, wire: Wire, body: dict[str, Any]) -> bool:
    """Whether a conversation's first request ``body`` holds everything ``match`` asks."""
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


@dataclass(frozen=True)
class _Node:
    number: int
    rule: int | None
    position: int


class Conversations:
    """The conversations of one run (or of one server's life), request by request."""

    def __init__(self, rules: Sequence[ConversationRule] = ()) -> None:
        self.rules = list(rules)
        # The key of every request kept -> its place; a response id -> the request's key.
        self._nodes: dict[str, _Node] = {}
        self._responses: dict[str, str] = {}
        self.started = 0

    def reset(self) -> None:
        """Forget every conversation."""
        self._nodes.clear()
        self._responses.clear()
        self.started = 0

    def place(self, wire: Wire, body: dict[str, Any], replies: int) -> Place:
        """Where the request ``body`` of ``wire`` stands (``replies``: the model replies its
        input holds, the position of a new main conversation, as a stateless server
        counts them). Nothing is kept until ``keep``."""
        previous = wire.previous(body)
        start = self._responses.get(previous) if previous else None
        chain = [start if start else _digest("", wire.instructions(body))]
        for message in wire.messages(wire.items(body)):
            chain.append(_digest(chain[-1], message.model_dump(mode="json")))
        key = chain[-1]
        found = self._nodes.get(key)
        if found is not None:
            return Place(found.number, found.rule, found.position, True, key)
        for earlier in reversed(chain[:-1]):
            parent = self._nodes.get(earlier)
            if parent is not None:
                return Place(parent.number, parent.rule, parent.position + 1, False, key)
        rule = matching_rule(self.rules, wire, body)
        # A rule's conversation starts at its step 1 whatever history its first request
        # carries (a supervisor's worker is sent the supervisor's messages).
        position = replies if rule is None else 0
        return Place(self.started + 1, rule, position, False, key)

    def keep(self, place: Place, response_id: str | None = None) -> None:
        """Keep a request that was answered (and the id of its response, if any), so that
        the requests extending it continue its conversation."""
        if place.number > self.started:
            self.started = place.number
        self._nodes.setdefault(place.key, _Node(place.number, place.rule, place.position))
        if response_id is not None:
            # Two conversations' responses may share an id (serve names a response by its
            # reply's number): a chain on such an id is then read statelessly.
            earlier = self._responses.setdefault(response_id, place.key)
            if earlier != place.key:
                self._responses[response_id] = ""
