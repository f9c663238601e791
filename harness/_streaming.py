"""Streaming through the loop: ``StreamEvent``s for ``Agent.astream`` and streamed replies.

A run streams when ``Agent.astream`` drives it or when its LLM source says it always
does (``streams = True``: a scenario's ``llm.stream: true``). Then every reply comes in
pieces: the source's ``stream(request, emit)`` hands each ``LLMChunk`` to ``emit`` as it
arrives, and a source without one is asked with ``complete()`` and its whole reply cut
into pieces, so that every source streams. Each piece goes to the ``harness_llm_chunk``
hook and, under ``astream``, out as an ``llm_delta`` event.

The loop and the tool plan hand their events to ``run.sink`` (an ``EventSink``) only
when it is set: a run that is not streamed pays one test per event.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from harness.llm._chunks import LLMChunk, message_chunks

if TYPE_CHECKING:
    from harness._actions import RunResult
    from harness._messages import ToolCall
    from harness._run import Run
    from harness.llm._base import LLM, LLMRequest, LLMResponse

__all__ = ["EventSink", "StreamEvent", "stream_events", "stream_reply"]

StreamEventKind = Literal["iteration_start", "llm_delta", "tool_calls", "tool_result", "final"]


@dataclass(frozen=True)
class StreamEvent:
    """Something that happened in a streamed run, in the order it happened.

    - ``iteration_start``: an iteration began (``iteration``, ``max_iterations``).
    - ``llm_delta``: text of LLM call ``llm_call`` as the model produced it (``text``;
      ``chunk`` is the whole piece, tool-call pieces included).
    - ``tool_calls``: a plan of ``tool_calls`` is about to run (after validation).
    - ``tool_result``: one call finished (``tool_call``, ``content`` as the model will
      see it, ``status``: ok, error, invalid or unknown_tool); the calls of a parallel
      plan report in the order they finish.
    - ``final``: the run ended; ``result`` is its ``RunResult``. Always the last event.
    """

    kind: StreamEventKind
    iteration: int = 0
    max_iterations: int | None = None
    llm_call: int | None = None
    text: str | None = None
    chunk: LLMChunk | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_call: ToolCall | None = None
    content: str | None = None
    status: str | None = None
    result: RunResult | None = None

    @property
    def is_error(self) -> bool:
        """Whether a ``tool_result`` is an error (any status but ok)."""
        return self.status is not None and self.status != "ok"


class EventSink:
    """Where a streamed run's events go (``Agent.astream`` reads them from ``put``)."""

    def __init__(self, put: Callable[[StreamEvent], None]) -> None:
        self.put = put

    def iteration_start(self, run: Run) -> None:
        """An iteration began."""
        self.put(
            StreamEvent(
                "iteration_start", iteration=run.iteration, max_iterations=run.config.max_iterations
            )
        )

    def tool_calls(self, run: Run, calls: list[ToolCall]) -> None:
        """A plan is about to run."""
        self.put(StreamEvent("tool_calls", iteration=run.iteration, tool_calls=list(calls)))

    def tool_result(self, run: Run, call: ToolCall, content: str, status: str) -> None:
        """One call of a plan finished."""
        self.put(
            StreamEvent(
                "tool_result",
                iteration=run.iteration,
                tool_call=call,
                content=content,
                status=status,
            )
        )

    def delta(self, run: Run, chunk: LLMChunk) -> None:
        """A piece of a reply arrived: text goes out as an ``llm_delta``."""
        if chunk.content:
            self.put(
                StreamEvent(
                    "llm_delta",
                    iteration=run.iteration,
                    llm_call=run.llm_calls,
                    text=chunk.content,
                    chunk=chunk,
                )
            )


async def stream_reply(run: Run, request: LLMRequest, llm: LLM, chunks: Any) -> LLMResponse:
    """Ask ``llm`` (the run's source) for a streamed reply, handing each piece on as it
    arrives: to ``chunks`` (the run's ``harness_llm_chunk`` hook caller) and its sink."""
    hook = chunks if chunks.get_hookimpls() else None
    sink = run.sink

    def emit(chunk: LLMChunk) -> None:
        if hook is not None:
            hook(run=run, chunk=chunk)
        if sink is not None:
            sink.delta(run, chunk)

    stream = getattr(llm, "stream", None)
    if stream is not None:
        return await stream(request, emit)
    # A source that cannot stream still streams: its whole reply, cut into pieces.
    response = await llm.complete(request)
    for chunk in message_chunks(response.message, response.usage):
        emit(chunk)
    return response


async def stream_events(
    execute: Callable[[EventSink], Awaitable[RunResult]],
) -> AsyncIterator[StreamEvent]:
    """Run ``execute(sink)`` in a task and yield its events as they come, then ``final``.

    Leaving the iteration early (``break``, an exception, ``aclose()``) cancels the run.
    """
    queue: asyncio.Queue[Any] = asyncio.Queue()
    done = object()
    task = asyncio.ensure_future(execute(EventSink(queue.put_nowait)))
    task.add_done_callback(lambda _: queue.put_nowait(done))
    try:
        while True:
            event = await queue.get()
            if event is done:
                break
            yield event
        result = await task  # a harness bug in the run is raised here, as arun raises it
        yield StreamEvent("final", iteration=result.iterations, result=result)
    finally:
        if not task.done():
            task.cancel()
            # wait() neither raises the run's CancelledError nor swallows our own.
            await asyncio.wait({task})
        if not task.cancelled():
            task.exception()  # retrieved: raised above, or moot after an early exit
