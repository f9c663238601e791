"""User simulators for multi-turn scenarios, and the built-in ``scripted``.

The user's reference: docs/scenarios.md#conversations.

A ``turns:`` scenario is a conversation: before each turn the scenario's user simulator
gives the next user message, then the loop runs on the conversation so far. A plugin adds
a simulator with ``harness_register_users``; one may decide the next message from the
conversation (an LLM-driven user, recorded like any LLM).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness.hookspecs import hookimpl
from harness.messages import Conversation

__all__ = ["ScriptedUser", "UserContext"]


@dataclass(frozen=True)
class UserContext:
    """What a user factory gets: the turns' texts (None where a turn gives none) and options."""

    turns: list[str | None] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    # The scenario being run (None outside a scenario), for plugins that need more.
    scenario: Any = None


class ScriptedUser:
    """Replays the turns' texts, one per turn."""

    def __init__(self, context: UserContext) -> None:
        self.texts = list(context.turns)

    def next_message(self, conversation: Conversation, turn: int) -> str | None:
        """The text of turn ``turn`` (1-based)."""
        return self.texts[turn - 1] if turn <= len(self.texts) else None


@hookimpl
def harness_register_users(register: Any) -> None:
    """The built-in ``scripted`` user."""
    register("scripted", ScriptedUser)
