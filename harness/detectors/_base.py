"""The stuck detectors of one run, and what the loop does when one fires.

A detector is an object with any of these methods (the loop calls only those it has):

- ``check_plan(run, calls, signature) -> Stuck | None``: a tool plan is about to run;
  a ``Stuck`` declines it (the plan does not run);
- ``add_plan(run, calls, signature)``: no detector declined it, the plan runs now;
- ``plan_ran(run, records) -> Stuck | None``: the plan ran (its ToolCallRecords);
- ``check_request(run) -> Stuck | None``: the planner asks for an LLM request (the
  request is not made when the run stops).

Detectors keep bounded windows: the work per round does not grow with the run.
``on_stuck: nudge`` answers a detector's first detection with one message telling the
model what it repeats; its next detection stops the run.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_core import to_jsonable_python

from harness._actions import FinalData, FinalResponse, Termination
from harness._config import DetectorSettings
from harness._messages import ToolCall, UserMessage
from harness._plugins import PluginError
from harness._run import Run, RunStopped, answer_calls

if TYPE_CHECKING:
    from harness._actions import ToolCallRecord

__all__ = ["Detectors", "Stuck", "jsonable"]

# Names of the built-in repeat detector: the seed's guard, with the seed's final.data.
REPEAT = "repeat"


@dataclass
class Stuck:
    """What a detector saw: a sentence for people and the window of repeats.

    ``window`` entries are mappings with the ``iteration`` each repeat happened in (the
    report marks those iterations) and what repeated. ``data`` replaces the final data
    (the seed's ``repeat`` keeps its own shape under the default configuration).
    """

    message: str
    window: list[dict[str, Any]] = field(default_factory=list)
    data: dict[str, Any] | None = None
    detector: str = ""


def jsonable(value: Any) -> Any:
    """A signature or result as plain JSON data (``repr`` for what JSON cannot hold)."""
    return to_jsonable_python(value, fallback=repr)


class Detectors:
    """The detectors a run's config asks for, with their hook points for the loop."""

    def __init__(self, run: Run) -> None:
        config = run.config
        self.nudge = config.on_stuck == "nudge"
        self.nudged: set[str] = set()
        self.seed_shape = config.detectors is None
        if config.detectors is None:
            chosen: dict[str, Any] = {REPEAT: None}
            if config.stagnation_window <= 0:
                chosen = {}
        else:
            chosen = dict(config.detectors)
        active: list[tuple[str, Any]] = []
        if chosen:
            registry = run.plugin_registry("detectors")
            for name, settings in chosen.items():
                factory = registry.get(name)
                if factory is None:
                    known = ", ".join(sorted(registry)) or "none"
                    raise PluginError(f"unknown detector {name!r} (known: {known})")
                active.append((name, factory(settings or DetectorSettings(), config)))
        self.names = [name for name, _ in active]

        def having(method: str) -> list[tuple[str, Any]]:
            return [
                (n, getattr(d, method)) for n, d in active if callable(getattr(d, method, None))
            ]

        self._check_plan = having("check_plan")
        self._add_plan = having("add_plan")
        self._plan_ran = having("plan_ran")
        self._check_request = having("check_request")
        # The signature is worth computing only when a detector compares plans.
        self.wants_signature = bool(self._check_plan or self._add_plan)

    # -- hook points for the loop ---------------------------------------------------------

    def before_plan(self, run: Run, calls: list[ToolCall]) -> bool:
        """Check a plan before it runs: True when it was declined with a nudge (skip it);
        RunStopped when the run ends."""
        if not self.wants_signature:
            return False
        signature: Hashable = run.action_signature(calls)
        if signature is None:
            # Nobody answered (the built-in was disabled): no plan equals another, so
            # detection is off instead of every plan looking the same.
            signature = object()
        for name, check in self._check_plan:
            stuck = check(run, calls, signature)
            if stuck is not None:
                stuck.detector = name
                reason = _declined_reason(name, self.seed_shape)
                run.ledger.decline_plan(calls, reason)
                if self._nudged(run, stuck):
                    answer_calls(run.conversation, calls, reason)
                    self._add_nudge(run, stuck)
                    return True
                self._stop(run, stuck)
        for _, add in self._add_plan:
            add(run, calls, signature)
        return False

    def after_plan(self, run: Run, first_record: int) -> None:
        """Look at the plan that just ran (records from ``first_record`` on)."""
        if not self._plan_ran:
            return
        records: list[ToolCallRecord] = run.records[first_record:]
        for name, seen in self._plan_ran:
            stuck = seen(run, records)
            if stuck is not None:
                self._nudge_or_stop(run, stuck, name)
                return

    def before_request(self, run: Run) -> None:
        """Check an LLM request the planner asks for; RunStopped when the run ends."""
        for name, check in self._check_request:
            stuck = check(run)
            if stuck is not None:
                self._nudge_or_stop(run, stuck, name)
                return

    # -- outcomes -----------------------------------------------------------------------

    def _nudge_or_stop(self, run: Run, stuck: Stuck, name: str) -> None:
        """What detector ``name`` found: a nudge, or the end of the run (RunStopped)."""
        stuck.detector = name
        if self._nudged(run, stuck):
            self._add_nudge(run, stuck)
        else:
            self._stop(run, stuck)

    def _nudged(self, run: Run, stuck: Stuck) -> bool:
        """Whether this detection is answered with a nudge (a detector's first one)."""
        if not self.nudge or stuck.detector in self.nudged:
            return False
        self.nudged.add(stuck.detector)
        return True

    def _add_nudge(self, run: Run, stuck: Stuck) -> None:
        text = nudge_text(stuck)
        run.conversation.append(UserMessage(content=text))
        # Events mirror the hooks one to one; the report finds the nudge in memory, with
        # the iterations it is about.
        run.memory.append(
            {
                "kind": "nudge",
                "content": text,
                "detector": stuck.detector,
                "iteration": run.iteration,
                "window": _iterations(stuck),
            }
        )

    def _stop(self, run: Run, stuck: Stuck) -> None:
        if stuck.detector == REPEAT and self.seed_shape and stuck.data is not None:
            # The seed's memory entry, word for word.
            run.remember("error", f"Stagnation detected: {stuck.message}")
            data = stuck.data
        else:
            run.remember("error", f"Stagnation detected ({stuck.detector}): {stuck.message}")
            data = {"stagnation": True, "detector": stuck.detector, "window": stuck.window}
        raise RunStopped(Termination.stagnation, FinalResponse(data=FinalData.model_validate(data)))


def nudge_text(stuck: Stuck) -> str:
    """The message a nudge adds: what the model repeats and what to do instead."""
    return (
        f"You seem to be stuck: {stuck.message}. Doing the same again will not help: try a "
        "different approach, or give your final answer with what you have."
    )


def _declined_reason(name: str, seed_shape: bool) -> str:
    if name == REPEAT and seed_shape:
        return "the same tool calls were requested again (stagnation)"
    return f"the agent is stuck ({name})"


def _iterations(stuck: Stuck) -> list[int]:
    return sorted({e["iteration"] for e in stuck.window if isinstance(e.get("iteration"), int)})
