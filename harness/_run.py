"""``Run``: the live state of one run, handed to planners and to every hook.

It is the one path to the model (``call_llm``) and keeps what the results are built
from: the conversation, events and memory, and (in its ledger) the counters, the
simulated clock, usage and the tool-call records. Per-round work is constant in the length
of the run.

``Run`` is what plugins see (docs/plugins.md lists it): what they may read and call. The
engine (the loop, the tool plan runner, budgets, detectors, streaming and the external
observer) records what happened only through ``Run``'s engine methods below (``notify_*``,
``action_signature``, ``replace_conversation``) and the ledger's (``run.ledger``,
harness/_ledger.py), never through a private attribute: one writer of a run's record, so
that "every requested call is recorded exactly once, every unanswered call is answered
before a request" and "a hook fires with the event it goes with" hold in one place
(tests/test_one_writer.py checks that nothing else reaches in).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness import simclock
from harness._actions import FinalResponse, Termination, ToolCallRecord
from harness._config import AgentConfig
from harness._errors import AbortRun, LLMError
from harness._ledger import Ledger, answer_calls, answer_unanswered, pending_calls
from harness._messages import AssistantMessage, Conversation, ToolCall, clean_reply
from harness._streaming import stream_reply
from harness.events import Event, LLMFailedEvent, LLMRequestEvent, LLMResponseEvent, event_of
from harness.llm._base import LLM, LLMRequest, LLMResponse

if TYPE_CHECKING:
    from harness._actions import Action
    from harness._plugins import Plugins
    from harness._streaming import EventSink
    from harness._tools import Tool

__all__ = [
    "Run",
    "RunStopped",
    "answer_calls",
    "answer_unanswered",
    "current_run",
    "pending_calls",
]

log = logging.getLogger("harness")

# The run whose loop is executing (set by harness._loop for the run's duration): a tool
# that keeps state per run (a remote agent's session, say) finds its run here, since a
# tool is called with its arguments only, and a run started inside it (a sub-agent's)
# is its child. Context variables follow the run into the
# tasks and threads of a parallel plan.
_current: ContextVar[Run | None] = ContextVar("harness_current_run", default=None)


def current_run() -> Run | None:
    """The run being executed in this context (None outside any run)."""
    return _current.get()


def enter_run(run: Run) -> Any:
    """Make ``run`` the current run; returns the token ``leave_run`` takes."""
    return _current.set(run)


def leave_run(token: Any) -> None:
    """Restore the current run that was set before ``enter_run``."""
    _current.reset(token)


@dataclass(frozen=True)
class _Observed:
    """Which per-round hooks have implementations in this run's plugin manager."""

    iteration_start: bool
    llm_request: bool
    llm_response: bool
    action_executed: bool


def _observed_hooks(hook: Any) -> _Observed:
    def implemented(name: str) -> bool:
        return bool(getattr(hook, name).get_hookimpls())

    return _Observed(
        iteration_start=implemented("harness_iteration_start"),
        llm_request=implemented("harness_llm_request"),
        llm_response=implemented("harness_llm_response"),
        action_executed=implemented("harness_action_executed"),
    )


class RunStopped(Exception):  # control flow inside the loop only
    """Ends the iteration loop with a termination and a final response."""

    def __init__(self, termination: Termination, final: FinalResponse) -> None:
        self.termination = termination
        self.final = final


class Run:
    """The live state of one run, handed to planners and to every hook.

    Its public attributes and methods are what plugins may read and call
    (docs/plugins.md); the counters, the clock, usage, the records and the termination
    are read-only here and change through the ledger.
    """

    def __init__(
        self,
        *,
        conversation: Conversation,
        tools: dict[str, Tool],
        config: AgentConfig,
        llm: LLM,
        plugins: Plugins,
        sink: EventSink | None = None,
    ) -> None:
        self.conversation = conversation
        self.tools = tools
        self.config = config
        # A run started inside another run (a sub-agent's, from a tool call) is its child.
        self.parent: Run | None = _current.get()
        self.depth: int = 0 if self.parent is None else self.parent.depth + 1
        self.memory: list[dict[str, Any]] = []
        self.events: list[Event] = []
        # Free space for planners and plugins that keep state across iterations.
        self.state: dict[str, Any] = {}
        self._ledger = Ledger(self)
        self._llm = llm
        self._plugins = plugins
        self._hook = plugins.hook
        self._tool_list = list(tools.values())
        # Per-round hooks nobody implements are skipped: an empty pluggy call still costs
        # microseconds, several times a round. Decided once per run.
        self._observed = _observed_hooks(self._hook)
        # Agent.astream's events (harness._streaming); None when nobody streams the run.
        self._sink = sink
        # Replies come in pieces under astream, or when the source always streams.
        self._streams = sink is not None or bool(getattr(llm, "streams", False))

    # -- what the ledger keeps, read-only ----------------------------------------------

    @property
    def iteration(self) -> int:
        """The current iteration (1-based; 0 before the first)."""
        return self._ledger.iteration

    @property
    def llm_calls(self) -> int:
        """LLM requests made so far."""
        return self._ledger.llm_calls

    @property
    def sim_time(self) -> float:
        """Simulated seconds so far."""
        return self._ledger.sim_time

    @property
    def usage(self) -> dict[str, int]:
        """Token usage so far (``prompt_tokens``, ``completion_tokens``, ...)."""
        return self._ledger.usage

    @property
    def records(self) -> list[ToolCallRecord]:
        """The records of the calls handled so far (``RunResult.tool_calls`` at the end)."""
        return self._ledger.records

    @property
    def parallel_groups(self) -> list[list[str]]:
        """The tool names of each executed plan of two or more calls."""
        return self._ledger.parallel_groups

    @property
    def termination(self) -> Termination | None:
        """How the run ended (set before ``harness_agent_end``; None until then)."""
        return self._ledger.termination

    @property
    def planner_name(self) -> str:
        """The name the planner was selected by (``config.planner``)."""
        return self.config.planner

    # -- for the engine: what the loop, the tool plan runner and observers record --------

    @property
    def ledger(self) -> Ledger:
        """The run's bookkeeping: the engine records through its methods (harness/_ledger.py);
        plugins read the same values through the properties above."""
        return self._ledger

    @property
    def observed(self) -> _Observed:
        """Which per-round hooks some plugin implements: an observer builds a hook's
        argument (a request, a response) only when one does."""
        return self._observed

    @property
    def sink(self) -> EventSink | None:
        """Where ``Agent.astream`` hands the run's events (None when nobody streams it)."""
        return self._sink

    def plugin_registry(self, kind: str) -> dict[str, Any]:
        """The factories plugins registered under ``kind`` (``"detectors"``, say)."""
        return self._plugins.registry(kind)

    def notify_agent_start(self) -> None:
        """Fire ``harness_agent_start`` (after its ``AgentStartEvent``)."""
        self._hook.harness_agent_start(run=self)

    def notify_iteration_start(self, iteration: int) -> None:
        """Fire ``harness_iteration_start`` when a plugin implements it."""
        if self._observed.iteration_start:
            self._hook.harness_iteration_start(run=self, iteration=iteration)

    def notify_llm_request(self, request: LLMRequest) -> None:
        """Fire ``harness_llm_request`` when a plugin implements it."""
        if self._observed.llm_request:
            self._hook.harness_llm_request(run=self, request=request)

    def notify_llm_response(self, response: LLMResponse) -> None:
        """Fire ``harness_llm_response`` when a plugin implements it."""
        if self._observed.llm_response:
            self._hook.harness_llm_response(run=self, response=response)

    def notify_action_executed(self, action: Action, record: ToolCallRecord) -> None:
        """Fire ``harness_action_executed`` when a plugin implements it."""
        if self._observed.action_executed:
            self._hook.harness_action_executed(run=self, action=action, result=record)

    def notify_agent_end(self, final: FinalResponse) -> None:
        """Fire ``harness_agent_end`` (the ledger does, as the run ends)."""
        self._hook.harness_agent_end(run=self, final=final)

    def action_signature(self, calls: list[ToolCall]) -> Hashable | None:
        """What ``harness_action_signature`` makes of a plan (None when nobody answers)."""
        signature: Hashable | None = self._hook.harness_action_signature(run=self, tool_calls=calls)
        return signature

    def replace_conversation(self, conversation: Conversation) -> None:
        """An external target's conversation, as its requests rebuilt it."""
        self.conversation = conversation

    # -- helpers for planners and plugins ---------------------------------------------

    def tools_changed(self, tools: dict[str, Any]) -> None:
        """The run's tools from the next request on (an MCP server changed its list)."""
        self.tools = tools
        self._tool_list = list(tools.values())

    def emit(self, event: Event | str, /, **data: Any) -> None:
        """Record an event (no wall-clock values: results must be reproducible).

        ``event`` is one of harness.events' kinds, or a plugin's own event by name with
        its fields (``run.emit("cache_hit", key=k)``), stamped with the current iteration.
        """
        if isinstance(event, str):
            event = event_of({"event": event, "iteration": self._ledger.iteration, **data})
        elif data:
            raise TypeError(
                f"run.emit({type(event).__name__}(...), {', '.join(data)}=...): an event's "
                "fields go in the event"
            )
        self.events.append(event)

    def remember(self, kind: str, content: Any) -> None:
        """Add a memory entry ``{kind, content}``."""
        self.memory.append({"kind": kind, "content": content})

    async def call_llm(self, **options: Any) -> AssistantMessage:
        """Send the conversation and tools to the model; append and return its reply.

        The one path to the model: it fires ``llm_request`` / ``llm_response``, counts
        the call, advances the simulated clock and adds token usage.
        """
        ledger = self._ledger
        ledger.answer_pending()
        iteration = ledger.iteration
        request = self._request(options)
        response: LLMResponse
        retries = self.config.llm_retries
        for attempt in range(retries.max if retries is not None else 0):
            try:
                response = await self._ask(request)
                break
            except LLMError as exc:
                if retries is None or not retries.retries(exc.status, exc.type):
                    raise
                # Said in the run, as an SDK's retry leaves no other trace; the wait is
                # simulated, like every other duration of the run.
                self.emit(LLMFailedEvent.of(iteration, request.call, exc, ledger.sim_time))
                wait = retries.wait(attempt, exc.retry_after)
                ledger.advance_clock(ledger.sim_time + wait)
                request = self._request(options)
        else:
            response = await self._ask(request)
        call = request.call
        message = clean_reply(response.message)
        if message is not response.message:
            # Hooks must see the message that is in the conversation.
            response.message = message
        if simclock.out_of_bounds(response.latency):
            raise AbortRun(
                f"the LLM source's reply took {response.latency!r} simulated seconds; a reply "
                f"takes 0 to {simclock.MAX_SECONDS:.0f} (a year)"
            )
        ledger.advance_clock(ledger.sim_time + response.latency)
        if response.usage:
            ledger.add_usage(response.usage)
        self.conversation.append(message)
        names = [c.name for c in message.tool_calls]
        self.emit(
            LLMResponseEvent.of(
                iteration, call, names, message.finish_reason, ledger.sim_time, response.usage
            )
        )
        if self._observed.llm_response:
            self._hook.harness_llm_response(run=self, response=response)
        if not message.tool_calls:
            log.info("Final response received (no tool calls)")
        return message

    def _request(self, options: dict[str, Any]) -> LLMRequest:
        """A new request of the conversation, counted and announced."""
        ledger = self._ledger
        call = ledger.begin_request()
        request = LLMRequest(self.conversation, self._tool_list, options, call)
        # Simulated times (never wall-clock) place LLM calls on the report's timeline.
        # tool_choice is kept: a forced final answer ("none") reads differently.
        tool_choice = options.get("tool_choice")
        self.emit(LLMRequestEvent.of(ledger.iteration, call, ledger.sim_time, tool_choice))
        if self._observed.llm_request:
            self._hook.harness_llm_request(run=self, request=request)
        return request

    async def _ask(self, request: LLMRequest) -> LLMResponse:
        """The source's reply to ``request`` (streamed when the run streams)."""
        if self._streams:
            return await stream_reply(self, request, self._llm, self._hook.harness_llm_chunk)
        return await self._llm.complete(request)
