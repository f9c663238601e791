"""The LLM source a scenario's simulated user asks (``user: {simulator: llm}``,
docs/scenarios.md#simulated-users), recorded like a judge's: the scenario's own source
when the agent's model is recorded on the same provider and endpoint (one cassette
session holds both), else a source of its own on the scenario's cassette; a scripted
user (``provider: scripted``) is answered offline from the ``llm.conversations`` rule
that matches its system prompt.
"""

from __future__ import annotations

from typing import Any

from harness._errors import HarnessError, LLMError
from harness._messages import Conversation
from harness.llm._base import LLMRequest, LLMResponse
from harness.llm._config import ConversationRule, LLMConfig
from harness.llm._scripted import ScriptedLLM
from harness.scenario._context import ScenarioRun
from harness.scenario._serving import llm_source
from harness.scenario._simuser import scripted_rule, user_provider

__all__ = ["ScriptedUserModel", "UserSide", "user_source"]

# The usage keys a simulated user adds to a scenario's usage (beside the agent's own).
_USAGE = ("prompt_tokens", "completion_tokens", "total_tokens")


class ScriptedUserModel:
    """A simulated user's model answered from a script (an ``llm.conversations`` rule)."""

    def __init__(self, rule: ConversationRule, draws: str) -> None:
        self.llm = ScriptedLLM(rule.script, draws=draws)

    async def converse(
        self, conversation: Conversation, model: str, call: int, role: str
    ) -> LLMResponse:
        """The script's next reply."""
        return await self.llm.complete(LLMRequest(conversation=conversation, tools=[], call=call))


class UserSide:
    """The source a simulated user asks, counting its requests and usage; a failed
    request is the scenario's error (one line), not a crash."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.requests = 0
        self.usage: dict[str, int] = {}

    async def converse(
        self, conversation: Conversation, model: str, call: int, role: str
    ) -> LLMResponse:
        """The user model's reply (counted)."""
        self.requests += 1
        try:
            response = await self.source.converse(conversation, model, call, role)
        except LLMError as exc:
            raise HarnessError(f"the simulated user's request {call} failed: {exc}") from None
        for key, value in (response.usage or {}).items():
            self.usage[key] = self.usage.get(key, 0) + value
        return response

    def cost(self) -> dict[str, int]:
        """What the user cost, as keys of the scenario's usage: ``user_requests`` and
        ``user_prompt_tokens``, ``user_completion_tokens``, ``user_total_tokens``."""
        if not self.requests:
            return {}
        cost = {"user_requests": self.requests}
        cost.update({f"user_{k}": self.usage[k] for k in _USAGE if k in self.usage})
        return cost


def user_source(run: ScenarioRun, agent_llm: Any) -> UserSide | None:
    """The source the simulated user asks (None for a user that asks no model): the
    agent's own when it can (the same provider, endpoint and cassette session)."""
    scenario = run.scenario
    user = scenario.user
    if user.kind != "llm":
        return None
    provider = user_provider(scenario)
    if provider == "scripted":
        rule = scripted_rule(scenario)
        if rule is None:  # said when the file loaded; a scenario built in Python
            raise HarnessError("no llm.conversations rule scripts the simulated user")
        return UserSide(ScriptedUserModel(rule, run.llm.draws + "\x00user"))
    same_endpoint = user.base_url in (None, scenario.llm.base_url)
    if provider == scenario.llm.provider and same_endpoint and hasattr(agent_llm, "converse"):
        return UserSide(agent_llm)
    config = LLMConfig(
        provider=provider,
        model=user.model,
        base_url=user.base_url,
        cassette=scenario.llm.cassette,
    )
    return UserSide(llm_source(run, config))
