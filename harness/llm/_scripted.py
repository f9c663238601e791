"""ScriptedLLM: replies given in advance, consumed in order (a scenario's ``llm.script``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from harness._errors import AbortRun, LLMError
from harness._messages import AssistantMessage, ToolCall, parse_arguments
from harness.hookspecs import hookimpl
from harness.llm._base import LLMRequest, LLMResponse
from harness.llm._chunks import ChunkAccumulator, LLMChunk
from harness.llm._script import ScriptStep, parse_step, uniform

__all__ = ["OUTAGE_MESSAGE", "ScriptedLLM", "step_error"]

OUTAGE_MESSAGE = "Service Unavailable (an outage: every request from here on fails)"


class ScriptedLLM:
    """An LLM source that answers from a list of script steps.

    Scripted call ids are ``call_<llm_call>_<index>`` (the run's 1-based LLM call
    number, the call's 0-based index in the reply) unless a step gives ``id``.

    Streamed (``stream()``), a reply comes as its step's ``chunks``, or cut by words;
    ``stream=True`` makes every run of this source stream (a scenario's ``llm.stream``).

    A ``one_of`` step draws its reply for each call it answers, from ``draws`` (the run's
    seed material, ``harness.llm._script.draw_material``): the same draws every time. A
    drawn error fails that call and leaves the step to answer the next one, as a model
    that fails now and then does.
    """

    def __init__(
        self,
        steps: Iterable[ScriptStep | dict[str, Any]],
        *,
        stream: bool = False,
        draws: str = "",
    ) -> None:
        self.steps = [parse_step(index, s) for index, s in enumerate(steps)]
        self.total = sum(step.repeat for step in self.steps)
        self.streams = stream
        self.draws = draws
        self.reset()

    def reset(self) -> None:
        """Start again from the first step."""
        self._index = 0  # current step
        self._served = 0  # replies given by the current step
        self.consumed = 0  # replies given in all
        self._drawn = 0  # draws made at the current step
        self._outage: ScriptStep | None = None  # an outage step reached: every call fails

    @property
    def remaining(self) -> int:
        """Replies (and injected errors) not given yet."""
        return self.total - self.consumed

    def _next_step(self) -> tuple[int, ScriptStep]:
        if self._outage is not None:
            return self._index, self._outage
        if self._index >= len(self.steps):
            raise LLMError(
                f"script exhausted after {self.consumed} responses", type="script_exhausted"
            )
        index, step = self._index, self.steps[self._index]
        if step.one_of is not None:
            drawn = step.draw(uniform(self.draws, f"script {index + 1}", self._drawn))
            self._drawn += 1
            if drawn.fails:
                return index, drawn  # the call fails; the step answers the next one
            step, repeat = drawn, step.repeat
        else:
            repeat = step.repeat
        self._served += 1
        self.consumed += 1
        if self._served >= repeat:
            self._index += 1
            self._served = self._drawn = 0
        return index, step

    def _reply_step(self, request: LLMRequest) -> ScriptStep:
        """The step answering ``request``; error steps raise LLMError."""
        index, step = self._next_step()
        if step.error is not None:
            if step.error == "outage":
                self._outage = step
            raise step_error(step)
        if step.tool_calls and request.tool_choice == "none":
            raise AbortRun(
                f"script step {index + 1} replies with tool calls to a request made with "
                'tool_choice="none" (the final answer at max_iterations); give that step '
                "content only"
            )
        return step

    async def stream(self, request: LLMRequest, emit: Callable[[LLMChunk], None]) -> LLMResponse:
        """The next scripted reply in pieces: each is handed to ``emit``, and the reply
        is what they add up to (a step's ``chunks`` are checked to add up to the step)."""
        step = self._reply_step(request)
        acc = ChunkAccumulator()
        chunks = step.stream(request.call)
        if step.cut is not None:
            # The pieces sent before the connection dropped arrive; the reply never does.
            for chunk in chunks[: int(len(chunks) * step.cut)]:
                emit(chunk)
            raise step_error(step)
        for chunk in chunks:
            emit(chunk)
            acc.add(chunk)
        message = acc.message(request.call, empty=step.content)
        return LLMResponse(message=message, usage=acc.usage, latency=step.latency)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        """The next scripted reply; error steps raise LLMError."""
        step = self._reply_step(request)
        if step.cut is not None:
            raise step_error(step)
        calls = []
        for i, call in enumerate(step.tool_calls):
            if call.raw_arguments is not None:
                # Exactly as a recorded model's arguments text is read: a JSON object
                # becomes the arguments, anything else stays raw (a validation failure).
                args, raw = parse_arguments(call.raw_arguments)
            else:
                args, raw = call.arguments or {}, None
            calls.append(
                ToolCall(
                    id=call.id or f"call_{request.call}_{i}",
                    name=call.name,
                    arguments=args,
                    raw_arguments=raw,
                )
            )
        finish = step.finish_reason or ("tool_calls" if calls else "stop")
        message = AssistantMessage(content=step.content, tool_calls=calls, finish_reason=finish)
        usage = step.usage.as_dict() if step.usage is not None else None
        return LLMResponse(message=message, usage=usage, latency=step.latency)


def step_error(step: ScriptStep) -> LLMError:
    """The LLMError a failing step (an error, a reply cut off) makes the own loop's call
    raise: what an SDK raises for the same answer on the wire."""
    error = step.error
    if error == "timeout":
        return LLMError("Request timed out.", type="timeout")
    if error == "overloaded":
        return LLMError("Overloaded", status=529, type="http_error")
    if error == "outage":
        return LLMError(OUTAGE_MESSAGE, status=503, type="http_error")
    if error is None:
        return LLMError(
            "the connection closed in the middle of the reply (a stream cut)", type="stream_cut"
        )
    return LLMError(
        error.message, status=error.status, type="http_error", retry_after=error.retry_after
    )


@hookimpl
def harness_register_llms(register: Any) -> None:
    """``provider: scripted``: the scenario's ``llm.script``."""
    register(
        "scripted",
        lambda config: ScriptedLLM(
            config.scripted(), stream=config.stream, draws=config.context.draws
        ),
    )
