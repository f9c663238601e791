"""A scenario's simulated user (``user: {simulator: llm, ...}``, docs/scenarios.md
#simulated-users): the checks of its section, and the ``llm.conversations`` rule that
scripts it (``provider: scripted``: as `harness serve` answers it from the same file).
The source it asks is ``harness.scenario._user_model``'s."""

from __future__ import annotations

from harness._users import user_prompt
from harness.llm._config import RECORDED_PROVIDERS, ConversationRule
from harness.scenario._issues import IssueSink
from harness.scenario._schema import Scenario

__all__ = ["check_user", "scripted_rule", "user_provider"]


def user_provider(scenario: Scenario) -> str:
    """The simulated user's provider: its own, else the agent's."""
    return scenario.user.provider or scenario.llm.provider


def scripted_rule(scenario: Scenario) -> ConversationRule | None:
    """The ``llm.conversations`` rule that scripts the simulated user: the first whose
    match holds for its first request (its system prompt, its opening message, its model)."""
    user = scenario.user
    system = user_prompt(user.goal or "", user.persona, user.stop_when)
    for rule in scenario.llm.conversations:
        match = rule.match
        if match.tools_include or (match.model is not None and match.model != user.model):
            continue
        if match.system_contains is not None and match.system_contains not in system:
            continue
        if match.user_contains is not None:
            continue  # its opening message is harness's, not the user's words
        return rule
    return None


def check_user(scenario: Scenario, issue: IssueSink) -> None:
    """What a simulated user (``user: {simulator: llm}``) needs: a goal, and a model to
    play it (a script, or a recorded provider's model recording where the agent's does).
    (Which simulator, and turns to speak: harness.scenario._guards.)"""
    user = scenario.user
    if user.kind != "llm" or scenario.turns is None:
        return
    if not user.goal:
        issue(("user",), "user: {simulator: llm} needs goal: what the user wants done")
    provider = user_provider(scenario)
    if provider == "scripted":
        if scripted_rule(scenario) is None:
            issue(
                ("user",),
                "a scripted simulated user is answered from llm.conversations: add a rule "
                "matching its system prompt, like {match: {system_contains: <a few words of "
                "its goal>}, script: [...]}, or give the user a recorded provider "
                "(provider: openai, model: ...)",
            )
        return
    if provider not in RECORDED_PROVIDERS:
        known = ", ".join(("scripted", *RECORDED_PROVIDERS))
        issue(("user", "provider"), f"unknown provider {provider!r} for a user ({known})")
    elif not user.model:
        issue(("user",), f"a simulated user on provider {provider} needs model: (its model)")
    agent = scenario.llm.provider
    if agent in RECORDED_PROVIDERS and provider != agent:
        issue(
            ("user", "provider"),
            f"the simulated user records into the scenario's cassette, which provider "
            f"{agent} writes: give it provider {agent} (or none)",
        )
