"""The built-in stuck detectors, registered like any plugin's.

- ``repeat`` (docs/loop.md#stagnation): the plan equals each of the previous W plans;
- ``alternating``: plans A, B, A, B, ... for W pairs, and the next plan is A again;
- ``repeated_error``: the same tool failed with the same error W times running;
- ``same_result``: the same call (tool and arguments) got the same result W times,
  even with other calls between;
- ``monologue``: W replies running without tool calls, and the planner asks again.

Every one keeps a bounded window: constant work per round, whatever the run's length.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol

from harness._canonical import canonical_json
from harness._config import AgentConfig, DetectorSettings
from harness._messages import AssistantMessage, UserMessage
from harness._stagnation import StagnationDetector
from harness.detectors._base import Stuck, jsonable
from harness.hookspecs import hookimpl

__all__ = [
    "AlternatingDetector",
    "MonologueDetector",
    "RepeatDetector",
    "RepeatedErrorDetector",
    "SameResultDetector",
]

# How many distinct tools or calls the per-key detectors remember (least recently seen
# forgotten first): their memory stays bounded in a run of any length.
_KEYS = 256


def _plan_entry(iteration: int, signature: Any) -> dict[str, Any]:
    return {"iteration": iteration, "plan": jsonable(signature)}


class RepeatDetector(StagnationDetector):
    """The seed's guard: the plan equals each of the previous ``window`` plans."""

    default_window = 3

    def __init__(self, window: int) -> None:
        super().__init__(window)
        self._iterations: deque[int] = deque(maxlen=max(window, 1))

    def check_plan(self, run: Any, calls: Any, signature: Any) -> Stuck | None:
        """The plan repeats the whole window: decline it."""
        if not self.is_stagnant(signature):
            return None
        window = self.window
        return Stuck(
            message=f"the same tool plan was requested {window + 1} times in a row",
            window=[_plan_entry(i, signature) for i in self._iterations],
            # The seed's final.data, kept for the default configuration.
            data={"stagnation": True, "signature": jsonable(signature), "window": window},
        )

    def add_plan(self, run: Any, calls: Any, signature: Any) -> None:
        """Remember a plan that runs."""
        self.add(signature)
        self._iterations.append(run.iteration)


class AlternatingDetector:
    """Plans A, B, A, B, ... for ``window`` pairs (A differs from B); the next A is declined."""

    default_window = 2

    def __init__(self, window: int) -> None:
        self.window = window
        self._plans: deque[tuple[int, Any]] = deque(maxlen=2 * window)

    def check_plan(self, run: Any, calls: Any, signature: Any) -> Stuck | None:
        """Decline the plan that would go on alternating after ``window`` pairs."""
        plans = self._plans
        if len(plans) < 2 * self.window:
            return None
        a, b = plans[-2][1], plans[-1][1]
        if a == b or signature != a:
            return None
        for index, (_, sig) in enumerate(plans):
            if sig != (a if index % 2 == 0 else b):
                return None
        return Stuck(
            message=f"it alternated between the same two tool plans {self.window} times",
            window=[_plan_entry(i, sig) for i, sig in plans],
        )

    def add_plan(self, run: Any, calls: Any, signature: Any) -> None:
        """Remember a plan that runs."""
        self._plans.append((run.iteration, signature))


class _PerKey:
    """A bounded map from a key (a tool, a call) to its run of repeats.

    Runs are kept as small tuples (value, ((iteration, call id, record), ...)) and the
    window's mappings are built only when a detector fires: this is per-round work.
    """

    def __init__(self, window: int) -> None:
        self.window = window
        # A plain dict keeps insertion order: re-inserting a key makes it the newest,
        # and the oldest is the first key (forgotten past _KEYS).
        self._runs: dict[Any, tuple[Any, tuple[Any, ...]]] = {}

    def see(self, key: Any, value: Any, record: Any) -> tuple[Any, ...] | None:
        """Count ``value`` for ``key``; the records of the window once it repeated
        ``window`` times."""
        runs = self._runs
        found = runs.pop(key, None)
        if found is not None and found[0] == value:
            seen = (*found[1][-(self.window - 1) :], record) if self.window > 1 else (record,)
        else:
            seen = (record,)
            if len(runs) >= _KEYS:
                del runs[next(iter(runs))]
        runs[key] = (value, seen)
        return seen if len(seen) >= self.window else None

    def forget(self, key: Any) -> None:
        """``key``'s run of repeats is broken."""
        self._runs.pop(key, None)


def _call_key(record: Any) -> Any:
    """The same tool with the same arguments: a cheap key (its arguments' items, sorted;
    hashed by the caller), or canonical JSON for arguments holding lists or mappings."""
    arguments = record.arguments
    for value in arguments.values():
        if isinstance(value, dict | list):
            return (record.name, canonical_json(arguments))
    return (record.name, tuple(sorted(arguments.items())))


class RepeatedErrorDetector(_PerKey):
    """The same tool failed with the same error ``window`` times running."""

    default_window = 3

    def plan_ran(self, run: Any, records: list[Any]) -> Stuck | None:
        """Count the plan's failures per tool; a success breaks that tool's run."""
        for record in records:
            if record.status == "not_run":
                continue
            if not record.is_error:
                if self._runs:
                    self.forget(record.name)
                continue
            error = str(record.result)
            window = self.see(record.name, error, record)
            if window is not None:
                return Stuck(
                    message=f"{record.name} failed with the same error {self.window} times "
                    f"running: {error}",
                    window=[
                        {"iteration": r.iteration, "call_id": r.id, "tool": r.name, "error": error}
                        for r in window
                    ],
                )
        return None


class SameResultDetector(_PerKey):
    """The same call got the same result ``window`` times, other calls between or not."""

    default_window = 3

    def plan_ran(self, run: Any, records: list[Any]) -> Stuck | None:
        """Count each successful call's result per (tool, arguments)."""
        for record in records:
            if record.status != "ok":
                continue
            window = self.see(_call_key(record), record.result, record)
            if window is not None:
                arguments = canonical_json(record.arguments)
                return Stuck(
                    message=f"{record.name} {arguments} returned the same result "
                    f"{self.window} times",
                    window=[
                        {
                            "iteration": r.iteration,
                            "call_id": r.id,
                            "tool": r.name,
                            "arguments": r.arguments,
                            "result": r.result,
                        }
                        for r in window
                    ],
                )
        return None


class MonologueDetector:
    """``window`` replies running without tool calls, and the planner asks for another."""

    default_window = 3

    def __init__(self, window: int) -> None:
        self.window = window
        self._start: int | None = None
        # LLM call number -> iteration, for the calls this detector saw requested.
        self._iterations: deque[tuple[int, int]] = deque(maxlen=4 * window + 4)

    def check_request(self, run: Any) -> Stuck | None:
        """Count the replies without tool calls since the last tool round or the start."""
        messages = run.conversation.messages
        if self._start is None:
            self._start = len(messages)
        replies: list[AssistantMessage] = []
        index = len(messages) - 1
        # Nudges and a planner's own prompts (user messages) do not break a monologue;
        # a tool round does. At most a few messages per counted reply are read.
        budget = 4 * self.window + 4
        while index >= self._start and budget > 0:
            message = messages[index]
            if isinstance(message, AssistantMessage) and not message.tool_calls:
                replies.append(message)
                if len(replies) >= self.window:
                    break
            elif not isinstance(message, UserMessage):
                break  # a tool round (or anything else) ends the monologue
            index -= 1
            budget -= 1
        self._iterations.append((run.llm_calls + 1, run.iteration))
        if len(replies) < self.window:
            return None
        known = dict(self._iterations)
        window = []
        for k, reply in enumerate(reversed(replies)):
            call = run.llm_calls - (len(replies) - 1 - k)
            entry: dict[str, Any] = {"call": call, "content": reply.content}
            if call in known:
                entry["iteration"] = known[call]
            window.append(entry)
        return Stuck(
            message=f"{self.window} replies running without a tool call, and the planner "
            "kept asking",
            window=window,
        )


class _Windowed(Protocol):
    """A built-in detector class: built from its window, with a default one."""

    default_window: int

    def __init__(self, window: int) -> None: ...


def _factory(cls: type[_Windowed]) -> Any:
    def build(settings: DetectorSettings, config: AgentConfig) -> Any:
        window = settings.window
        if window is None:
            if cls is RepeatDetector and config.stagnation_window > 0:
                window = config.stagnation_window
            else:
                window = cls.default_window
        return cls(window)

    build.__doc__ = f"Build a {cls.__name__} from its settings."
    return build


BUILTIN: dict[str, type[_Windowed]] = {
    "repeat": RepeatDetector,
    "alternating": AlternatingDetector,
    "repeated_error": RepeatedErrorDetector,
    "same_result": SameResultDetector,
    "monologue": MonologueDetector,
}


@hookimpl
def harness_register_detectors(register: Any) -> None:
    """The built-in stuck detectors."""
    for name, cls in BUILTIN.items():
        register(name, _factory(cls))
