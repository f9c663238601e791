"""The shape of one scripted LLM reply (a scenario's ``llm.script`` entry)."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.errors import HarnessError, format_errors

__all__ = ["ScriptError", "ScriptStep", "ScriptToolCall", "Usage", "parse_step"]

_LONG_KEYS = frozenset({"id", "name", "arguments", "raw_arguments"})


class ScriptToolCall(BaseModel):
    """A scripted call: ``{name: args}`` (short) or ``{name, arguments | raw_arguments, id}``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str | None = None
    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _short_form(cls, data: Any) -> Any:
        # The long form is the one with a `name` key; any other one-key mapping is the
        # short form, so tools may be called `id`, `arguments` or `raw_arguments`.
        # {name: get_weather} alone is the long form with no arguments; {name: {...}}
        # calls a tool named `name`.
        if isinstance(data, dict) and len(data) == 1:
            ((key, value),) = data.items()
            if key != "name" or isinstance(value, dict):
                if value is not None and not isinstance(value, dict):
                    if key in _LONG_KEYS:
                        raise ValueError(
                            f"a call with {key!r} needs `name` too: {{name: get_weather, "
                            f"{key}: ...}}; a tool called {key!r} takes a mapping of arguments"
                        )
                    raise ValueError(
                        f"arguments of {key!r} must be a mapping, like "
                        f"{{{_yaml_key(key)}: {{city: SF}}}}"
                    )
                return {"name": key, "arguments": value or {}}
        return data

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        # Editors must accept the short form {tool_name: {arguments}} too.
        long_form = handler(core_schema)
        short_form = {
            "type": "object",
            "minProperties": 1,
            "maxProperties": 1,
            "additionalProperties": {"type": ["object", "null"]},
            "description": "{tool_name: {arguments}}",
        }
        return {"anyOf": [short_form, long_form]}

    @model_validator(mode="after")
    def _one_kind_of_arguments(self) -> ScriptToolCall:
        if self.arguments is not None and self.raw_arguments is not None:
            raise ValueError("give either arguments or raw_arguments, not both")
        return self


class ScriptError(BaseModel):
    """An HTTP error the LLM call fails with."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    status: int = Field(ge=400, le=599)
    message: str = "error"


class Usage(BaseModel):
    """Token usage reported with a reply."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    total_tokens: int | None = Field(default=None, ge=0)

    def as_dict(self) -> dict[str, int]:
        """The usage with total_tokens filled in."""
        total = self.total_tokens
        if total is None:
            total = self.prompt_tokens + self.completion_tokens
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": total,
        }


class ScriptStep(BaseModel):
    """One scripted reply, or an injected failure of the LLM call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    content: str | None = None
    tool_calls: list[ScriptToolCall] = Field(default_factory=list)
    error: ScriptError | Literal["timeout"] | None = None
    repeat: int = Field(default=1, ge=1, description="give this reply this many times")
    unknown_tools: bool = Field(
        default=False, description="the step names tools the scenario does not define, on purpose"
    )
    latency: float = Field(default=0.0, ge=0, description="simulated seconds for this reply")
    usage: Usage | None = None
    finish_reason: str | None = None

    @model_validator(mode="after")
    def _error_alone(self) -> ScriptStep:
        if self.error is not None and (self.content is not None or self.tool_calls):
            raise ValueError("an error step has no content or tool_calls")
        return self


def parse_step(index: int, step: ScriptStep | dict[str, Any]) -> ScriptStep:
    """A step as given, or validated from its dict (errors name the step, without URLs)."""
    if isinstance(step, ScriptStep):
        return step
    try:
        return ScriptStep.model_validate(step)
    except ValidationError as exc:
        problems = format_errors(exc.errors(include_url=False))
        raise HarnessError(f"script step {index + 1}: {problems}") from None


def _yaml_key(key: str) -> str:
    """``key`` as written in a YAML hint: plain when it can be, else quoted."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else repr(key)
