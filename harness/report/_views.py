"""What the report shows of one scenario: its timeline rows, errors and facts, with
every text escaped and cut to the page's limits (the template only lays them out)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from markupsafe import Markup, escape

from harness._actions import SubRun, ToolCallRecord
from harness._errors import format_errors
from harness._messages import AssistantMessage
from harness._results import Results, ScenarioResult
from harness.report._charts import track_svg
from harness.report._folds import fold_marks
from harness.report._markup import clip, compact, seconds, to_text
from harness.report._pills import usage_pills
from harness.report._text import ending_sentence
from harness.report._timeline import Item, Timeline, build_timeline

__all__ = ["COMPACT_AFTER", "SEARCH_DESCRIPTION", "Limits", "scenario_view", "sub_run_view"]


@dataclass(frozen=True)
class Limits:
    """How much of a long text the page shows before a visible truncation marker."""

    reply: int = 400  # an LLM reply in the timeline
    call: int = 200  # a tool call's arguments in the timeline
    result: int = 300  # a tool call's result in the timeline
    value: int = 600  # an expected or actual value
    final: int = 2000  # the final response
    message: int = 1000  # one transcript message
    diff: int = 1500  # one side of the final-answer diff
    compact: bool = False

    @classmethod
    def for_results(cls, results: Results) -> Limits:
        """Full limits, or shorter ones when the report would be too big to open smoothly.

        The page's weight is its text: past ``COMPACT_AFTER`` transcript messages in all,
        texts are cut shorter (the full text stays in results.json).
        """
        return cls.for_messages(sum(len(s.transcript) for s in results.scenarios))

    @classmethod
    def for_messages(cls, messages: int) -> Limits:
        """``for_results`` for a report of ``messages`` transcript messages in all."""
        if messages <= COMPACT_AFTER:
            return cls()
        return cls(
            reply=140,
            call=100,
            result=120,
            value=300,
            final=600,
            message=160,
            diff=600,
            compact=True,
        )


# Transcript messages in a report above which texts are cut shorter (see Limits).
COMPACT_AFTER = 10_000


def _errors(scenario: ScenarioResult) -> list[dict[str, Any]]:
    """What went wrong, for the scenario's error box: the final error and error memory.

    Memory entries are marked ``memory``: they are how the run ended, and a passed
    scenario shows them in a neutral box instead (see ``_scenario_view``).
    """
    out: list[dict[str, Any]] = []
    error = scenario.final.error
    # Texts already shown: the error's own message and the line made of it.
    known: list[str] = []
    # At max_iterations the error only restates the limit, which the timeline shows.
    if error and scenario.termination.value != "max_iterations":
        message = error.message
        known.append(message)
        if error.exception:
            message = f"{error.exception}: {message}"
        if error.status:
            message = f"HTTP {error.status}: {message}"
        shown = ("type", "message", "exception", "status")
        # The other keys, as results.json has them (a target's exit_status, stderr, where).
        details = {k: v for k, v in error.model_dump().items() if k not in shown and v is not None}
        out.append(
            {
                "kind": error.type,
                "message": message,
                # A command target's stderr: lines to read, shown as a block of its own.
                "stderr": details.pop("stderr", None),
                "details": details,
                "memory": False,
            }
        )
        known.append(message)
    for entry in scenario.memory:
        if entry.get("kind") != "error":
            continue
        content = to_text(entry.get("content"))
        # The loop's memory entry often restates the final error: show it once.
        if any(m and (m in content or content in m) for m in known):
            continue
        out.append(
            {"kind": "memory", "message": content, "stderr": None, "details": {}, "memory": True}
        )
    return out


def _call_notes(scenario: ScenarioResult) -> dict[str, dict[str, str]]:
    """Per tool call id: the raw arguments the model sent (when not a JSON object) and why
    validation refused the call, which the call's record does not carry."""
    notes: dict[str, dict[str, str]] = {}
    for message in scenario.transcript:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                if call.raw_arguments is not None:
                    notes.setdefault(call.id, {})["raw"] = call.raw_arguments
    failures = scenario.final.error.errors if scenario.final.error is not None else []
    for failure in failures:
        notes.setdefault(failure.call_id, {})["invalid"] = format_errors(failure.errors)
    return notes


class _Call:
    """One tool call as the timeline shows it, its texts escaped and cut already."""

    __slots__ = ("args", "head", "invalid", "is_error", "name", "raw", "result", "status", "sub")

    def __init__(self, record: ToolCallRecord, note: dict[str, str], limits: Limits) -> None:
        self.name = record.name
        self.status = escape(record.status)
        self.is_error = record.is_error
        self.head = Markup(
            f'<span class="cid">{clip(record.id, 60)}</span><code class="name">'
            f'{clip(record.name, 80)}</code> <span class="cs">{self.status}</span>'
        )
        self.raw = "raw" in note
        self.args = clip(note["raw"] if self.raw else compact(record.arguments), limits.call)
        invalid = note.get("invalid")
        self.invalid = clip(invalid, limits.result) if invalid else None
        ran = record.status != "not_run" and record.result is not None
        self.result = clip(compact(record.result), limits.result) if ran else None
        # A sub-agent's run: its own timeline, nested (and collapsed) under the call.
        self.sub = sub_run_view(record.sub_run, limits) if record.sub_run is not None else None


class _Row:
    """One timeline row: an LLM call or a tool plan, with its place on the clock."""

    __slots__ = (
        "asks",
        "call",
        "calls",
        "choice",
        "content",
        "conversation",
        "declined",
        "error",
        "failed",
        "finish",
        "kind",
        "label",
        "lanes",
        "parallel",
        "stopped",
        "subs",
        "track",
        "when",
    )

    def __init__(
        self,
        item: Item,
        total: float,
        scenario: ScenarioResult,
        notes: dict[str, dict[str, str]],
        limits: Limits,
        conversation: str | None = None,
        wall: bool = False,
    ) -> None:
        self.kind = item.kind
        self.call = item.call
        # A target that held several conversations: the one this call belongs to.
        self.conversation = conversation
        self.failed = item.failed
        self.declined = item.declined
        self.stopped = item.stopped
        self.parallel = item.parallel
        reply = item.reply
        content = reply.content if reply is not None else None
        self.content = clip(content, limits.reply) if content else None
        names = ", ".join(c.name for c in reply.tool_calls) if reply is not None else ""
        self.asks = clip(names, limits.call) if names else None
        finish = reply.finish_reason if reply is not None else None
        self.finish = finish if finish not in (None, "stop", "tool_calls") else None
        # A request that forbade tools (the final answer at the iteration limit) says so.
        self.choice = item.tool_choice if isinstance(item.tool_choice, str) else None
        error = ""
        if item.failed:
            # Its own error when the run kept one (a target's retried call), else the run's.
            final_error = scenario.final.error
            error = item.error or (final_error.message if final_error is not None else "")
        self.error = clip(error, limits.reply) if error else None
        count = len(item.calls)
        self.label = f"{'tools' if count > 1 else 'tool'} \u00d7{count}"
        self.calls = [_Call(c, notes.get(c.id, {}), limits) for c in item.calls]
        # Calls that ran a sub-agent: each gets a full-width row with its run below.
        self.subs = [c for c in self.calls if c.sub is not None]
        self.track = track_svg(item, total, wall)
        # The lanes of a parallel plan, top to bottom, by tool name (the bars are in order).
        self.lanes = [clip(c.name, limits.call) for c in item.calls] if count > 1 else []
        if wall:  # real calls take milliseconds: a hundredth of a second would hide them
            self.when = f"{item.start:.3f} s → {item.end:.3f} s"
        else:
            self.when = f"{seconds(item.start)} → {seconds(item.end)}" + ("" if item.exact else "*")


def _spans(rows: dict[int, list[_Row]]) -> dict[int, int]:
    """Table rows of the iterations that hold sub-runs (one more row per sub-run)."""
    return {
        number: len(items) + sum(len(r.subs) for r in items)
        for number, items in rows.items()
        if any(r.subs for r in items)
    }


def _rows(
    timeline: Timeline, scenario: ScenarioResult, notes: dict[str, dict[str, str]], limits: Limits
) -> dict[int, list[_Row]]:
    """The timeline's rows by iteration number, prepared in one pass (the hot path)."""
    total = timeline.total
    named = {call: c.conversation for c in scenario.conversations for call in c.calls}
    return {
        it.number: [
            _Row(item, total, scenario, notes, limits, named.get(item.call), timeline.wall)
            for item in it.items
        ]
        for it in timeline.iterations
    }


# How much of a description the text filter searches (the page shows as much).
SEARCH_DESCRIPTION = 1000


def _search_text(scenario: ScenarioResult) -> str:
    """What the page's text filter matches: id, name, description and tags, lower case."""
    description = (scenario.description or "")[:SEARCH_DESCRIPTION]
    return " ".join([scenario.id, scenario.name, description, *scenario.tags]).lower()


def _as_result(sub: SubRun) -> ScenarioResult:
    """A sub-run in the shape the timeline is built from (it is a run like any other)."""
    return ScenarioResult.model_construct(
        id=sub.agent,
        name=sub.agent,
        file="",
        description=None,
        tags=[],
        status="passed" if sub.termination.value == "completed" else "failed",
        expectations=[],
        agent=None,
        wall_time=0.0,
        **{field: getattr(sub, field) for field in _SUB_FIELDS},
    )


_SUB_FIELDS = (
    "termination",
    "iterations",
    "llm_calls",
    "tool_calls",
    "parallel_groups",
    "final",
    "events",
    "memory",
    "usage",
    "sim_time",
    "transcript",
)


def sub_run_view(sub: SubRun, limits: Limits) -> dict[str, Any]:
    """What the template needs to show a sub-agent's run inside its tool call."""
    run = _as_result(sub)
    timeline = build_timeline(run)
    rows = _rows(timeline, run, _call_notes(run), limits)
    ran = sum(1 for c in sub.tool_calls if c.status != "not_run")
    errors = sum(1 for c in sub.tool_calls if c.is_error)
    return {
        "agent": sub.agent,
        "depth": sub.depth,
        "termination": sub.termination.value,
        "facts": f"{sub.iterations} it · {sub.llm_calls} LLM · {ran} tool"
        + (f" ({errors} err)" if errors else "")
        + f" · {seconds(sub.sim_time)}",
        "timeline": timeline,
        "rows": rows,
        "spans": _spans(rows),
        "folds": fold_marks(timeline, rows),
        "ending": ending_sentence(run),
    }


def _not_run_label(timeline: Timeline, scenario: ScenarioResult) -> str:
    if not timeline.target:
        return "not run"
    unseen = sum(1 for c in scenario.tool_calls if c.status == "not_run")
    return "result not seen" if unseen == 1 else "results not seen"


def scenario_view(index: int, scenario: ScenarioResult, limits: Limits) -> dict[str, Any]:
    """What the template needs to show scenario number ``index + 1``."""
    timeline = build_timeline(scenario)
    notes = _call_notes(scenario)
    rows = _rows(timeline, scenario, notes, limits)
    failed = [e for e in scenario.expectations if not e.ok]
    errors = _errors(scenario)
    # A passed scenario's memory entries (say, "Stagnation detected" where stagnation was
    # expected) are no failure: they are shown, but not in red.
    passed = scenario.status == "passed"
    return {
        "s": scenario,
        "number": index + 1,
        "anchor": f"s{index + 1}",
        "status": scenario.status,
        "termination": scenario.termination.value,
        "search": _search_text(scenario),
        "timeline": timeline,
        "errors": [e for e in errors if not (passed and e["memory"])],
        "notes": [e for e in errors if passed and e["memory"]],
        "ending": ending_sentence(scenario),
        "failed": len(failed),
        "tool_errors": sum(1 for c in scenario.tool_calls if c.is_error),
        # Calls that ran apart from requested ones that never ran (a declined plan, calls
        # left at the limit); tool_calls expectations count both (docs/scenarios.md).
        "tools_ran": sum(1 for c in scenario.tool_calls if c.status != "not_run"),
        "tools_not_run": sum(1 for c in scenario.tool_calls if c.status == "not_run"),
        # A target's call is not_run when no later request carried its result: whether
        # the agent ran it is not seen at the HTTP boundary.
        "not_run_label": _not_run_label(timeline, scenario),
        "usage": scenario.usage,
        "usage_pills": usage_pills(scenario.usage),
        "rows": rows,
        "spans": _spans(rows),
        "folds": fold_marks(timeline, rows),
    }
