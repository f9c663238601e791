"""The scenario file schema (pydantic; unknown keys are errors)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    WithJsonSchema,
    create_model,
    model_validator,
)

from harness.actions import Termination
from harness.config import AgentConfig, ModelPrice
from harness.llm.config import LLMConfig
from harness.markers import check_tag
from harness.scenario.dotted import DottedKeyError, expand_dotted
from harness.scenario.injection import Inject, InjectSpec

__all__ = [
    "TOOL_NAME",
    "AgentSection",
    "CodeSpec",
    "Count",
    "ExpectSection",
    "InjectSpec",
    "JudgeSpec",
    "Range",
    "RemoteSpec",
    "Scenario",
    "SubAgentSpec",
    "TargetSection",
    "ToolErrorSpec",
    "ToolResultSpec",
    "ToolSpec",
    "TurnSpec",
    "UserSection",
    "json_schema",
]

# Unknown keys are errors, and numbers are finite: an infinite latency or bound would
# reach results.json as Infinity (not JSON) or a clock that never stops.
_CLOSED = ConfigDict(extra="forbid", allow_inf_nan=False)
# What the OpenAI API accepts as a function name (Chat Completions and Responses).
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class Range(BaseModel):
    """A number, exactly (``1.5``) or within bounds (``{min: 1, max: 2.5}``); never negative."""

    model_config = _CLOSED
    min: float | None = Field(default=None, json_schema_extra={"minimum": 0})
    max: float | None = Field(default=None, json_schema_extra={"minimum": 0})

    # Counts (iterations, calls) are whole numbers: ``iterations: 2.5`` could never match.
    _whole: ClassVar[bool] = False

    @model_validator(mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        form = "a whole number" if cls._whole else "a number"
        if isinstance(value, bool):
            raise ValueError(f"expected {form} or bounds like {{min: 1, max: 5}}")
        if isinstance(value, float) and cls._whole:
            if not value.is_integer():
                raise ValueError(f"{value} is not a whole number; a count is 0, 1, 2, ...")
            value = int(value)
        if isinstance(value, int | float):
            return {"min": value, "max": value}
        if not isinstance(value, dict):
            raise ValueError(f"expected {form} or bounds like {{min: 1, max: 5}}")
        return value

    @model_validator(mode="after")
    def _bounds(self) -> Range:
        if self.min is None and self.max is None:
            raise ValueError("give min, max or both")
        for bound in (self.min, self.max):
            if bound is None:
                continue
            if bound < 0:
                raise ValueError(
                    f"{self._num(bound)} is negative; what is counted or timed is >= 0"
                )
            if self._whole and not float(bound).is_integer():
                raise ValueError(f"{bound} is not a whole number; a count is 0, 1, 2, ...")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(
                f"min ({self._num(self.min)}) is greater than max ({self._num(self.max)})"
            )
        return self

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        # Editors must accept the plain number form too.
        bounds = handler(core_schema)
        number = {"type": "integer" if cls._whole else "number", "minimum": 0}
        return {"anyOf": [number, bounds]}

    def contains(self, value: float, tolerance: float = 0.0) -> bool:
        """Whether ``value`` is within the bounds."""
        if self.min is not None and value < self.min - tolerance:
            return False
        return not (self.max is not None and value > self.max + tolerance)

    @staticmethod
    def _num(x: float) -> Any:
        return int(x) if float(x).is_integer() else x

    def shown(self) -> Any:
        """How the expectation is displayed: the number, or {min, max}."""
        if self.min == self.max:
            return self._num(self.min)  # type: ignore[arg-type]
        return {k: self._num(v) for k, v in (("min", self.min), ("max", self.max)) if v is not None}


class Count(Range):
    """A count, exactly (``3``) or within bounds (``{min: 2, max: 5}``)."""

    min: int | None = Field(default=None, json_schema_extra={"minimum": 0})  # type: ignore[assignment]
    max: int | None = Field(default=None, json_schema_extra={"minimum": 0})  # type: ignore[assignment]
    _whole: ClassVar[bool] = True


# The agent: section is AgentConfig's fields, written where they are defined (harness.config)
# and only there; the file spells the stagnation window as `stagnation: {window: W}`.
_WINDOW = AgentConfig.model_fields["stagnation_window"]


class StagnationSection(BaseModel):
    """Stagnation detection settings."""

    model_config = _CLOSED
    window: int = Field(default=_WINDOW.default, ge=0, description=_WINDOW.description)


class _AgentSectionBase(BaseModel):
    """How the agent loop runs."""

    model_config = _CLOSED

    def to_config(self) -> AgentConfig:
        """The loop's AgentConfig."""
        settings = self.model_dump(exclude={"stagnation"})
        return AgentConfig(**settings, stagnation_window=self.stagnation.window)


def _agent_fields() -> dict[str, Any]:
    """AgentConfig's fields in their order, the window as a ``stagnation`` mapping."""
    fields: dict[str, Any] = {}
    for name, info in AgentConfig.model_fields.items():
        if name == "prices":
            continue  # a scenario's top-level `prices:` (with [tool.harness.prices])
        if name == "stagnation_window":
            fields["stagnation"] = (StagnationSection, Field(default_factory=StagnationSection))
        else:
            fields[name] = (info.annotation, info)
    return fields


AgentSection = create_model(
    "AgentSection",
    __base__=_AgentSectionBase,
    __module__=__name__,
    __doc__=_AgentSectionBase.__doc__,
    **_agent_fields(),
)


class ParamSpec(BaseModel):
    """A short-form parameter with details: ``{type: int, default: 3, description: ...}``."""

    model_config = _CLOSED
    type: str = "str"
    default: Any = None
    description: str | None = None

    @property
    def has_default(self) -> bool:
        """Whether the parameter is optional (a default was given, even null)."""
        return "default" in self.model_fields_set


class ToolResultSpec(BaseModel):
    """What the Nth call of a stub returns (``results:``)."""

    model_config = _CLOSED
    on_call: int = Field(ge=1)
    returns: Any = None


class ToolErrorSpec(BaseModel):
    """The Nth call of a stub raises (``errors:``); without ``on_call``, every call does."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)
    on_call: int | None = Field(
        default=None, ge=1, description="the call that raises (1-based); omitted: every call"
    )
    raise_: str = Field(alias="raise", description="the exception message")
    type: str = Field(default="ToolError", description="the exception type name shown to the model")

    @model_validator(mode="after")
    def _type_name(self) -> ToolErrorSpec:
        if not self.type.isidentifier():
            raise ValueError(f"type {self.type!r} is not a valid exception name")
        return self


class CodeSpec(BaseModel):
    """A code-execution tool (``harness.CodeExecutionTool``): Python the model writes, run
    in a sandbox; its arguments are ``{code: str}``."""

    model_config = _CLOSED
    sandbox: Literal["auto", "process", "bubblewrap", "docker"] = Field(
        default="auto",
        description="the sandbox backend; auto: the strongest that works here (pin one for "
        "results that must not depend on the machine)",
    )
    timeout: float = Field(
        default=10.0, gt=0, description="wall seconds before the code is stopped"
    )
    memory_mb: int = Field(default=512, ge=16, description="address space of the code, in MB")
    output_bytes: int = Field(default=64_000, ge=1, description="stdout and stderr kept, each")
    processes: int = Field(default=32, ge=1, description="processes and threads at once")


_URL = re.compile(r"^https?://[^\s/]+")


class RemoteSpec(BaseModel):
    """A remote A2A agent as a tool: at ``url``, or served by harness from ``scenario``."""

    model_config = _CLOSED
    url: str | None = Field(default=None, description="the agent's http(s):// address")
    scenario: str | None = Field(
        default=None,
        description="a scenario file (relative to this one) that harness serves as an A2A "
        "agent on 127.0.0.1 for as long as the process runs",
    )
    timeout: float = Field(default=60.0, gt=0, description="wall seconds for one call")

    @model_validator(mode="after")
    def _one_source(self) -> RemoteSpec:
        if (self.url is None) == (self.scenario is None):
            raise ValueError("give either url (a running agent) or scenario (a file to serve)")
        if self.url is not None:
            _check_url(self.url)
        return self


def _check_url(value: str) -> str:
    if not _URL.match(value):
        raise ValueError(
            f"{value!r} is not an http:// or https:// address; write remote: http://HOST:PORT, "
            "or remote: {scenario: FILE} to serve a scenario file"
        )
    return value


# ``remote: URL`` is short for ``remote: {url: URL}``.
_RemoteURL = Annotated[
    str,
    AfterValidator(_check_url),
    WithJsonSchema({"type": "string", "pattern": _URL.pattern}),
]


class ToolSpec(BaseModel):
    """A tool stub (scripted results), a real tool (``use:``), a sub-agent (``agent:``), a
    code-execution tool (``code:``) or a remote agent (``remote:``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, allow_inf_nan=False)

    description: str | None = None
    parameters: dict[str, str | ParamSpec] | None = Field(
        default=None, description="short form: {name: type} or {name: {type, default, description}}"
    )
    schema_: dict[str, Any] | None = Field(
        default=None, alias="schema", description="JSON Schema of the arguments"
    )
    returns: Any = Field(default=None, description="Jinja templates over args, call, faker")
    results: list[ToolResultSpec] | None = Field(
        default=None, description="per-call results (overrides returns for those calls)"
    )
    latency: float = Field(
        default=0.0, ge=0, description="simulated seconds per call (stubs and use: tools)"
    )
    timeout: float | None = Field(
        default=None,
        gt=0,
        description="simulated seconds: a call whose latency exceeds it fails with "
        "TimeoutError when its timeout runs out",
    )
    errors: list[ToolErrorSpec] = Field(
        default_factory=list, description="calls that raise instead (stubs and use: tools)"
    )
    use: str | None = Field(
        default=None, description="a real tool: 'module:function' or a registered tool name"
    )
    strict: bool = Field(default=False, description="send strict: true to the API")
    ends_run: bool = Field(
        default=False,
        description="a call to this tool that runs ends the run, completed, with the call's "
        "arguments as final.data.output: an output tool (pydantic-ai's final_result, the "
        "Agents SDK's stop_on_first_tool)",
    )
    agent: str | None = Field(
        default=None, description="a sub-agent of the agents: section, called with {task}"
    )
    code: CodeSpec | None = Field(
        default=None,
        description="a code-execution tool, called with {code}: Python run in a sandbox",
    )
    remote: _RemoteURL | RemoteSpec | None = Field(
        default=None,
        description="a remote A2A agent: its URL, or {url: URL, timeout: S}, or "
        "{scenario: FILE} to serve another scenario file as one",
    )

    inject: Inject | None = Field(
        default=None,
        description="prompt injection: TEXT, {text, on_call}, or a list of them, appended "
        "to the result",
    )

    @property
    def remote_spec(self) -> RemoteSpec | None:
        """``remote`` in its long form (``remote: URL`` is ``{url: URL}``)."""
        if isinstance(self.remote, str):
            return RemoteSpec(url=self.remote)
        return self.remote

    @property
    def injections(self) -> list[InjectSpec]:
        """``inject`` as a list."""
        return self.inject or []

    @model_validator(mode="after")
    def _consistent(self) -> ToolSpec:
        if self.parameters is not None and self.schema_ is not None:
            raise ValueError(
                "give either parameters (short form) or schema (JSON Schema), not both"
            )
        kinds = [k for k in ("use", "agent", "code", "remote") if getattr(self, k) is not None]
        if len(kinds) > 1:
            raise ValueError(f"a tool is one thing: give one of {', '.join(kinds)}")
        if kinds and kinds[0] in ("agent", "code"):
            extra = [
                k
                for k in ("parameters", "schema_", "returns", "results")
                if getattr(self, k) is not None
            ]
            if extra:
                names = ", ".join(k.rstrip("_") for k in extra)
                what = "runs a sub-agent" if kinds[0] == "agent" else "runs the model's code"
                raise ValueError(
                    f"a tool with `{kinds[0]}:` {what}, with fixed arguments: remove {names}"
                )
        if self.use is not None:
            extra = [
                k
                for k in ("parameters", "schema_", "returns", "results")
                if getattr(self, k) is not None
            ]
            if extra:
                names = ", ".join(k.rstrip("_") for k in extra)
                raise ValueError(f"a `use:` tool is real Python: remove {names}")
        if self.remote is not None:
            extra = [
                k
                for k in ("parameters", "schema_", "returns", "results", "use", "timeout")
                if getattr(self, k) is not None
            ]
            extra += [k for k in ("latency", "errors", "strict") if getattr(self, k)]
            if extra:
                names = ", ".join(k.rstrip("_") for k in extra)
                raise ValueError(
                    f"a `remote:` tool is another agent (its parameter is task): remove {names}"
                    + ("; its time limit is remote.timeout" if "timeout" in extra else "")
                )
        return self


class TargetSection(BaseModel):
    """An external agent run against the scenario's model (DESIGN section 10).

    One kind key: ``python`` or ``command`` (built-ins), or a kind a plugin registers
    with ``harness_register_targets`` (extra keys name it).
    """

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)
    python: str | None = Field(
        default=None,
        description="module:callable, imported from the project root, called with the input",
    )
    command: list[str] | None = Field(
        default=None,
        min_length=1,
        description="argv run in the project root; the input on stdin or as {input}",
    )
    timeout: float = Field(
        default=60.0, gt=0, description="wall seconds for the whole run; then it is stopped"
    )
    on_stagnation: Literal["observe", "stop"] = Field(
        default="observe",
        description="stop: answer the request after a stagnating plan with HTTP 400",
    )
    requires: list[str] = Field(
        default_factory=list,
        description="Python modules or programs the target needs: when one is missing the "
        "scenario is skipped (with the reason), not an error",
    )

    def kinds(self) -> dict[str, Any]:
        """The kind keys given: ``{kind: value}`` (one, in a valid file)."""
        given = {k: getattr(self, k) for k in ("python", "command") if getattr(self, k) is not None}
        given.update(self.model_extra or {})
        return given


class _Ordered(BaseModel):
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


class ToolCallsExpect(_Ordered):
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
    """A call that must have been made; ``args`` match partially."""

    model_config = _CLOSED
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


def _as_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


class FinalExpect(_Ordered):
    """Expectations on the final response."""

    model_config = _CLOSED
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
                re.compile(self.matches)
            except re.error as exc:
                raise ValueError(f"matches is not a valid regular expression: {exc}") from None
        return self


class JudgeSpec(BaseModel):
    """A judged expectation: a model grades against ``criteria`` (the short form is the
    criteria text alone)."""

    model_config = _CLOSED
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


class TranscriptExpect(_Ordered):
    """Expectations on the whole transcript."""

    model_config = _CLOSED
    judge: JudgeSpec | None = Field(
        default=None, description="a judge model grades the transcript against criteria"
    )


class RequestExpect(BaseModel):
    """What was sent to the model on LLM call ``call`` (1-based)."""

    model_config = _CLOSED
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


class ExpectSection(_Ordered):
    """What the run must do. Plugins add keys with ``harness_register_expectations``."""

    model_config = ConfigDict(extra="allow", allow_inf_nan=False)
    termination: Annotated[Termination, BeforeValidator(_termination)] | None = None
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
                isinstance(arg, type) and issubclass(arg, _Ordered)
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


def scenario_name(path: Path) -> str:
    """The default name: the file name without ``.scenario.yaml``."""
    name = path.name
    for suffix in (".scenario.yaml", ".scenario.yml", ".yaml", ".yml"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


class TurnSpec(BaseModel):
    """One user turn of a conversation (``turns:``): the user's text and what the turn must do."""

    model_config = _CLOSED
    user: str | None = Field(
        default=None, description="the user's message (the scripted user needs one per turn)"
    )
    expect: ExpectSection | None = None


class UserSection(BaseModel):
    """Which user simulator gives the turns' messages (``harness_register_users``)."""

    model_config = _CLOSED
    name: str = Field(default="scripted", description="scripted (default) or a plugin's user")
    options: dict[str, Any] = Field(default_factory=dict, description="handed to the user")


def _check_tool_name(name: str) -> str:
    if not TOOL_NAME.match(name):
        raise ValueError(
            f"tool name {name!r} is not accepted by the OpenAI API: use 1 to 64 letters, "
            "digits, '_' or '-'"
        )
    return name


class SubAgentSpec(BaseModel):
    """A named sub-agent (the ``agents:`` section): its own loop settings, tools and
    model. A tool entry ``{agent: NAME}`` exposes it to the agent that has the tool."""

    model_config = _CLOSED
    description: str | None = Field(
        default=None, description="what the agent does: the description of tools exposing it"
    )
    agent: AgentSection = Field(default_factory=AgentSection)
    tools: dict[Annotated[str, AfterValidator(_check_tool_name)], ToolSpec] = Field(
        default_factory=dict,
        json_schema_extra={"propertyNames": {"pattern": TOOL_NAME.pattern}},
    )
    llm: LLMConfig = Field(default_factory=LLMConfig)


def _check_agent_name(name: str) -> str:
    if not TOOL_NAME.match(name):
        raise ValueError(f"agent name {name!r}: use 1 to 64 letters, digits, '_' or '-'")
    return name


class Scenario(BaseModel):
    """One ``*.scenario.yaml`` file."""

    model_config = _CLOSED

    name: str | None = Field(
        default=None, description="default: the file name without .scenario.yaml"
    )
    description: str | None = None
    tags: list[Annotated[str, AfterValidator(check_tag)]] = Field(
        default_factory=list, description="become pytest markers"
    )
    seed: int | str | None = Field(default=None, description="seeds Faker; default: the name")
    repeat: int = Field(
        default=1,
        ge=1,
        le=10_000,
        description="run the scenario N times (ids path::name[k]); pass rates in results.json",
    )
    agent: AgentSection = Field(default_factory=AgentSection)
    input: str | None = None
    history: str | list[dict[str, Any]] | None = Field(
        default=None, description="a saved conversation (JSON file) or a list of OpenAI messages"
    )
    tools: dict[Annotated[str, AfterValidator(_check_tool_name)], ToolSpec] = Field(
        default_factory=dict, json_schema_extra={"propertyNames": {"pattern": TOOL_NAME.pattern}}
    )
    llm: LLMConfig = Field(default_factory=LLMConfig)
    agents: dict[Annotated[str, AfterValidator(_check_agent_name)], SubAgentSpec] = Field(
        default_factory=dict,
        description="named sub-agents; a tool entry {agent: NAME} exposes one",
        json_schema_extra={"propertyNames": {"pattern": TOOL_NAME.pattern}},
    )
    matrix: dict[str, list[Any]] | None = Field(
        default=None,
        description="run the scenario once per combination: {model: [...], planner: [...], "
        "any agent setting: [...]}",
    )
    target: TargetSection | None = Field(
        default=None, description="an external agent to test instead of harness's own loop"
    )
    expect: ExpectSection | None = None
    turns: list[TurnSpec] | None = Field(
        default=None,
        min_length=1,
        description="a conversation: one run of the loop per turn, instead of input:",
    )
    user: UserSection = Field(default_factory=UserSection)
    prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description="USD per million tokens by model, for budget.cost (over the defaults and "
        "[tool.harness.prices])",
    )

    # Set by the loader: where the file is (tools and history are built from it per run).
    _path: Path | None = PrivateAttr(default=None)
    _source: Any = PrivateAttr(default=None)
    _root: Path | None = PrivateAttr(default=None)
    # A matrix combination this scenario is (harness.scenario.matrix), None otherwise.
    _combination: dict[str, Any] | None = PrivateAttr(default=None)

    @property
    def combination(self) -> dict[str, Any] | None:
        """The matrix combination this scenario runs (``{model: ..., planner: ...}``), if any."""
        return self._combination

    # Why the scenario cannot run here (its target needs what is not installed), if so.
    _skip: str | None = PrivateAttr(default=None)

    def bind(self, path: Path | None, source: Any = None) -> None:
        """Remember the file this scenario came from (and its located YAML)."""
        self._path = path
        self._source = source
        self._root = None

    def mark_skipped(self, reason: str) -> None:
        """Skip this scenario when it runs, saying ``reason``."""
        self._skip = reason

    @property
    def skip_reason(self) -> str | None:
        """Why this scenario is skipped (None when it runs)."""
        return self._skip

    @property
    def root(self) -> Path:
        """The project root of the scenario file (found once: it walks up the folders)."""
        if self._root is None:
            from harness.project import project_root

            self._root = project_root(self._path.parent if self._path else None)
        return self._root

    @property
    def id_path(self) -> str | None:
        """The file's POSIX path relative to the project root (absolute outside it).

        The path part of the scenario's id: the same wherever a run starts. None for a
        scenario built in Python.
        """
        if self._path is None:
            return None
        from harness.project import project_relative

        return project_relative(self._path, self.root)

    @property
    def path(self) -> Path | None:
        """The scenario file (None for a scenario built in Python)."""
        return self._path

    @property
    def source(self) -> Any:
        """The located YAML the scenario was loaded from (for line numbers), if any."""
        return self._source

    @property
    def display_name(self) -> str:
        """``name``, else the file name without ``.scenario.yaml``."""
        if self.name:
            return self.name
        return scenario_name(self._path) if self._path else "scenario"

    def resolve(self, relative: str) -> Path:
        """A path given in the scenario, relative to the scenario file's folder."""
        candidate = Path(relative)
        if candidate.is_absolute() or self._path is None:
            return candidate
        return self._path.parent / candidate


ToolCallsExpect.model_rebuild()


def json_schema() -> dict[str, Any]:
    """The JSON Schema of scenario files (``harness schema``), for editors."""
    schema = Scenario.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "harness scenario (*.scenario.yaml)",
        **{k: v for k, v in schema.items() if k != "title"},
    }
