"""User simulators for multi-turn scenarios, and the built-in ``scripted``.

The user's reference: docs/scenarios.md#conversations.

A ``turns:`` scenario is a conversation: before each turn the scenario's user simulator
gives the next user message, then the loop runs on the conversation so far. A plugin adds
a simulator with ``harness_register_users``; one may decide the next message from the
conversation. The built-in ``llm`` does (``user: {simulator: llm, goal: ...}``): a model
plays the user, its requests marked as a user's (``x-harness-role: user``) and sent
through the source the scenario runner gives it, so that they are recorded into the
scenario's cassette like a judge's and replay offline.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harness._errors import HarnessError
from harness._messages import (
    AssistantMessage,
    Conversation,
    Message,
    SystemMessage,
    UserMessage,
    text_of,
)
from harness.hookspecs import hookimpl
from harness.llm._base import USER_ROLE

__all__ = ["STOP", "LLMUser", "ScriptedUser", "UserContext", "user_prompt"]

# What a simulated user answers, alone, when its conversation is over.
STOP = "<<END>>"
# The simulated user's first request: the conversation has not started yet.
_OPENING = "(The conversation starts now: write your first message to the assistant.)"


@dataclass(frozen=True)
class UserContext:
    """What a user factory gets: the turns' texts (None where a turn gives none) and options."""

    turns: list[str | None] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    # The scenario being run (None outside a scenario), for plugins that need more.
    scenario: Any = None
    # The LLM source an LLM-driven user asks (``await llm.converse(conversation, model,
    # call, role)``): the scenario runner's, recorded into the scenario's cassette.
    llm: Any = None


class ScriptedUser:
    """Replays the turns' texts, one per turn."""

    def __init__(self, context: UserContext) -> None:
        self.texts = list(context.turns)

    def next_message(self, conversation: Conversation, turn: int) -> str | None:
        """The text of turn ``turn`` (1-based)."""
        return self.texts[turn - 1] if turn <= len(self.texts) else None


def user_prompt(goal: str, persona: str | None = None, stop_when: str | None = None) -> str:
    """The simulated user's system prompt (docs/scenarios.md#simulated-users)."""
    lines = [
        "You are role-playing a user talking to an AI assistant, to test the assistant. "
        "Stay in the role: write only what the user says next, in the user's own words, "
        "one message at a time; never act as the assistant.",
        f"Your goal: {goal}",
    ]
    if persona:
        lines.append(f"Who you are: {persona}")
    end = stop_when or "your goal is reached, or cannot be"
    lines.append(f"When {end}, answer with {STOP} alone, and nothing else.")
    return "\n\n".join(lines)


class LLMUser:
    """A simulated user: a model playing the user toward a goal (``user: {simulator:
    llm, goal, persona, stop_when, model}``). A turn's own ``user:`` text is said as it
    is; the other turns' messages are the model's, from the conversation so far as the
    user sees it (the assistant's answers, without tool calls). It answers ``STOP`` to
    end the conversation before the turns run out."""

    def __init__(self, context: UserContext) -> None:
        options = context.options
        if context.llm is None or not callable(getattr(context.llm, "converse", None)):
            raise HarnessError(
                "user: {simulator: llm} needs an LLM source to ask (the scenario runner "
                "gives one: run the scenario with harness run or harness.run_scenario)"
            )
        if not options.get("goal"):
            raise HarnessError("user: {simulator: llm} needs a goal: what the user wants")
        self.llm = context.llm
        self.model = str(options.get("model") or "user")
        self.texts = list(context.turns)
        self.system = user_prompt(
            str(options["goal"]), options.get("persona"), options.get("stop_when")
        )
        self.asked = 0

    async def next_message(self, conversation: Conversation, turn: int) -> str | None:
        """The next user message: the turn's own text, else the model's (None: it said
        the conversation is over)."""
        given = self.texts[turn - 1] if turn <= len(self.texts) else None
        if given is not None:
            return given
        self.asked += 1
        asked = self.seen_by_user(conversation)
        response = await self.llm.converse(asked, self.model, self.asked, USER_ROLE)
        text = (response.message.content or "").strip()
        if not text or STOP in text:
            return None
        return text

    def seen_by_user(self, conversation: Conversation) -> Conversation:
        """The conversation as the simulated user sees it: its system prompt, then its
        own messages as the assistant's and the agent's answers as the user's."""
        seen: list[Message] = [SystemMessage(content=self.system), UserMessage(content=_OPENING)]
        for message in conversation.messages:
            if isinstance(message, UserMessage):
                seen.append(AssistantMessage(content=message.content))
            elif isinstance(message, AssistantMessage) and not message.tool_calls:
                text = text_of(message.content)
                if text:
                    seen.append(UserMessage(content=text))
        return Conversation(messages=seen)


@hookimpl
def harness_register_users(register: Any) -> None:
    """The built-in users: ``scripted`` (the turns' texts) and ``llm`` (a model)."""
    register("scripted", ScriptedUser)
    register("llm", LLMUser)
