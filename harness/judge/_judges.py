"""Judged expectations: ``final.judge`` and ``transcript.judge``, registered like any
plugin's expectation checks.

A judge is one LLM request per expectation, made after the run: the documented prompt
(``harness.judge._prompt``) with the criteria and what is graded, answered with a JSON
verdict. The scenario runner hands the checks a ``Judge`` (the check context's ``judge``):
for a recorded scenario it sends through the scenario's own LLM source, marked as a
judge's request, so the judge is recorded into the same cassette and replays offline;
for a scripted one it answers from ``llm.judge_script``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from harness._errors import LLMError
from harness._messages import Conversation
from harness.hookspecs import hookimpl
from harness.judge._prompt import judge_messages
from harness.judge._verdict import Verdict, VerdictError, parse_verdict
from harness.llm._base import LLMRequest, LLMResponse
from harness.llm._script import ScriptStep
from harness.llm._scripted import ScriptedLLM

__all__ = [
    "Judge",
    "JudgeSource",
    "ScriptedJudge",
    "check_final_judge",
    "check_transcript_judge",
    "harness_register_expectations",
]

# The usage keys a judge adds to a scenario's usage (beside the agent's own tokens).
USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")


class JudgeSource(Protocol):
    """Where judge requests go: ``await source.judge(messages, model, call)``."""

    async def judge(self, messages: list[dict[str, Any]], model: str, call: int) -> LLMResponse:
        """The judge model's reply to ``messages``."""
        ...


class ScriptedJudge:
    """A judge answering from script steps (``llm.judge_script``), in order (a ``one_of``
    step drawn with ``draws``, as ``ScriptedLLM`` draws)."""

    def __init__(self, steps: Iterable[ScriptStep | dict[str, Any]], draws: str = "") -> None:
        self.llm = ScriptedLLM(steps, draws=draws)

    async def judge(self, messages: list[dict[str, Any]], model: str, call: int) -> LLMResponse:
        """The next scripted verdict."""
        return await self.llm.complete(LLMRequest(conversation=Conversation(), tools=[], call=call))


class Judge:
    """A scenario's judge: its source, its default model, and what it cost."""

    def __init__(self, source: JudgeSource, default_model: str | None = None) -> None:
        self.source = source
        self.default_model = default_model
        self.requests = 0
        self.usage: dict[str, int] = {}

    async def verdict(self, messages: list[dict[str, Any]], model: str | None) -> Verdict:
        """Ask the judge; LLMError when the request fails, VerdictError for a bad reply."""
        self.requests += 1
        chosen = model or self.default_model or "judge"
        response = await self.source.judge(messages, chosen, self.requests)
        for key, value in (response.usage or {}).items():
            self.usage[key] = self.usage.get(key, 0) + value
        return parse_verdict(response.message.content)

    def cost(self) -> dict[str, int]:
        """What the judges cost, as keys of the scenario's usage: ``judge_requests`` and
        ``judge_prompt_tokens``, ``judge_completion_tokens``, ``judge_total_tokens``."""
        if not self.requests:
            return {}
        cost = {"judge_requests": self.requests}
        for key in USAGE_KEYS:
            if key in self.usage:
                cost[f"judge_{key}"] = self.usage[key]
        return cost


def _task(conversation: Conversation | None) -> str | None:
    """What the user asked: the last user message before the answer."""
    for message in reversed(conversation.messages if conversation else []):
        if message.role == "user":
            return message.content if isinstance(message.content, str) else str(message.content)
    return None


async def _judge(result: Any, spec: Any, subject: str) -> tuple[bool, Any]:
    judge: Judge | None = getattr(result, "judge", None)
    if judge is None:
        return False, (
            "no judge for this scenario: a scripted scenario needs llm.judge_script, a "
            "recorded one provider: openai"
        )
    conversation = result.conversation
    messages = judge_messages(
        subject,
        spec.criteria,
        task=_task(conversation),
        final=result.final.content,
        transcript=conversation.to_openai() if conversation is not None else [],
    )
    try:
        verdict = await judge.verdict(messages, spec.model)
    except LLMError as exc:
        return False, f"the judge's request failed: {exc}"
    except VerdictError as exc:
        return False, str(exc)
    if spec.threshold is None:
        decided, shown = verdict.passed, verdict.reason
    else:
        decided = verdict.score >= spec.threshold
        sign = ">=" if decided else "<"
        shown = f"score {verdict.score:g} {sign} {spec.threshold:g}: {verdict.reason}"
    # `verdict: fail` expects the judge to reject what it grades (a calibration scenario).
    wanted = getattr(spec, "verdict", "pass") == "pass"
    return decided == wanted, shown


async def check_final_judge(result: Any, expected: Any) -> tuple[bool, Any]:
    """``final.judge``: a judge model grades the final answer against the criteria."""
    return await _judge(result, expected, "final answer")


async def check_transcript_judge(result: Any, expected: Any) -> tuple[bool, Any]:
    """``transcript.judge``: a judge model grades the whole transcript against the criteria."""
    return await _judge(result, expected, "transcript")


@hookimpl
def harness_register_expectations(register: Any) -> None:
    """The judged expectations: ``final.judge`` and ``transcript.judge``."""
    register("final.judge", check_final_judge)
    register("transcript.judge", check_transcript_judge)
