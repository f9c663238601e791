"""The shape of one scripted LLM reply (a scenario's ``llm.script`` entry)."""

from __future__ import annotations

import hashlib
import json
import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from harness._errors import HarnessError, describe_errors
from harness._messages import parse_arguments
from harness.llm._chunks import ChunkAccumulator, LLMChunk, ToolCallDelta, reply_chunks
from harness.simclock import MAX_SECONDS

# Replies of one step, and of one script (steps times their repeat): far more than any run
# asks for, far fewer than would cost a server its memory (it lays a script out reply by
# reply; a repeat of 10**8 took 1.7 GB).
MAX_REPEAT = 10_000
MAX_REPLIES = 100_000

__all__ = [
    "MAX_REPEAT",
    "MAX_REPLIES",
    "Script",
    "ScriptChunk",
    "ScriptChunkCall",
    "ScriptError",
    "ScriptOption",
    "ScriptStep",
    "ScriptToolCall",
    "Usage",
    "draw_material",
    "parse_step",
    "uniform",
    "wire_calls",
]

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

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    status: int = Field(ge=400, le=599)
    message: str = "error"
    retry_after: float | None = Field(
        default=None,
        gt=0,
        le=3600,
        description="seconds the answer tells the client to wait before retrying (served "
        "as retry-after-ms and retry-after; the SDKs honour it instead of their own "
        "backoff)",
    )


# The error steps given by name: a timeout (the answer held past the client's patience),
# an overloaded API (Anthropic's 529, 503 on the other wires) and an outage (this request
# and every one after it fail with 503). docs/scenarios.md#llm-errors.
ErrorName = Literal["timeout", "overloaded", "outage"]


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


class ScriptChunkCall(BaseModel):
    """A piece of one tool call in a streamed reply (a Chat Completions tool-call delta)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    index: int = Field(ge=0, description="which call of the reply this piece belongs to")
    id: str | None = None
    name: str | None = None
    arguments: str | None = Field(default=None, description="a piece of the arguments text")


class ScriptChunk(BaseModel):
    """One piece of a streamed reply, exactly as the stream sends it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    content: str | None = Field(default=None, description='a piece of the text ("" is allowed)')
    tool_calls: list[ScriptChunkCall] = Field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = Field(default=None, description="real streams send it last, alone")

    def as_chunk(self) -> LLMChunk:
        """The chunk a source emits."""
        return LLMChunk(
            content=self.content,
            tool_calls=tuple(
                ToolCallDelta(c.index, c.id, c.name, c.arguments) for c in self.tool_calls
            ),
            finish_reason=self.finish_reason,
            usage=self.usage.as_dict() if self.usage is not None else None,
        )


def _text_piece(value: Any) -> Any:
    """A chunk given as a plain string is a piece of text: ``"Cold"`` is ``{content: Cold}``."""
    return {"content": value} if isinstance(value, str) else value


# A streamed piece as a file writes it: a ScriptChunk, or a string for a text piece.
ChunkEntry = Annotated[
    ScriptChunk, BeforeValidator(_text_piece, json_schema_input_type=str | ScriptChunk)
]


class ScriptStep(BaseModel):
    """One scripted reply, or an injected failure of the LLM call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    content: str | None = None
    tool_calls: list[ScriptToolCall] = Field(default_factory=list)
    error: ScriptError | ErrorName | None = None
    cut: float | None = Field(
        default=None,
        ge=0,
        lt=1,
        description="the connection drops after this share of the reply was sent (a stream "
        "cut mid-reply): the client never gets it whole; like an error step it takes no "
        "place in the script, so the next request gets the next step",
    )
    repeat: int = Field(
        default=1,
        ge=1,
        le=MAX_REPEAT,
        description=f"give this reply this many times ({MAX_REPEAT} at most)",
    )
    unknown_tools: bool = Field(
        default=False, description="the step names tools the scenario does not define, on purpose"
    )
    latency: float = Field(
        default=0.0,
        ge=0,
        le=MAX_SECONDS,
        description="simulated seconds for this reply (a year at most)",
    )
    usage: Usage | None = None
    finish_reason: str | None = None
    reasoning: str | None = Field(
        default=None,
        description="the model's reasoning before this reply, served on the wires that "
        "carry it (an Anthropic thinking block); the own loop's scripted model ignores it",
    )
    # After the reply's own fields: its check reads them (pydantic validates in
    # declaration order).
    chunks: list[ChunkEntry] | None = Field(
        default=None,
        description="the exact pieces of this reply when it is streamed (default: cut by "
        "words); they must add up to the step's content, tool_calls, finish_reason and usage",
    )
    one_of: list[ScriptOption] | None = Field(
        default=None,
        min_length=1,
        description="a stochastic step: each call it answers gets one of these replies, "
        "drawn by weight with the run's seed (docs/scenarios.md#stochastic-steps)",
    )

    @model_validator(mode="after")
    def _error_alone(self) -> ScriptStep:
        if self.error is not None and (
            self.content is not None or self.tool_calls or self.reasoning is not None
        ):
            raise ValueError("an error step has no content, tool_calls or reasoning")
        if self.error is not None and self.cut is not None:
            raise ValueError("an error step sends no reply to cut: give either error or cut")
        return self

    @model_validator(mode="after")
    def _one_of_alone(self) -> ScriptStep:
        if self.one_of is not None:
            others = sorted(self.model_fields_set - {"one_of", "repeat"})
            if others:
                raise ValueError(
                    f"a one_of step holds its replies in one_of only (and repeat: N for N "
                    f"calls, each drawn anew): move {', '.join(others)} into its options"
                )
        return self

    @property
    def stochastic(self) -> bool:
        """The step is ``one_of``: its reply is drawn for each call it answers."""
        return self.one_of is not None

    def variants(self) -> list[ScriptStep]:
        """The replies this step may give: itself, or each of its ``one_of`` options."""
        return list(self.one_of) if self.one_of is not None else [self]

    def draw(self, fraction: float) -> ScriptStep:
        """The option a uniform ``fraction`` (0 <= f < 1) draws, by weight; the step
        itself when it is not stochastic."""
        if self.one_of is None:
            return self
        total = sum(option.weight for option in self.one_of)
        point = fraction * total
        for option in self.one_of:
            point -= option.weight
            if point < 0:
                return option
        return self.one_of[-1]  # fraction * total rounded up to total

    @property
    def fails(self) -> bool:
        """Whether the request fails (an error, or a reply cut off): no place is taken."""
        return self.error is not None or self.cut is not None

    @field_validator("chunks")
    @classmethod
    def _chunks_add_up(
        cls, chunks: list[ScriptChunk] | None, info: ValidationInfo
    ) -> list[ScriptChunk] | None:
        if chunks is None:
            return chunks
        data = info.data
        if data.get("error") is not None:
            raise ValueError("an error step has no chunks: it sends no reply")
        if not {"content", "tool_calls", "usage", "finish_reason"} <= data.keys():
            return chunks  # a field above is invalid and reported already
        problem = _chunks_problem(
            chunks, data["content"], data["tool_calls"], data["usage"], data["finish_reason"]
        )
        if problem:
            raise ValueError(problem)
        return chunks

    def finish(self) -> str:
        """The reply's finish_reason: the step's, else tool_calls or stop."""
        return self.finish_reason or ("tool_calls" if self.tool_calls else "stop")

    def stream(self, call: int) -> list[LLMChunk]:
        """The reply's pieces when streamed: ``chunks`` as given, else the whole reply cut
        as the API streams it (LLM call number ``call`` names calls without an id)."""
        if self.chunks is not None:
            return [chunk.as_chunk() for chunk in self.chunks]
        usage = self.usage.as_dict() if self.usage is not None else None
        calls = [
            (call_id or f"call_{call}_{i}", name, arguments)
            for i, (call_id, name, arguments) in enumerate(wire_calls(self, call))
        ]
        return reply_chunks(self.content, calls, self.finish(), usage)


class ScriptOption(ScriptStep):
    """One reply a ``one_of`` step may give, and how likely it is (``weight``, relative to
    its siblings'): any step form, an error or a streamed reply too."""

    weight: float = Field(
        default=1.0, gt=0, allow_inf_nan=False, description="relative chance (default 1)"
    )

    @model_validator(mode="after")
    def _one_reply(self) -> ScriptOption:
        if self.one_of is not None:
            raise ValueError("a one_of option is one reply: it cannot hold a one_of of its own")
        if self.repeat != 1:
            raise ValueError(
                "a one_of option is one reply: give the one_of step repeat: N instead (each "
                "of its N calls is drawn anew)"
            )
        return self


ScriptStep.model_rebuild()


def draw_material(scenario: str, run: int | None, seed: int) -> str:
    """What a run's stochastic steps are drawn with: the scenario's id, the run's number
    (1 for a scenario run once) and the seed (``harness run --seed``)."""
    return f"{scenario}\x00run {run or 1}\x00seed {seed}"


def uniform(material: str, where: str, n: int) -> float:
    """A fraction in [0, 1) that depends only on its inputs: the ``n``-th draw (0-based)
    at ``where`` (a step of a script) of a run drawn with ``material``.

    A hash, not a random generator advanced call by call: a draw does not depend on how
    many were made elsewhere before it (another conversation, a judge), so concurrent
    conversations and reruns draw the same.
    """
    digest = hashlib.sha256(f"{material}\x00{where}\x00{n}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def wire_calls(step: ScriptStep, n: int, prefix: str = "call") -> list[tuple[str | None, str, str]]:
    """The step's calls as a model sends them: ``(id, name, arguments text)``.

    Ids default to ``<prefix>_<n>_<i>`` (``call_2_0``); ``id: null`` written in the step
    means no id at all (as some OpenAI-compatible servers answer, leaving the client to
    make one up).
    """
    calls = []
    for i, call in enumerate(step.tool_calls):
        if call.raw_arguments is not None:
            arguments = call.raw_arguments
        else:
            arguments = json.dumps(call.arguments or {}, ensure_ascii=False)
        no_id = call.id is None and "id" in call.model_fields_set
        calls.append((None if no_id else call.id or f"{prefix}_{n}_{i}", call.name, arguments))
    return calls


def _chunks_problem(
    chunks: list[ScriptChunk],
    content: str | None,
    tool_calls: list[ScriptToolCall],
    usage: Usage | None,
    finish_reason: str | None,
) -> str | None:
    """Why ``chunks`` do not add up to the step's reply (None when they do)."""
    acc = ChunkAccumulator()
    for chunk in chunks:
        acc.add(chunk.as_chunk())
    if acc.text != (content or ""):
        return (
            f"the chunks' text is {acc.text!r} but the step's content is {content!r}: the "
            "chunks' content pieces must add up to it"
        )
    made = acc.calls()
    if len(made) != len(tool_calls):
        return (
            f"the chunks make {len(made)} tool call(s) but the step has {len(tool_calls)}: "
            "give each call's pieces one `index` (0, 1, ...)"
        )
    for i, ((call_id, name, arguments), want) in enumerate(zip(made, tool_calls, strict=True)):
        problem = _call_problem(call_id, name, arguments, want)
        if problem:
            return f"tool call {i} ({want.name}): {problem}"
    finish = finish_reason or ("tool_calls" if tool_calls else "stop")
    if acc.finish_reason is None and finish_reason is not None:
        return (
            f"the step's finish_reason {finish_reason!r} never arrives: give it in a chunk, "
            f"like {{finish_reason: {finish_reason}}}"
        )
    if acc.finish_reason is not None and acc.finish_reason != finish:
        return f"the chunks' finish_reason is {acc.finish_reason!r} but the step's is {finish!r}"
    want_usage = usage.as_dict() if usage is not None else None
    if acc.usage != want_usage:
        if want_usage is None:
            return "a chunk gives usage but the step has none: give the step the same `usage:`"
        if acc.usage is None:
            return (
                "the step's usage never arrives: give it in a chunk (real streams send it "
                "alone in the last one: {usage: {prompt_tokens: ..., completion_tokens: ...}})"
            )
        return f"the chunks' last usage {acc.usage} is not the step's {want_usage}"
    return None


def _call_problem(
    call_id: str | None, name: str, arguments: str, want: ScriptToolCall
) -> str | None:
    """Why one call put together from chunks is not the step's call (None when it is)."""
    if name != want.name:
        return f"the chunks name it {name!r}"
    if call_id != want.id:
        if want.id is None:
            return f"the chunks give it id {call_id!r}: give the step's call `id: {call_id}` too"
        return f"the chunks give it id {call_id!r} but the step's id is {want.id!r}"
    if want.raw_arguments is not None:
        if arguments != want.raw_arguments:
            return (
                f"the chunks' arguments text is {arguments!r} but the step's raw_arguments "
                f"is {want.raw_arguments!r}"
            )
        return None
    parsed, raw = parse_arguments(arguments)
    if raw is not None:
        return (
            f"the chunks' arguments text {arguments!r} is not a JSON object; to script "
            "malformed arguments, give the step `raw_arguments` with that text"
        )
    if parsed != (want.arguments or {}):
        return f"the chunks' arguments {parsed} are not the step's {want.arguments or {}}"
    return None


def parse_step(index: int, step: ScriptStep | dict[str, Any]) -> ScriptStep:
    """A step as given, or validated from its dict (errors name the step, without URLs)."""
    if isinstance(step, ScriptStep):
        return step
    try:
        return ScriptStep.model_validate(step)
    except ValidationError as exc:
        problems = describe_errors(exc.errors(include_url=False))
        raise HarnessError(f"script step {index + 1}: {problems}") from None


def _yaml_key(key: str) -> str:
    """``key`` as written in a YAML hint: plain when it can be, else quoted."""
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else repr(key)


def _within_bound(steps: list[ScriptStep]) -> list[ScriptStep]:
    total = sum(step.repeat for step in steps)
    if total > MAX_REPLIES:
        raise ValueError(
            f"the script gives {total} replies (its steps times their repeat); "
            f"{MAX_REPLIES} at most"
        )
    return steps


# A script: its steps, at most MAX_REPLIES replies in all.
Script = Annotated[list[ScriptStep], AfterValidator(_within_bound)]
