"""Model faults placed at a model call (a scenario's ``llm.faults``), and the script steps
they become (docs/scenarios.md#model-faults).

One data form for every model: ``{call: N, kind: KIND}`` fails (or spoils) the request
that would get the model's Nth reply of its conversation. The fault is **inserted**: the
scripted reply N is kept for the request after it, so a client that retries sees the run
go on. For a script (the own loop's, or the one ``harness serve`` answers a target from)
each fault becomes a script step placed before step N (``with_faults``), so that both
executors of a script step agree by construction; a recorded model's requests are failed
in front of its cassette (``FaultyLLM``), which can only hold the faults that send no
reply (a reply fault is made from the scripted reply it spoils).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from harness.llm._base import LLMRequest, LLMResponse
from harness.llm._chunks import LLMChunk
from harness.llm._script import ScriptError, ScriptStep, ScriptToolCall, wire_calls

__all__ = [
    "DEFAULT_RETRY_AFTER",
    "ERROR_FAULTS",
    "MODEL_FAULTS",
    "REPLY_FAULTS",
    "UNKNOWN_TOOL",
    "FaultyLLM",
    "ModelFault",
    "check_recorded",
    "fault_step",
    "with_faults",
]

ModelFaultKind = Literal[
    "http_429",
    "http_500",
    "http_503",
    "overloaded",
    "timeout",
    "stream_cut",
    "truncated",
    "malformed_arguments",
    "schema_arguments",
    "unknown_tool",
    "empty_reply",
    "outage",
]
MODEL_FAULTS: tuple[str, ...] = ModelFaultKind.__args__  # type: ignore[attr-defined]
# The faults that send no reply (the request fails): they take no place in the script.
ERROR_FAULTS = frozenset(
    {"http_429", "http_500", "http_503", "overloaded", "timeout", "stream_cut", "outage"}
)
# The faults that send a spoiled reply, made from the scripted reply they come before.
REPLY_FAULTS = frozenset(MODEL_FAULTS) - ERROR_FAULTS
# Reply faults that spoil the reply's tool calls: a reply without calls has none to spoil.
CALL_FAULTS = frozenset({"malformed_arguments", "schema_arguments"})
# The tool an unknown_tool reply calls: no agent has one by that name.
UNKNOWN_TOOL = "nonexistent_tool"
# What an HTTP fault tells the client to wait: a millisecond, so an SDK's retry does not
# sleep its own backoff (half a second and more, real time).
DEFAULT_RETRY_AFTER = 0.001

_HTTP = {
    "http_429": (429, "Rate limit reached for requests (injected by harness)"),
    "http_500": (500, "The server had an error while processing your request (injected)"),
    "http_503": (503, "Service Unavailable (injected by harness)"),
}


class ModelFault(BaseModel):
    """One ``llm.faults`` entry: the fault the request for the model's reply ``call`` gets."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)
    call: int = Field(
        ge=1, description="the model's reply it comes before (1-based, in its conversation)"
    )
    kind: ModelFaultKind = Field(description="the fault (docs/scenarios.md#model-faults)")
    conversation: str | int | None = Field(
        default=None,
        description="the llm.conversations entry whose reply it is (its name, or its number "
        "from 1); default: the main script's",
    )
    seconds: float | None = Field(
        default=None,
        gt=0,
        le=3600,
        description="timeout: how long a served reply is held (default: the server's "
        "max delay, at most the target's timeout)",
    )
    retry_after: float | None = Field(
        default=None,
        gt=0,
        le=3600,
        description=f"http_429, http_500, http_503: the retry-after the answer carries, in "
        f"seconds (default {DEFAULT_RETRY_AFTER:g})",
    )

    @model_validator(mode="after")
    def _options_fit(self) -> ModelFault:
        if self.seconds is not None and self.kind != "timeout":
            raise ValueError(f"seconds is for a timeout fault, not {self.kind}")
        if self.retry_after is not None and self.kind not in _HTTP:
            raise ValueError(f"retry_after is for an HTTP fault (http_429, ...), not {self.kind}")
        return self


def fault_step(fault: ModelFault, reply: ScriptStep | None) -> ScriptStep:
    """The script step ``fault`` becomes, placed before ``reply`` (the scripted reply it
    comes before; None past the script's end)."""
    kind = fault.kind
    if kind in _HTTP:
        status, message = _HTTP[kind]
        wait = fault.retry_after or DEFAULT_RETRY_AFTER
        return ScriptStep(error=ScriptError(status=status, message=message, retry_after=wait))
    if kind in ("overloaded", "outage"):
        return ScriptStep(error=kind)
    if kind == "timeout":
        return ScriptStep(error="timeout", latency=fault.seconds or 0.0)
    if kind == "empty_reply":
        return ScriptStep(content="")
    if kind == "unknown_tool":
        arguments = reply.tool_calls[0].arguments if reply and reply.tool_calls else None
        call = ScriptToolCall(name=UNKNOWN_TOOL, arguments=arguments or {})
        return ScriptStep(tool_calls=[call], unknown_tools=True)
    if reply is None:
        raise ValueError(f"{kind} spoils the scripted reply it comes before, and there is none")
    if kind == "stream_cut":
        return reply.model_copy(update={"cut": 0.5, "repeat": 1, "latency": 0.0})
    calls = _calls(reply)
    if kind in CALL_FAULTS and not calls:
        raise ValueError(f"{kind} spoils the reply's tool calls, and the reply makes none")
    if kind == "truncated":
        content = _half(reply.content) if reply.content else ("" if not calls else None)
        cut = [
            c.model_copy(update={"arguments": None, "raw_arguments": _half(a)}) for c, a in calls
        ]
        return ScriptStep(content=content, tool_calls=cut, finish_reason="length")
    if kind == "malformed_arguments":
        spoiled = [
            c.model_copy(update={"arguments": None, "raw_arguments": _half(a)}) for c, a in calls
        ]
    else:
        spoiled = [
            c.model_copy(update={"arguments": _wrong_types(c.arguments), "raw_arguments": None})
            for c, _ in calls
        ]
    return ScriptStep(content=reply.content, tool_calls=spoiled, unknown_tools=reply.unknown_tools)


def _calls(reply: ScriptStep) -> list[tuple[ScriptToolCall, str]]:
    """The reply's calls with their arguments text as the model sends it."""
    texts = [arguments for _, _, arguments in wire_calls(reply, 0)]
    return list(zip(reply.tool_calls, texts, strict=True))


def _half(text: str) -> str:
    """The first half of ``text`` (a JSON object's cut this way is never JSON)."""
    return text[: max(1, len(text) // 2)]


def _wrong_types(arguments: dict[str, Any] | None) -> dict[str, Any]:
    """Each argument given a value of another JSON type (a text a number, a number a
    text, ...); no arguments, one argument no schema names: what breaks a tool's schema
    without knowing it."""
    if not arguments:
        return {"unexpected_argument": True}
    return {name: _other_type(value) for name, value in arguments.items()}


def _other_type(value: Any) -> Any:
    if isinstance(value, bool):
        return "not a boolean"
    if isinstance(value, int | float):
        return "not a number"
    if isinstance(value, str):
        return 12345
    return 0


def with_faults(
    steps: Sequence[ScriptStep], faults: Sequence[ModelFault], where: str = "llm.faults"
) -> list[ScriptStep]:
    """``steps`` with each fault's step placed before the reply it names, after the
    script's own error steps there; faults at one call in their order. ValueError (naming
    the entry) for a fault the script cannot hold."""
    if not faults:
        return list(steps)
    replies: list[list[ScriptStep]] = [[]]  # each reply position's steps, the reply last
    for step in steps:
        for _ in range(step.repeat):
            single = step.model_copy(update={"repeat": 1}) if step.repeat > 1 else step
            replies[-1].append(single)
            if not single.fails:
                replies.append([])
    known = len(replies) - 1
    for number, fault in enumerate(faults, 1):
        if fault.call > known + 1:
            raise ValueError(
                f"{where} entry {number}: call {fault.call}, but the script has {known} "
                f"replies (a fault may come at most before reply {known + 1}, past the end)"
            )
        position = replies[fault.call - 1]
        reply = position[-1] if fault.call <= known else None
        try:
            made = fault_step(fault, reply)
        except ValueError as exc:
            raise ValueError(f"{where} entry {number} (call {fault.call}): {exc}") from None
        at = len(position) - 1 if reply is not None else len(position)
        position.insert(at, made)
    return [step for position in replies for step in position]


class FaultyLLM:
    """A recorded (or any) LLM source with ``faults`` failing the requests they name, in
    front of it: the source is not asked, so the request after gets its reply.

    Only faults that send no reply fit here (``ERROR_FAULTS``); a stream cut fails the
    request before any piece arrives.
    """

    def __init__(self, llm: Any, faults: Sequence[ModelFault]) -> None:
        from harness.llm._scripted import step_error

        self.llm = llm
        self._error = step_error
        self._pending: dict[int, list[ScriptStep]] = {}
        for fault in faults:
            self._pending.setdefault(fault.call, []).append(fault_step(fault, _PLACEHOLDER))
        self._replies = 0
        self._outage: ScriptStep | None = None

    def __getattr__(self, name: str) -> Any:
        # Everything else (remaining, refused, cassette_path, ...) is the source's.
        return getattr(self.llm, name)

    def _fail(self) -> None:
        if self._outage is not None:
            raise self._error(self._outage)
        due = self._pending.get(self._replies + 1)
        if due:
            step = due.pop(0)
            if step.error == "outage":
                self._outage = step
            raise self._error(step)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The source's reply, unless a fault fails this request."""
        self._fail()
        response = await self.llm.complete(request)
        self._replies += 1
        return response

    async def stream(self, request: LLMRequest, emit: Callable[[LLMChunk], None]) -> LLMResponse:
        """The source's streamed reply, unless a fault fails this request."""
        self._fail()
        stream = getattr(self.llm, "stream", None)
        if stream is not None:
            response = await stream(request, emit)
        else:
            response = await self.llm.complete(request)
        self._replies += 1
        return response

    async def aclose(self) -> None:
        """Close the source (a recording is saved)."""
        close = getattr(self.llm, "aclose", None)
        if close is not None:
            await close()


# A stand-in reply for the faults FaultyLLM holds (they send none: only a stream cut
# copies it, and its reply never arrives).
_PLACEHOLDER = ScriptStep(content="")


def check_recorded(faults: Sequence[ModelFault], where: str = "llm.faults") -> str | None:
    """Why ``faults`` cannot apply to a recorded model (None when they can)."""
    for number, fault in enumerate(faults, 1):
        if fault.kind in REPLY_FAULTS:
            return (
                f"{where} entry {number}: {fault.kind} spoils a scripted reply, and a "
                "recorded model has none; use a fault that sends no reply "
                f"({', '.join(sorted(ERROR_FAULTS))})"
            )
        if fault.conversation is not None:
            return f"{where} entry {number}: a recorded model has no llm.conversations"
    return None
