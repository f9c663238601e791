"""The ``llm:`` section of a scenario, handed to an LLM factory as ``factory(config)``."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from harness.llm._faults import ModelFault, check_recorded, with_faults
from harness.llm._script import Script, ScriptStep

__all__ = [
    "RECORDED_PROVIDERS",
    "RECORD_MODES",
    "ConversationMatch",
    "ConversationRule",
    "LLMConfig",
    "LLMContext",
]

RECORD_MODES = ("none", "once", "new_episodes", "all", "rewrite")
# The built-in sources on a vendor's SDK, recorded into cassettes (docs/recording.md).
RECORDED_PROVIDERS = ("openai", "anthropic", "gemini")


@dataclass(frozen=True)
class LLMContext:
    """Where and how a scenario runs: what a recorded source needs beyond the llm section."""

    scenario_id: str = ""
    scenario_file: Path | None = None
    project_root: Path = field(default_factory=Path.cwd)
    record_mode: str = "none"
    # --disable-recording: talk to the endpoint live and write nothing.
    disable_recording: bool = False
    # A matrix combination (``model=a,planner=b``): it gets a cassette of its own.
    variant: str | None = None
    # What the script's stochastic (one_of) steps are drawn with: the scenario's id, the
    # run's number and the seed (harness.llm._script.draw_material).
    draws: str = ""


class ConversationMatch(BaseModel):
    """What a conversation's first request must hold for a rule to script it (every key
    given must hold; docs/external.md#several-conversations)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    system_contains: str | None = Field(
        default=None, description="text found in the request's system instructions"
    )
    user_contains: str | None = Field(
        default=None, description="text found in one of the request's user messages"
    )
    model: str | None = Field(default=None, description="the model the request names")
    tools_include: list[str] = Field(
        default_factory=list, description="tool names the request offers (all of them)"
    )
    # The short names of harness.wires (the engine imports no wire: listed here).
    wire: Literal["chat", "responses", "messages", "gemini"] | None = Field(
        default=None,
        description="the model API the request came on: chat (Chat Completions), responses "
        "(the Responses API), messages (Anthropic Messages), gemini (the Gemini API)",
    )

    @field_validator("tools_include", mode="before")
    @classmethod
    def _one_name(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _something(self) -> ConversationMatch:
        if not self.model_dump(exclude_defaults=True):
            raise ValueError(
                "match needs at least one of system_contains, user_contains, model, "
                "tools_include, wire (an empty match would take every conversation)"
            )
        return self


class ConversationRule(BaseModel):
    """A conversation other than the main one: matched by its first request, answered
    from its own script (``llm.conversations`` entries)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(
        default=None, description="the conversation's name in results (default: conversation N)"
    )
    match: ConversationMatch
    script: Script = Field(description="the conversation's scripted replies, in order")


class LLMConfig(BaseModel):
    """Scripted replies (``script``) or a recorded/live model (``provider: openai``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str = Field(
        default="scripted",
        description="scripted (default), openai, anthropic, or a plugin's LLM source",
    )
    script: Script = Field(default_factory=list, description="scripted replies, in order")
    conversations: list[ConversationRule] = Field(
        default_factory=list,
        description="scripts of the target's other conversations, each matched by its first "
        "request (the first rule that matches wins; an unmatched conversation gets script)",
    )
    faults: list[ModelFault] = Field(
        default_factory=list,
        description="model faults, each before the reply it names: {call: N, kind: KIND} "
        "(http_429, timeout, stream_cut, malformed_arguments, outage, ...; "
        "docs/scenarios.md#model-faults)",
    )
    judge_script: Script = Field(
        default_factory=list,
        description="scripted replies of the judge (JSON verdicts {pass, score, reason}), "
        "in order, one per judged expectation; `harness serve` answers judge requests "
        "from them",
    )
    model: str | None = Field(default=None, description="model name for recorded/live providers")
    cassette: str | None = Field(
        default=None, description="vcrpy cassette; relative to the scenario file's folder"
    )
    match: Literal["body", "sequential"] = "body"
    match_ignore: list[str] = Field(
        default_factory=list, description="dotted request-body paths ignored when matching"
    )
    stream: bool = False
    api: Literal["chat", "responses"] = "chat"
    base_url: str | None = None
    timeout: float | None = Field(default=None, gt=0, description="request timeout in seconds")
    options: dict[str, Any] = Field(
        default_factory=dict, description="extra request parameters (temperature, seed, ...)"
    )

    @model_validator(mode="after")
    def _faults_fit(self) -> LLMConfig:
        if not self.faults:
            return self
        if self.provider != "scripted":
            problem = check_recorded(self.faults, "faults")
            if problem:
                raise ValueError(problem)
            return self
        names = [rule.name for rule in self.conversations]
        for number, fault in enumerate(self.faults, 1):
            if fault.conversation is not None and self._rule_of(fault.conversation) is None:
                known = ", ".join(repr(n) for n in names if n) or "none is named"
                raise ValueError(
                    f"faults entry {number}: conversation {fault.conversation!r} is no "
                    f"llm.conversations entry (give its name ({known}) or its number, 1 to "
                    f"{len(names)})"
                )
        self.scripted()
        for n in range(len(self.conversations)):
            self.conversation_script(n)
        return self

    def _rule_of(self, which: str | int) -> int | None:
        """The index of the conversation a fault names (by name, or number from 1)."""
        if isinstance(which, int):
            return which - 1 if 1 <= which <= len(self.conversations) else None
        names = [rule.name for rule in self.conversations]
        return names.index(which) if which in names else None

    def scripted(self) -> list[ScriptStep]:
        """The script as served: ``script`` with the main conversation's faults placed."""
        main = [f for f in self.faults if f.conversation is None]
        if not main or self.provider != "scripted":
            return list(self.script)  # a recorded model's faults are FaultyLLM's
        return with_faults(self.script, main, "faults")

    def conversation_script(self, index: int) -> list[ScriptStep]:
        """The script of ``conversations[index]`` with its faults placed."""
        script = self.conversations[index].script
        mine = [
            f
            for f in self.faults
            if f.conversation is not None and self._rule_of(f.conversation) == index
        ]
        return with_faults(script, mine, "faults") if mine else list(script)

    def served_conversations(self) -> list[ConversationRule]:
        """``conversations`` with each one's faults placed in its script."""
        if not any(f.conversation is not None for f in self.faults):
            return list(self.conversations)
        return [
            rule.model_copy(update={"script": self.conversation_script(n)})
            for n, rule in enumerate(self.conversations)
        ]

    # (default=None, not a default_factory: pydantic inspects a factory's signature on
    # every instance, which showed in the collection of large suites.)
    _context: LLMContext | None = PrivateAttr(default=None)

    @property
    def context(self) -> LLMContext:
        """The run's context (scenario, project root, record mode)."""
        return self._context if self._context is not None else LLMContext()

    def with_context(self, context: LLMContext) -> LLMConfig:
        """A copy of this config bound to ``context``."""
        bound = self.model_copy()
        bound._context = context
        return bound

    def conversation_names(self) -> list[str]:
        """Each rule's conversation name, in order (``conversation N`` when unnamed)."""
        return [rule.name or f"conversation {n}" for n, rule in enumerate(self.conversations, 1)]
