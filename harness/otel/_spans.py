"""A run's spans, planned: names, parentage, simulated times and GenAI attributes.

One ``invoke_agent`` span per run, a ``chat`` span per model call and an
``execute_tool`` span per tool call under it; a sub-agent's run is an ``invoke_agent``
span under the call that made it, a remote agent's an ``invoke_agent`` client span under
its call. Each expectation is a ``gen_ai.evaluation.result`` event on the run's span.
Attributes follow the OpenTelemetry GenAI semantic conventions (docs/otel.md lists them);
message contents only when asked for (``content``).

A span starts at the run's simulated time plus one nanosecond per span planned before it
in the trace, so that spans at the same simulated instant keep their order in a viewer;
a parent ends no earlier than its last child. Nothing here reads a wall clock.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from harness._actions import RunFields, SubRun, ToolCallRecord
from harness._messages import AssistantMessage, Message
from harness.events import ActionExecutedEvent, LLMFailedEvent, LLMRequestEvent, LLMResponseEvent
from harness.otel._content import InputMessages, output_messages, tool_arguments
from harness.otel._traced import Clock, RunFacts, TracedRun
from harness.wires._neutral import MODEL_ID

__all__ = ["PlannedEvent", "PlannedSpan", "PlannedTrace", "plan_trace"]

Kind = Literal["internal", "client"]


@dataclass
class PlannedEvent:
    """An event on a span: its name, time and attributes."""

    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclass
class PlannedSpan:
    """One span: ids, times in unix nanoseconds, attributes, events, and its error."""

    name: str
    span_id: int
    parent_id: int | None
    kind: Kind
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[PlannedEvent] = field(default_factory=list)
    error: str | None = None  # the status description of a span that ended in error


@dataclass
class PlannedTrace:
    """One run's trace."""

    trace_id: int
    spans: list[PlannedSpan]


def _id(text: str, bits: int) -> int:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[: bits // 8], "big") or 1  # 0 is not a valid id


def _tokens(usage: dict[str, int] | None) -> dict[str, int]:
    """``gen_ai.usage.*`` of a usage under Chat Completions' names."""
    if not usage:
        return {}
    tokens = {}
    if "prompt_tokens" in usage:
        tokens["gen_ai.usage.input_tokens"] = int(usage["prompt_tokens"])
    if "completion_tokens" in usage:
        tokens["gen_ai.usage.output_tokens"] = int(usage["completion_tokens"])
    return tokens


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


class _Planner:
    """Plans the spans of one traced run, in order."""

    def __init__(self, traced: TracedRun, clock: Clock, content: bool) -> None:
        self.traced = traced
        self.facts: RunFacts = traced.facts
        self.epoch = clock.epoch_ns
        self.content = content
        self.trace_id = _id(f"{clock.seed}\0{traced.id}", 128)
        self.trace_hex = f"{self.trace_id:032x}"
        self.spans: list[PlannedSpan] = []
        self._definitions: str | None = None

    def at(self, sim: float | None) -> int:
        """The time of a new span's start: the simulated time, plus its position."""
        return self.epoch + round((sim or 0.0) * 1e9) + len(self.spans)

    def add(
        self, name: str, parent: PlannedSpan | None, kind: Kind, sim: tuple[float | None, ...]
    ) -> PlannedSpan:
        start = self.at(sim[0])
        end = max(start, self.epoch + round((sim[1] or 0.0) * 1e9) + len(self.spans))
        span_id = _id(f"{self.trace_hex}:{len(self.spans)}", 64)
        parent_id = parent.span_id if parent is not None else None
        span = PlannedSpan(name, span_id, parent_id, kind, start, end, {})
        self.spans.append(span)
        return span

    # -- the run ---------------------------------------------------------------------------

    def plan(self) -> PlannedTrace:
        traced = self.traced
        root = self.agent(traced.name, traced.run, traced.transcript, None, "internal")
        attributes = root.attributes
        attributes["harness.scenario.id"] = traced.id
        attributes["harness.scenario.file"] = traced.file
        attributes["harness.scenario.status"] = traced.status
        if traced.repeat is not None:
            attributes["harness.scenario.run"] = traced.repeat
        if traced.matrix is not None:
            attributes["harness.scenario.matrix"] = traced.matrix
        for evaluation in traced.evaluations:
            explained = (
                f"expected {_compact(evaluation.expected)}, got {_compact(evaluation.actual)}"
            )
            root.events.append(
                PlannedEvent(
                    "gen_ai.evaluation.result",
                    root.end_ns,
                    {
                        "gen_ai.evaluation.name": evaluation.name,
                        "gen_ai.evaluation.score.label": "pass" if evaluation.ok else "fail",
                        "gen_ai.evaluation.score.value": 1.0 if evaluation.ok else 0.0,
                        "gen_ai.evaluation.explanation": explained,
                    },
                )
            )
        _close(self.spans)
        return PlannedTrace(self.trace_id, self.spans)

    def agent(
        self,
        name: str,
        run: RunFields,
        transcript: list[Message],
        parent: PlannedSpan | None,
        kind: Kind,
        start: float = 0.0,
    ) -> PlannedSpan:
        """The ``invoke_agent`` span of a run (or sub-run) and everything under it."""
        span = self.add(f"invoke_agent {name}", parent, kind, (start, run.sim_time))
        attributes = span.attributes
        attributes["gen_ai.operation.name"] = "invoke_agent"
        attributes["gen_ai.agent.name"] = name
        attributes["gen_ai.provider.name"] = self.facts.provider
        if self.facts.model:
            attributes["gen_ai.request.model"] = self.facts.model
        attributes.update(_tokens(run.usage))
        attributes["harness.termination"] = run.termination.value
        attributes["harness.iterations"] = run.iterations
        attributes["harness.llm_calls"] = run.llm_calls
        error = run.final.error
        if error is not None:
            attributes["error.type"] = error.type
            span.error = error.message or error.type
        if self.content and run.final.content is not None:
            reply = AssistantMessage(content=run.final.content, finish_reason="stop")
            attributes["gen_ai.output.messages"] = output_messages(reply)
        self.steps(run, transcript, span)
        return span

    def steps(self, run: RunFields, transcript: list[Message], parent: PlannedSpan) -> None:
        """The run's model calls and tool calls, in the order they happened."""
        records = {record.id: record for record in run.tool_calls if record.status != "not_run"}
        replies = _Replies(run, transcript)
        chats: dict[int, PlannedSpan] = {}
        for event in run.events:
            if isinstance(event, LLMRequestEvent):
                chats[event.call] = self.chat(event, parent, replies)
            elif isinstance(event, LLMResponseEvent | LLMFailedEvent):
                chat = chats.get(event.call)
                if chat is not None:
                    self.answered(chat, event, replies)
            elif isinstance(event, ActionExecutedEvent):
                record = records.pop(event.call_id, None)
                if record is not None:
                    self.tool(record, parent)
        for call, chat in chats.items():
            if (
                "gen_ai.response.finish_reasons" not in chat.attributes
                and "error.type" not in chat.attributes
            ):
                self.unanswered(chat, run, call)
        for record in records.values():  # calls no event announced (an observed target's)
            self.tool(record, parent)

    def chat(self, event: LLMRequestEvent, parent: PlannedSpan, replies: _Replies) -> PlannedSpan:
        # The model the request named (a target's), else the scenario's, else a script's
        # (what harness serve answers as its model).
        model = event.model or self.facts.model
        if model is None and self.facts.provider == "harness":
            model = MODEL_ID
        span = self.add(
            f"chat {model}" if model else "chat", parent, "client", (event.sim, event.sim)
        )
        attributes = span.attributes
        attributes["gen_ai.operation.name"] = "chat"
        attributes["gen_ai.provider.name"] = self.facts.provider
        if model:
            attributes["gen_ai.request.model"] = model
        attributes["harness.llm.call"] = event.call
        if self.content:
            sent = replies.before(event.call)
            attributes["gen_ai.input.messages"] = replies.inputs.first(len(sent))
            if self.facts.tools:
                attributes["gen_ai.tool.definitions"] = self.definitions()
        return span

    def definitions(self) -> str:
        """``gen_ai.tool.definitions``: the tools offered (written once per trace)."""
        if self._definitions is None:
            tools = [{"type": "function", **t.get("function", t)} for t in self.facts.tools]
            self._definitions = _compact(tools)
        return self._definitions

    def answered(
        self, span: PlannedSpan, event: LLMResponseEvent | LLMFailedEvent, replies: _Replies
    ) -> None:
        span.end_ns = max(
            span.end_ns, self.epoch + round((event.sim or 0.0) * 1e9) + len(self.spans)
        )
        attributes = span.attributes
        if isinstance(event, LLMFailedEvent):
            attributes["error.type"] = str(event.status or event.type)
            if event.status is not None:
                attributes["http.response.status_code"] = event.status
            span.error = event.message
            return
        attributes["gen_ai.response.finish_reasons"] = [event.finish_reason or "stop"]
        attributes.update(_tokens(event.usage))
        reply = replies.reply(event.call) if self.content else None
        if reply is not None:
            attributes["gen_ai.output.messages"] = output_messages(reply)

    def unanswered(self, span: PlannedSpan, run: RunFields, call: int) -> None:
        """A request whose answer never came: the run's error when it was the last."""
        error = run.final.error
        if call == run.llm_calls and error is not None:
            span.attributes["error.type"] = error.type
            if error.status is not None:
                span.attributes["http.response.status_code"] = error.status
            span.error = error.message or error.type
            span.end_ns = max(span.end_ns, self.epoch + round(run.sim_time * 1e9) + len(self.spans))

    def tool(self, record: ToolCallRecord, parent: PlannedSpan) -> None:
        span = self.add(
            f"execute_tool {record.name}", parent, "internal", (record.sim_start, record.sim_end)
        )
        attributes = span.attributes
        attributes["gen_ai.operation.name"] = "execute_tool"
        attributes["gen_ai.tool.name"] = record.name
        attributes["gen_ai.tool.call.id"] = record.id
        attributes["gen_ai.tool.type"] = "function"
        attributes["harness.tool.status"] = record.status
        attributes["harness.tool.group"] = record.group
        if record.status != "ok":
            attributes["error.type"] = record.status
            span.error = str(record.result) if record.result is not None else record.status
        if self.content:
            attributes["gen_ai.tool.call.arguments"] = tool_arguments(record)
            if record.result is not None:
                result = record.result
                attributes["gen_ai.tool.call.result"] = (
                    result if isinstance(result, str) else _compact(result)
                )
        if record.sub_run is not None:
            self.sub_agent(record.sub_run, span, record.sim_start)
        elif record.name in self.facts.remote:
            self.remote(record, span)

    def sub_agent(self, sub_run: SubRun, parent: PlannedSpan, start: float) -> None:
        # A sub-run's simulated clock starts at 0: placed at its call's start.
        shifted = _Shifted(self, start)
        with shifted:
            self.agent(sub_run.agent, sub_run, sub_run.transcript, parent, "internal")

    def remote(self, record: ToolCallRecord, parent: PlannedSpan) -> None:
        """A remote agent's invocation: a client span (its own spans are its server's)."""
        span = self.add(
            f"invoke_agent {record.name}", parent, "client", (record.sim_start, record.sim_end)
        )
        span.attributes["gen_ai.operation.name"] = "invoke_agent"
        span.attributes["gen_ai.agent.name"] = record.name
        span.attributes["harness.remote.address"] = self.facts.remote[record.name]
        if record.status != "ok":
            span.attributes["error.type"] = record.status
            span.error = str(record.result) if record.result is not None else record.status


class _Shifted:
    """Moves the planner's epoch by a sub-run's start for the spans planned inside."""

    def __init__(self, planner: _Planner, start: float) -> None:
        self.planner = planner
        self.shift = round(start * 1e9)

    def __enter__(self) -> None:
        self.planner.epoch += self.shift

    def __exit__(self, *exc: object) -> None:
        self.planner.epoch -= self.shift


class _Replies:
    """The run's conversation as each model call saw it: the messages before its reply.

    The transcript holds the conversation as the run ended: each answered call added one
    assistant message, after those a history brought in.
    """

    def __init__(self, run: RunFields, transcript: list[Message]) -> None:
        self.transcript = transcript
        self.inputs = InputMessages(transcript)
        answered = sum(1 for e in run.events if isinstance(e, LLMResponseEvent))
        self.positions = [i for i, m in enumerate(transcript) if isinstance(m, AssistantMessage)]
        # Assistant messages a history brought in come before the run's own replies.
        self.offset = len(self.positions) - answered
        self.numbers = [e.call for e in run.events if isinstance(e, LLMResponseEvent)]
        self.index = {number: i for i, number in enumerate(self.numbers)}

    def _position(self, call: int) -> int | None:
        if self.offset < 0 or call not in self.index:
            return None
        return self.positions[self.offset + self.index[call]]

    def before(self, call: int) -> list[Message]:
        position = self._position(call)
        if position is None:
            # Unanswered (the run's last request): everything the run had said by then.
            earlier = sum(1 for number in self.numbers if number < call)
            if self.offset < 0:
                return []
            if self.offset + earlier < len(self.positions):
                return self.transcript[: self.positions[self.offset + earlier]]
            return list(self.transcript)
        return self.transcript[:position]

    def reply(self, call: int) -> AssistantMessage | None:
        position = self._position(call)
        if position is None:
            return None
        message = self.transcript[position]
        return message if isinstance(message, AssistantMessage) else None


def _close(spans: list[PlannedSpan]) -> None:
    """Every parent ends no earlier than its children (children are planned after it)."""
    by_id = {span.span_id: span for span in spans}
    for span in reversed(spans):
        parent = by_id.get(span.parent_id) if span.parent_id is not None else None
        if parent is not None and parent.end_ns < span.end_ns:
            parent.end_ns = span.end_ns
    root = spans[0]
    for event in root.events:
        event.time_ns = root.end_ns


def plan_trace(traced: TracedRun, clock: Clock, *, content: bool = False) -> PlannedTrace:
    """The spans of one run (secrets are masked as they are written or sent)."""
    return _Planner(traced, clock, content).plan()
