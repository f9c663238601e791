"""The observed run: what the target asked the model and what it got, as a ``Run``.

Each request and answer at the HTTP boundary updates a ``harness._run.Run`` the way the
own loop would: one iteration and one LLM call per request, tool-call records from each
reply (``not_run`` until a later request carries their results), usage, events and the
same hooks (``harness_llm_request``, ``harness_llm_response``, ``harness_action_executed``
...). Tool plans go through the stagnation detector and signature hook of
docs/loop.md#stagnation.

The server calls ``request`` and ``response`` from its own thread while the target runs
in another: a lock keeps each update whole. Per-request work is the new part of the
conversation (the tool results after the previous request), not the whole history,
except for a conversation the target rewrote.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

from pydantic_core import to_jsonable_python

from harness._actions import (
    ConversationRun,
    FinalResponse,
    ObservedStagnation,
    RunError,
    RunResult,
    Termination,
    ToolAction,
    ToolCallRecord,
    WallClockSpan,
)
from harness._config import AgentConfig
from harness._messages import Conversation, ToolCall, clean_reply, clean_text, client_ids_named
from harness._run import Run
from harness._secrets import Scrubber
from harness.events import (
    ActionExecutedEvent,
    AgentStartEvent,
    IterationStartEvent,
    LLMFailedEvent,
    LLMRequestEvent,
    LLMResponseEvent,
    MCPCallEvent,
    MCPListChangedEvent,
    StagnationObservedEvent,
)
from harness.llm._base import LLMRequest, LLMResponse
from harness.llm._config import ConversationRule
from harness.serve._conversations import Conversations, Place
from harness.serve._threads import Threads
from harness.wires import Wire
from harness.wires._neutral import ToolResult, ToolSpec, WireError, WireReply, answer_body

__all__ = ["SERVED", "Observation", "ObservedTool", "Refusal"]

# The port changes from run to run: messages name the served URL this way instead.
SERVED = "http://127.0.0.1:<port>/v1"


class _Unreachable:
    """The Run's LLM slot: an external target talks to the model itself."""

    async def complete(self, request: Any) -> Any:
        """Never called: harness does not ask the model on an external target's behalf."""
        raise RuntimeError("an external target's run makes no LLM calls of its own")


class ObservedTool:
    """A tool the target declared in a request (what ``LLMRequest.tools`` holds)."""

    def __init__(self, spec: ToolSpec) -> None:
        self.schema = spec.raw
        self.name = spec.name or ""
        self.description = spec.description
        self.parameters = spec.parameters or {}

    def openai_schema(self) -> dict[str, Any]:
        """The Chat Completions form of the tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }


def _failed_at_end(exc: Exception) -> FinalResponse:
    """An observer's bug at the end makes the run ``error``."""
    return FinalResponse(
        error=RunError(
            type="error", exception=type(exc).__name__, message=clean_text(str(exc)), status=None
        )
    )


class _Thread:
    """One conversation of the target with the model, as the observation follows it."""

    def __init__(self, number: int, rule: int | None) -> None:
        self.number = number
        self.rule = rule  # its llm.conversations entry; None: the main script
        # The calls of its last reply, waiting for their results in its next request.
        self.pending: list[ToolCallRecord] = []
        self.calls: dict[str, Any] = {}
        self.items_seen = 0
        self.numbers: list[int] = []  # its call numbers
        self.records: list[ToolCallRecord] = []
        self.usage: dict[str, int] = {}
        self.last: tuple[Wire, dict[str, Any], list[Any]] | None = None
        self.last_reply: Any = None
        self.error: RunError | None = None


class Refusal(Exception):
    """harness answers the request itself: (status, message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Observation:
    """The run rebuilt from the traffic of one target run."""

    _names: dict[str, str]  # call id -> tool name, in run.conversation
    _made: set[str]  # the ids of the calls the replies made

    def __init__(
        self,
        plugins: Any,
        config: AgentConfig,
        *,
        on_stagnation: str = "observe",
        conversations: list[ConversationRule] | None = None,
    ):
        from harness._stagnation import StagnationDetector

        self.run = Run(
            conversation=Conversation(),
            tools={},
            config=config,
            llm=_Unreachable(),
            plugins=plugins,
        )
        self.on_stagnation = on_stagnation
        self.detector = StagnationDetector(config.stagnation_window)
        self.lock = threading.Lock()
        self.started = time.perf_counter()
        # The target's conversations (docs/external.md#several-conversations), each
        # followed on its own: its calls wait for their results in its own next request.
        self._rules = list(conversations or [])
        self._places = Conversations(self._rules)
        self._threads: dict[int, _Thread] = {}
        self._of_call: dict[int, tuple[_Thread, Place]] = {}
        self._last: tuple[Wire, dict[str, Any], list[Any]] | None = None
        # A Responses chain (previous_response_id) sends only its new items: response id ->
        # the conversation it ended, and call -> the items of a request awaiting its answer.
        self._chains: dict[str, list[Any]] = {}
        self._asked: dict[int, list[Any]] = {}
        # Anthropic threads held; call -> (the request as sent, the whole one it stands for).
        self._holding = Threads()
        self._held: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._last_reply: Any = None
        self._following: int | None = None  # the thread run.conversation follows
        self._tools_raw: Any = None
        # What run.conversation holds: (items converted, the last of them), call id ->
        # tool name, and the instructions it starts with; the ids of the calls replies made.
        self._followed: tuple[int, Any] = (0, None)
        self._names, self._made = {}, set()
        self._head: list[Any] = []
        self._tools: list[ObservedTool] = []
        # final.error of the last answer when it was an error; the first stagnating plan.
        self.last_error: RunError | None = None
        self.stagnation: ObservedStagnation | None = None
        self._stop = False
        self.served: str | None = None  # the model's URL (its port changes), once known
        # Calls answered on harness's MCP server (docs/mcp.md): record ids whose true status
        # is known, their plan's simulated start, a stub failed as a scenario bug, and the
        # calls whose events wait for the next request.
        self._mcp_answered: set[str] = set()
        self._plan_start = 0.0
        self._mcp_calls = 0
        self.mcp_abort: str | None = None
        self._mcp_done: list[tuple[tuple[int, int], Any, ToolCallRecord, float]] = []
        # Each call's wall-clock start and end (seconds since ``started``), for the report's
        # timeline of a run that has no simulated time (docs/results.md#wall-clock).
        self._wall: dict[int, list[float]] = {}

    def shown(self, text: str) -> str:
        """``text`` as the run keeps it: the served URL without its port, one clean text."""
        if self.served:
            # The root too (Anthropic's SDK names it): the same text once replaced.
            text = text.replace(self.served.removesuffix("/v1"), SERVED.removesuffix("/v1"))
        return clean_text(Scrubber().text(text))

    # -- the boundary -----------------------------------------------------------------------

    def begin(self) -> None:
        """The target is about to be called."""
        self.run.emit(AgentStartEvent(iteration=0))
        self.run.notify_agent_start()

    def request(self, wire: Wire, body: dict[str, Any], model: str | None = None) -> int:
        """A request arrived (naming ``model``); its call number. Raises Refusal when
        harness stopped the run."""
        with self.lock:
            run = self.run
            self._emit_mcp_calls()
            sent = body
            with contextlib.suppress(WireError):  # the server answers a bad thread itself
                body = self._holding.resume(wire, body)
            items = [*self._chains.get(str(wire.previous(body)), []), *wire.items(body)]
            place = self._places.place(wire, body, 0)
            self._places.keep(place)
            thread = self._threads.setdefault(place.number, _Thread(place.number, place.rule))
            self._read_results(thread, wire, items)
            ledger = run.ledger
            iteration = ledger.begin_iteration()
            call = ledger.begin_request()
            thread.numbers.append(call)
            thread.last = (wire, body, items)
            self._of_call[call] = (thread, place)
            self._wall[call] = [self._now()] * 2
            run.emit(IterationStartEvent(iteration=iteration))
            run.notify_iteration_start(iteration)
            run.emit(LLMRequestEvent.of(iteration, call, run.sim_time, model=model))
            self._last = (wire, body, items)
            self._asked[call] = items
            if wire.held(sent) is not None:
                self._held[call] = (sent, body)
            if run.observed.llm_request:  # the conversation is followed for it only
                self._follow(thread, wire, body, items)
                kept = (wire.items_field, "tools")
                options = {k: v for k, v in body.items() if k not in kept}
                tools: list[Any] = list(self._tools_of(wire, body))  # duck-typed Tools
                request = LLMRequest(run.conversation, tools, options, call, wire.name)
                run.notify_llm_request(request)
            if self._stop:
                repeats = self.detector.window + 1
                message = (
                    f"stopped by harness: the agent repeated the same tool calls {repeats} times"
                )
                self.last_error = RunError(type="stagnation", message=message, status=400)
                raise Refusal(400, message)
            return call

    def gave_up(self, wire: Wire, call: int) -> None:
        """The client closed the connection of request ``call`` before any answer."""
        with self.lock:
            self._asked.pop(call, None)
            self._held.pop(call, None)
            self._ended(call)
            message = "the client gave up before the answer came (its own timeout)"
            self.last_error = RunError(type="timeout", message=message, status=None)
            if call in self._of_call:
                self._of_call[call][0].error = self.last_error
            run = self.run
            run.emit(
                LLMFailedEvent(
                    iteration=run.iteration,
                    call=call,
                    type="timeout",
                    message=message,
                    status=None,
                    sim=run.sim_time,
                )
            )

    def response(self, wire: Wire, call: int, status: int, raw: bytes) -> None:
        """The answer to request ``call`` was sent (``raw``: its whole body)."""
        with self.lock:
            asked = self._asked.pop(call, None)
            held = self._held.pop(call, None)
            self._ended(call)
            thread, place = self._of_call[call]
            answer = answer_body(raw)  # read once: the reply and the chain both need it
            if status >= 400:
                error = _failure(wire, status, answer)
                error["message"] = self.shown(str(error["message"]))
                self.last_error = thread.error = RunError.model_validate(error)
                # Said in the run: an SDK may retry it and go on, leaving no other trace.
                run = self.run
                run.emit(
                    LLMFailedEvent(iteration=run.iteration, call=call, **error, sim=run.sim_time)
                )
                return
            self.last_error = thread.error = None
            run = self.run
            reply = (wire.read_reply(*answer) if answer is not None else None) or WireReply()
            if held is not None:
                self._holding.keep(wire, *held, answer)
            if asked is not None:
                response_id, output = wire.answer_items(answer)
                if response_id is not None:
                    self._chains[response_id] = [*asked, *output]
                    self._places.keep(place, response_id)
            message = clean_reply(reply.message())
            self._last_reply = thread.last_reply = message
            self._made.update(c.id for c in message.tool_calls)
            run.ledger.add_usage(reply.usage)
            for key, value in (reply.usage or {}).items():
                thread.usage[key] = thread.usage.get(key, 0) + value
            run.emit(
                LLMResponseEvent(
                    iteration=run.iteration,
                    call=call,
                    tool_calls=[c.name for c in message.tool_calls],
                    finish_reason=message.finish_reason,
                    sim=run.sim_time,
                    usage=reply.usage or None,
                )
            )
            if run.observed.llm_response:
                response = LLMResponse(message=message, usage=reply.usage or None)
                run.notify_llm_response(response)
            if message.tool_calls:
                self._plan(thread, message.tool_calls)

    def _now(self) -> float:
        """Seconds since the run started, to the millisecond."""
        return round(time.perf_counter() - self.started, 3)

    def _ended(self, call: int) -> None:
        """Request ``call`` was answered (or given up on) now."""
        if call in self._wall:
            self._wall[call][1] = self._now()

    # -- tool calls -------------------------------------------------------------------------

    def _plan(self, thread: _Thread, calls: list[Any]) -> None:
        run = self.run
        # Not run until a later request of its conversation carries their results.
        thread.pending = run.ledger.record_not_run(calls)
        thread.records.extend(thread.pending)
        self._plan_start = run.sim_time
        thread.calls = {call.id: call for call in calls}
        signature = run.action_signature(calls)
        if signature is None:
            return
        if self.detector.is_stagnant(signature):
            shown = to_jsonable_python(signature, fallback=repr)
            window = self.detector.window
            run.emit(
                StagnationObservedEvent(iteration=run.iteration, signature=shown, window=window)
            )
            if self.stagnation is None:
                self.stagnation = ObservedStagnation(
                    iteration=run.iteration, signature=shown, window=window
                )
                run.remember(
                    "error" if self.on_stagnation == "stop" else "stagnation_observed",
                    f"Stagnation detected: the same tool plan was requested "
                    f"{self.detector.window + 1} times in a row",
                )
            if self.on_stagnation == "stop":
                self._stop = True
        self.detector.add(signature)

    def _read_results(self, thread: _Thread, wire: Wire, items: list[Any]) -> None:
        """Fill the pending calls' results from this request's new items."""
        pending, thread.pending = thread.pending, []
        # Items after those of the previous request are new (a client sends the whole
        # history); a shorter or rewritten history is read whole.
        start = thread.items_seen if len(items) >= thread.items_seen else 0
        thread.items_seen = len(items)
        if not pending:
            return
        found = wire.tool_results(items, start)
        if start and any(r.id not in found for r in pending):
            found = wire.tool_results(items, 0)
        run = self.run
        for record, result in _answered(wire, items[start:], pending, found):
            if record.id in self._mcp_answered:
                continue  # its MCP call already recorded the true status and result
            # The wire's own failure signal (docs/wires.md#tool-failures): the same
            # status a call of the same tool answered over MCP gets.
            run.ledger.result_arrived(record, clean_text(result.text), failed=result.failed)
            run.emit(
                ActionExecutedEvent(
                    iteration=run.iteration,
                    tool=record.name,
                    call_id=record.id,
                    status=record.status,
                    group=record.group,
                )
            )
            if run.observed.action_executed:
                call = thread.calls.get(record.id)
                if call is not None:
                    run.notify_action_executed(ToolAction(tool_call=call), record)

    def _follow(self, thread: _Thread, wire: Wire, body: dict[str, Any], items: list[Any]) -> None:
        """Bring ``run.conversation`` up to this request, converting only the new items
        while the target extends the history it sent last time."""
        known, last = self._followed
        head = wire.instructions(body)
        extends = known and len(items) >= known and items[known - 1] == last and head == self._head
        if not extends or thread.number != self._following:
            self._following = thread.number
            known, self._names = 0, {}
            self.run.replace_conversation(Conversation(messages=head))
            self._head = head
        self.run.conversation.extend(wire.messages(items[known:], self._names))
        self._followed = (len(items), items[-1] if items else None)

    def _tools_of(self, wire: Wire, body: dict[str, Any]) -> list[ObservedTool]:
        raw = body.get("tools")
        if raw != self._tools_raw:
            self._tools_raw = raw
            specs = wire.tools([t for t in raw or [] if isinstance(t, dict)])
            self._tools = [ObservedTool(spec) for spec in specs]
        return self._tools

    # -- calls on harness's MCP server (docs/mcp.md) ------------------------------------------

    def mcp_call(self, call: Any) -> None:
        """A call harness's MCP server answered (a ``harness.mcp.ServedCall``): joined to the
        model's pending call of the same name and arguments (else of the same name), it
        gets its true status, result and simulated time; a call no reply asked for is
        recorded on its own. Its events wait for the next request (or the run's end), to
        come in the plan's order: a target's concurrent calls finish in any order."""
        with self.lock:
            run = self.run
            record, place = self._joined(call.tool, call.arguments)
            if record is None:
                self._mcp_calls += 1
                asked = ToolCall(
                    id=f"mcp_{self._mcp_calls}", name=call.tool, arguments=call.arguments
                )
                (record,) = run.ledger.record_not_run([asked])
                self._plan_start = run.sim_time
            start = self._plan_start
            end = start + call.seconds
            result = clean_text(call.result) if isinstance(call.result, str) else call.result
            run.ledger.tool_answered(record, result, call.status, call.is_error, start, end)
            run.ledger.advance_clock(max(run.sim_time, end))
            self._mcp_answered.add(record.id)
            if call.abort is not None and self.mcp_abort is None:
                self.mcp_abort = call.abort
            self._mcp_done.append(((record.group, place), call, record, start))

    def _emit_mcp_calls(self) -> None:
        """The events (and hooks) of the MCP calls answered since the last request, in the
        order of the plans that asked for them."""
        run = self.run
        done, self._mcp_done = sorted(self._mcp_done, key=lambda d: d[0]), []
        for _, call, record, start in done:
            run.emit(
                MCPCallEvent(
                    iteration=run.iteration,
                    tool=call.tool,
                    call_id=record.id,
                    arguments=call.arguments,
                    status=call.status,
                    is_error=call.is_error,
                    code=call.code,
                    sim=start,
                )
            )
            run.emit(
                ActionExecutedEvent(
                    iteration=run.iteration,
                    tool=record.name,
                    call_id=record.id,
                    status=record.status,
                    group=record.group,
                )
            )
            asked_for = next(
                (t.calls[record.id] for t in self._threads.values() if record.id in t.calls), None
            )
            if run.observed.action_executed and asked_for is not None:
                run.notify_action_executed(ToolAction(tool_call=asked_for), record)

    def mcp_list_changed(self, tools: list[str]) -> None:
        """harness's MCP server changed its tool list and told the target."""
        with self.lock:
            run = self.run
            self._emit_mcp_calls()
            run.emit(MCPListChangedEvent(iteration=run.iteration, server="harness", tools=tools))

    def _joined(self, name: str, arguments: dict[str, Any]) -> tuple[ToolCallRecord | None, int]:
        """The pending call an MCP call answers (same name and arguments, else same name)
        and its place in its plan."""
        waiting = [
            (r, i)
            for thread in self._threads.values()
            for i, r in enumerate(thread.pending)
            if r.name == name and r.id not in self._mcp_answered
        ]
        exact = next((w for w in waiting if w[0].arguments == arguments), None)
        return exact or (waiting[0] if waiting else (None, 0))

    # -- the end ----------------------------------------------------------------------------

    def finish(self, termination: Termination, final: FinalResponse) -> RunResult:
        """End the run: ``agent_end`` fires and the RunResult is built."""
        with self.lock:
            self._emit_mcp_calls()
            run = self.run
            ledger = run.ledger
            run.replace_conversation(self._conversation())
            termination, final = ledger.end(termination, final, _failed_at_end)
            groups: dict[int, list[ToolCallRecord]] = {}
            for record in run.records:
                groups.setdefault(record.group, []).append(record)
            parallel = [
                [r.name for r in calls]
                for calls in groups.values()
                if len(calls) > 1 and any(r.status != "not_run" for r in calls)
            ]
            result = ledger.result(termination, final, self.started, parallel)
            result.wall_clock = [
                WallClockSpan(call=call, start=start, end=end)
                for call, (start, end) in self._wall.items()
            ]
            if len(self._threads) > 1 or self._rules:
                result.conversations = [self._thread_run(t) for t in self._threads.values()]
            return result

    def _thread_run(self, thread: _Thread) -> ConversationRun:
        """One conversation's calls, tool calls, usage and transcript, as results show it."""
        name = "main"
        if thread.rule is not None:
            name = self._rules[thread.rule].name or f"conversation {thread.rule + 1}"
        numbers = set(thread.numbers)
        events = [e for e in self.run.events if getattr(e, "call", None) in numbers]
        reply = thread.last_reply
        final = FinalResponse(content=getattr(reply, "content", None), error=thread.error)
        transcript = []
        if thread.last is not None:
            wire, body, items = thread.last
            transcript = [*wire.instructions(body), *wire.messages(items)]
            if thread.error is None and reply is not None:
                transcript.append(reply)
        return ConversationRun(
            conversation=name,
            number=thread.number,
            calls=thread.numbers,
            termination=Termination.completed if thread.error is None else Termination.llm_error,
            iterations=len(thread.numbers),
            llm_calls=len(thread.numbers),
            tool_calls=thread.records,
            final=final,
            events=events,
            usage=thread.usage,
            transcript=client_ids_named(transcript, self._made),
        )

    def _conversation(self) -> Conversation:
        """The last request's messages, and the last reply when it was answered."""
        if self._last is None:
            return Conversation()
        wire, body, items = self._last
        messages = [*wire.instructions(body), *wire.messages(items)]
        if self.last_error is None and self._last_reply is not None:
            messages.append(self._last_reply)
        return Conversation(messages=client_ids_named(messages, self._made))


def _answered(
    wire: Wire, new: list[Any], pending: list[ToolCallRecord], found: dict[str, ToolResult]
) -> list[tuple[ToolCallRecord, ToolResult]]:
    """Each pending call with the result a request sent for it.

    A call the reply sent without an id (or that the client gave an id of its own) comes
    back under the client's id: matched as freeze matches it, to the calls the client sent
    back, in the reply's order and with the same name.
    """
    sent = [item for item in wire.normalized({wire.items_field: new}) if item[0] == "call"]
    sent = sent[-len(pending) :] if len(sent) >= len(pending) else []
    answered = []
    for index, record in enumerate(pending):
        result = found.get(record.id) if record.id else None
        if result is None and sent and sent[index][2] == record.name:
            result = found.get(str(sent[index][1]))
        if result is not None:
            answered.append((record, result))
    return answered


def _failure(wire: Wire, status: int, answer: tuple[Any, bool] | None) -> dict[str, Any]:
    """``{type, message, status}`` of an error answer, its type harness's name for it."""
    error = wire.read_error(status, answer[0] if answer is not None else None)
    kind = {"timeout": "timeout", "script_exhausted": "script_exhausted"}.get(str(error.code))
    if kind is None:
        kind = "cassette_miss" if error.code == "cassette_miss" else "http_error"
    return {"type": kind, "message": error.message, "status": status}
