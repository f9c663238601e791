"""The ``expect:`` section of a scenario file: what a run must do."""

from __future__ import annotations

from typing import Annotated, Any, Literal

import regex
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    WithJsonSchema,
    model_validator,
)

from harness._actions import Termination
from harness.events import ToolCallStatus
from harness.scenario._dotted import DottedKeyError, expand_dotted
from harness.scenario._fields import CLOSED, Count, Range

__all__ = ["ExpectSection", "JudgeSpec", "Ordered"]


class Ordered(BaseModel):
    """Remembers the order keys were written in, so results list them in file order."""

    _order: tuple[str, ...] = PrivateAttr(default=())

    @model_validator(mode="wrap")
    @classmethod
    def _remember_order(cls, data: Any, handler: Any) -> Any:
        model = handler(data)
        if isinstance(data, dict):
            model._order = tuple(str(k) for k in data)
        return model

    def given(self) -> dict[str, Any]:
        """The keys given in the file (plugins' extra keys included), in file order."""
        values = {name: getattr(self, name) for name in self.model_fields_set}
        values.update(self.model_extra or {})
        order = [k for k in self._order if k in values] + [
            k for k in values if k not in self._order
        ]
        return {k: values[k] for k in order}


class ToolCallsExpect(Ordered):
    """Expectations on the tool calls made."""

    model_config = ConfigDict(
        extra="forbid",
        allow_inf_nan=False,
        json_schema_extra={"dependentRequired": {"exact": ["sequence"]}},
    )
    sequence: list[str] | None = Field(
        default=None, description="tool names in order (subsequence)"
    )
    exact: bool = Field(default=False, description="the sequence must equal all calls made")
    include: list[IncludeCall] | None = None
    count: dict[str, Count] | None = None
    forbid: list[IncludeCall] | None = Field(
        default=None, description="calls that must not be made (arguments match partially)"
    )

    @model_validator(mode="after")
    def _exact_needs_sequence(self) -> ToolCallsExpect:
        if "exact" in self.model_fields_set and self.sequence is None:
            raise ValueError(
                "exact: says how to compare `sequence` with the calls made: give sequence too"
            )
        return self


class IncludeCall(BaseModel):
    """A call that must have been made; ``args`` match partially, ``status`` (when given)
    is what became of it."""

    model_config = CLOSED
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    status: ToolCallStatus | None = Field(
        default=None,
        description="what became of the call: ok, error, invalid, unknown_tool or not_run",
    )


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


class FinalExpect(Ordered):
    """Expectations on the final response."""

    model_config = CLOSED
    contains: (
        Annotated[
            list[str],
            BeforeValidator(_as_list),
            WithJsonSchema(
                {"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
            ),
        ]
        | None
    ) = None
    matches: str | None = None
    equals: str | None = None
    data: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    judge: JudgeSpec | None = Field(
        default=None, description="a judge model grades the final answer against criteria"
    )

    @model_validator(mode="after")
    def _regex(self) -> FinalExpect:
        if self.matches is not None:
            try:
                regex.compile(self.matches)  # the engine check_matches searches with
            except regex.error as exc:
                raise ValueError(f"matches is not a valid regular expression: {exc}") from None
        return self


class JudgeSpec(BaseModel):
    """A judged expectation: a model grades against ``criteria`` (the short form is the
    criteria text alone)."""

    model_config = CLOSED
    criteria: str = Field(description="what the graded text must do, in plain words")
    model: str | None = Field(
        default=None,
        description="the judge model; default [tool.harness] judge_model, else llm.model",
    )
    threshold: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="pass when the verdict's score is at least this (0-1); default: the "
        "verdict's own pass",
    )
    verdict: Literal["pass", "fail"] = Field(
        default="pass",
        description="the verdict wanted: fail for a calibration scenario (the judge must "
        "reject a known-bad answer)",
    )

    @model_validator(mode="before")
    @classmethod
    def _short_form(cls, value: Any) -> Any:
        return {"criteria": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _criteria(self) -> JudgeSpec:
        if not self.criteria.strip():
            raise ValueError("criteria is empty: say what a good answer must do")
        return self

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        # Editors must accept the short form (the criteria text) too.
        return {"anyOf": [{"type": "string", "minLength": 1}, handler(core_schema)]}

    def shown(self) -> Any:
        """How the expectation is displayed: the criteria, or every field given."""
        if self.model_fields_set <= {"criteria"}:
            return self.criteria
        return {
            k: getattr(self, k) for k in ("criteria", *sorted(self.model_fields_set - {"criteria"}))
        }


class TranscriptExpect(Ordered):
    """Expectations on the whole transcript."""

    model_config = CLOSED
    judge: JudgeSpec | None = Field(
        default=None, description="a judge model grades the transcript against criteria"
    )


class RequestExpect(BaseModel):
    """What was sent to the model on LLM call ``call`` (1-based)."""

    model_config = CLOSED
    call: int = Field(ge=1)
    tool_results_include: list[str] | None = None
    messages_include: list[str] | None = None
    tools: list[str] | None = None
    tool_choice: Any = None


def _termination(value: Any) -> Any:
    # Files are validated strictly (no coercion), where an enum wants an instance: a
    # termination is written by its value.
    if isinstance(value, str) and not isinstance(value, Termination):
        try:
            return Termination(value)
        except ValueError:
            names = ", ".join(repr(t.value) for t in Termination)
            raise ValueError(f"unknown termination {value!r}; expected one of {names}") from None
    return value


class MCPExpect(Ordered):
    """Expectations on what crossed the MCP wire (docs/mcp.md)."""

    model_config = CLOSED
    list_changed_seen: bool | None = Field(
        default=None,
        description="an MCP server changed its tool list during the run "
        "(notifications/tools/list_changed: a rug pull) - or, false, never did",
    )


class ExpectSection(Ordered):
    """What the run must do. Plugins add keys with ``harness_register_expectations``."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)
    termination: (
        Annotated[Termination, BeforeValidator(_termination)]
        | list[Annotated[Termination, BeforeValidator(_termination)]]
        | None
    ) = Field(default=None, description="how the run ended, or a list of the endings allowed")
    iterations: Count | None = None
    llm_calls: Count | None = None
    tool_calls: ToolCallsExpect | None = None
    parallel_groups: list[list[str]] | None = None
    final: FinalExpect | None = None
    transcript: TranscriptExpect | None = None
    requests: list[RequestExpect] | None = None
    script_consumed: bool | None = None
    sim_time: Range | None = None
    never_called: list[str] | None = Field(
        default=None, description="tools the run must never call"
    )
    turns: Count | None = Field(default=None, description="turns run (a `turns:` scenario)")
    max_requests_per_call: int | None = Field(
        default=None,
        ge=1,
        strict=True,
        description="the most requests the model may get for one of its replies (the first "
        "and the retries after a failure); a target is stopped once it sends more",
    )
    mcp: MCPExpect | None = Field(default=None, description="what crossed the MCP wire")
    failing: list[str] | None = Field(
        default=None,
        description="expectations (dotted paths given here) this run is known to fail: the "
        "scenario passes while they fail and fails once they hold",
    )

    @classmethod
    def sections(cls) -> frozenset[str]:
        """The keys whose value has keys of its own (``tool_calls``, ``final``)."""
        return frozenset(
            name
            for name, field in cls.model_fields.items()
            if any(
                isinstance(arg, type) and issubclass(arg, Ordered)
                for arg in getattr(field.annotation, "__args__", ())
            )
        )

    @model_validator(mode="before")
    @classmethod
    def _dotted(cls, value: Any) -> Any:
        # `tool_calls.count: {...}` is `tool_calls: {count: {...}}` (the loader does this
        # first, keeping lines; this covers Scenario objects built in Python).
        if not isinstance(value, dict):
            return value
        try:
            return expand_dotted(value, cls.sections())
        except DottedKeyError as exc:
            raise ValueError(str(exc)) from None


ToolCallsExpect.model_rebuild()
