"""Render results (and a baseline diff) into one self-contained HTML file.

Everything the page needs is inline: CSS, SVG charts and a few lines of script for
the filters. Untrusted text (model output, tool results, scenario names) only ever
reaches the page through Jinja's autoescaping, and a Content-Security-Policy that
allows nothing but this page's own style and script (by hash) stands behind it.

The output is deterministic: the same results give byte-identical HTML.
"""

from __future__ import annotations

import base64
import difflib
import gc
import hashlib
import json
import math
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, get_args

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from harness.actions import Termination, ToolCallRecord
from harness.files import atomic_write
from harness.messages import AssistantMessage
from harness.report.diff import BaselineDiff
from harness.report.folds import fold_marks
from harness.report.timeline import Item, Timeline, build_timeline
from harness.results import Results, ScenarioResult, Status, Summary
from harness.secrets import scrub_model, scrub_text
from harness.tools import format_errors

__all__ = ["Limits", "render_html", "write_html"]

STATUSES: tuple[str, ...] = get_args(Status)
# In the order of the Termination enum (the loop's order of events).
TERMINATIONS = tuple(t.value for t in Termination)


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
        messages = sum(len(s.transcript) for s in results.scenarios)
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


# -- jinja environment ----------------------------------------------------------------------


def _asset(name: str) -> str:
    return resources.files("harness.report").joinpath("templates", name).read_text("utf-8")


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def _more(rest: int) -> str:
    """The visible marker for ``rest`` characters cut off (our own markup and a number)."""
    plural = "" if rest == 1 else "s"
    return f'<span class="clip">… {rest:,} more character{plural} not shown</span>'


def clip(value: Any, limit: int) -> Markup:
    """Escaped text, cut at ``limit`` characters with a visible marker saying how much is left."""
    text = value if isinstance(value, str) else to_text(value)
    if len(text) <= limit:
        return escape(text)
    # escape() makes the head safe; the marker is ours. (An f-string here is several times
    # faster than Markup.format, and this runs for every text.)
    return Markup(f"{escape(text[:limit])}{_more(len(text) - limit)}")


# A word or a run of punctuation, with the white space after it (and white space at the
# start): together the tokens are the whole text, and a sentence is few of them.
_TOKENS = re.compile(r"\s+|(?:\w+|[^\w\s]+)\s*")
# Past this many token pairs left after the common head and tail, the part between them
# is marked as a whole: difflib's cost grows with the product.
WORD_DIFF_BUDGET = 20_000


def _changed_span(a: list[str], b: list[str]) -> tuple[int, int]:
    """How many tokens ``a`` and ``b`` share at the start, and then at the end."""
    head = 0
    most = min(len(a), len(b))
    while head < most and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < most - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    return head, tail


def word_diff(old: Any, new: Any, limit: int) -> tuple[Markup | None, Markup | None]:
    """Two answers with the words only one of them has marked: ``<del>`` in the old one,
    ``<ins>`` in the new one; (None, None) unless both are text.

    Words are compared without the white space after them; each side shows its own text.
    Only the shown heads (``limit`` characters each) are compared, and past
    WORD_DIFF_BUDGET the changed middle is marked whole, which bounds the cost. Every
    segment is escaped before it is wrapped in our own markup, so the markup can never
    split an entity or mix with the answers' text.
    """
    if not isinstance(old, str) or not isinstance(new, str):
        return None, None
    a, b = _TOKENS.findall(old[:limit]), _TOKENS.findall(new[:limit])
    keys_a, keys_b = [t.rstrip() for t in a], [t.rstrip() for t in b]
    head, tail = _changed_span(keys_a, keys_b)
    end_a, end_b = len(a) - tail, len(b) - tail
    if (end_a - head) * (end_b - head) > WORD_DIFF_BUDGET:
        ops = [("replace", head, end_a, head, end_b)]
    else:
        matcher = difflib.SequenceMatcher(
            a=keys_a[head:end_a], b=keys_b[head:end_b], autojunk=False
        )
        ops = [
            (tag, i1 + head, i2 + head, j1 + head, j2 + head)
            for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        ]
    ops = [("equal", 0, head, 0, head), *ops, ("equal", end_a, len(a), end_b, len(b))]
    left: list[str] = []
    right: list[str] = []
    for tag, i1, i2, j1, j2 in ops:
        if tag == "equal":
            left.append(str(escape("".join(a[i1:i2]))))
            right.append(str(escape("".join(b[j1:j2]))))
            continue
        if i2 > i1:
            left.append(f"<del>{escape(''.join(a[i1:i2]))}</del>")
        if j2 > j1:
            right.append(f"<ins>{escape(''.join(b[j1:j2]))}</ins>")
    if len(old) > limit:
        left.append(_more(len(old) - limit))
    if len(new) > limit:
        right.append(_more(len(new) - limit))
    return Markup("".join(left)), Markup("".join(right))


def to_text(value: Any) -> str:
    """A value as readable text: strings as they are, anything else as indented JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def value_text(value: Any) -> str:
    """An expected or actual value: one line of JSON when short, indented when long."""
    if isinstance(value, str):
        return value
    line = json.dumps(value, ensure_ascii=False, default=str)
    return line if len(line) <= 80 else to_text(value)


def compact(value: Any) -> str:
    """A value as one line of JSON (strings as they are)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def seconds(value: float | None) -> str:
    """Simulated seconds for people: ``0.85 s``, ``12.3 s``, ``0 s``."""
    if not value:
        return "0 s"
    if value >= 100:
        return f"{value:,.0f} s"
    if value >= 10:
        return f"{value:.1f} s"
    return f"{value:.2f} s"


def bar(start: float, end: float, total: float) -> dict[str, float]:
    """x and width of a span on a 200-unit clock track (always at least a sliver wide)."""
    if total <= 0:
        return {"x": 0.0, "w": 1.0}
    x = min(max(start / total * 200.0, 0.0), 199.0)
    return {"x": round(x, 2), "w": round(max((end - start) / total * 200.0, 1.0), 2)}


def track_svg(item: Item, total: float) -> Markup:
    """An item's bars on the run's simulated clock: one lane per tool call of a plan, so
    parallel calls show side by side in time. Built here, not in the template, because
    it runs for every item of every scenario; it holds only numbers and class names."""
    if total <= 0:
        return Markup("")
    if item.kind == "tools":
        lanes = []
        for lane, call in enumerate(item.calls):
            # A plan validation stopped never ran: its records carry no times of their own.
            span = (
                bar(item.start, item.end, total)
                if item.stopped
                else bar(call.sim_start, call.sim_end, total)
            )
            lanes.append(
                f'<rect x="{span["x"]}" y="{lane * 8 + 2}" width="{span["w"]}" height="6" '
                f'class="tc-{escape(call.status)}"><title>{escape(call.name)}</title></rect>'
            )
        height = len(item.calls) * 8 + 2
        body = "".join(lanes)
    else:
        span = bar(item.start, item.end, total)
        kind = "llm-failed" if item.failed else "llm"
        height = 10
        body = f'<rect x="{span["x"]}" y="2" width="{span["w"]}" height="6" class="{kind}"/>'
    return Markup(
        f'<svg class="track" viewBox="0 0 200 {height}" preserveAspectRatio="none" '
        f'width="100%" height="{height}">{body}</svg>'
    )


def transcript_text(messages: list[Any], limit: int) -> Markup:
    """A transcript as one escaped plain-text log: what large reports show instead of one
    element per message, since parsing text costs a browser far less than elements."""
    parts: list[str] = []
    for message in messages:
        role = message.role
        head = role
        if role == "tool":
            head = f"tool {message.name} · {message.tool_call_id}" + (
                " · error" if message.is_error else ""
            )
        elif role == "assistant" and message.finish_reason:
            head = f"assistant · {message.finish_reason}"
        parts.append(f"── {escape(head)} ──\n")
        if message.content:
            parts.append(clip(message.content, limit) + "\n")
        if role == "assistant":
            for call in message.tool_calls:
                arguments = clip(call.arguments_json(), limit)
                parts.append(f"→ {escape(call.name)} {arguments}  ({escape(call.id)})\n")
    return Markup("".join(parts))


def signed(value: float | None) -> str:
    """A delta with its sign."""
    if value is None:
        return ""
    number = int(value) if float(value).is_integer() else value
    return f"+{number}" if number > 0 else f"{number}"


@cache
def _environment() -> Environment:
    # autoescape=True, not select_autoescape(): the latter decides by file extension
    # and would leave "*.html.j2" unescaped.
    env = Environment(
        loader=PackageLoader("harness.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(clip=clip, compact=compact, seconds=seconds, signed=signed)
    env.filters["text"] = to_text
    env.filters["value"] = value_text
    env.globals["transcript_text"] = transcript_text
    env.globals["word_diff"] = word_diff
    return env


@cache
def _assets() -> dict[str, Any]:
    # The stylesheet and script are ours, not data: mark them safe and allow exactly
    # them in the CSP by hash, so no injected style or script could ever run.
    css, js = _asset("report.css"), _asset("report.js")
    return {
        "css": Markup(css),
        "js": Markup(js),
        "csp": (
            "default-src 'none'; "
            f"style-src {_csp_hash(css)}; "
            f"script-src {_csp_hash(js)}; "
            "img-src 'none'; base-uri 'none'; form-action 'none'"
        ),
    }


# -- charts ----------------------------------------------------------------------------------


def _nice_max(value: float) -> float:
    """A round axis maximum at or above ``value``."""
    if value <= 0:
        return 1.0
    exponent = math.floor(math.log10(value))
    base = 10**exponent
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * base:
            return step * base
    return 10 * base


# Up to this many bars, each carries its scenario's name at the axis; past it, numbered
# ticks (the numbers are the cards' #N) keep the SVG light for 1,000 scenarios.
NAMED_BARS = 24
BAR_LABEL = 16  # characters of a name at the axis
MAX_TICKS = 12


def _tick_step(count: int) -> int:
    """Every how many bars a numbered tick goes, so that there are at most MAX_TICKS."""
    for step in (1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500):
        if count <= step * MAX_TICKS:
            return step
    return math.ceil(count / MAX_TICKS)


def _bars(
    values: list[float],
    names: list[str],
    *,
    seconds_axis: bool = False,
    width: float = 360.0,
    height: float = 100.0,
) -> dict[str, Any]:
    """Geometry of a per-scenario bar chart, one bar per value (same order), with a label
    per bar (its name, when few) or numbered ticks (when many)."""
    top = _nice_max(max(values, default=0.0))
    label = seconds(top) if seconds_axis else f"{top:g}"
    count = max(len(values), 1)
    slot = width / count
    gap = min(slot * 0.2, 2.0)
    named = len(values) <= NAMED_BARS
    bars = []
    for index, value in enumerate(values):
        h = 0.0 if top == 0 else value / top * height
        name = names[index]
        bars.append(
            {
                "x": round(index * slot + gap / 2, 3),
                "y": round(height - h, 3),
                "w": round(max(slot - gap, 0.5), 3),
                "h": round(max(h, 0.0), 3),
                "cx": round((index + 0.5) * slot, 3),
                "name": (name if len(name) <= BAR_LABEL else name[: BAR_LABEL - 1] + "…")
                if named
                else None,
            }
        )
    step = _tick_step(len(values))
    ticks = (
        []
        if named
        else [
            {"n": n, "x": round((n - 0.5) * slot, 3)}
            for n in sorted({1, *range(step, len(values) + 1, step)})
        ]
    )
    return {
        "bars": bars,
        "max": top,
        "label": label,
        "width": width,
        "height": height,
        "named": named,
        "ticks": ticks,
        # Room under the axis: slanted names need more than numbers.
        "below": 64 if named and values else 24,
    }


def _charts(scenarios: list[ScenarioResult], summary: Any) -> dict[str, Any]:
    # In TERMINATIONS order, not by count.
    by_termination = [
        (name, summary.by_termination.get(name, 0))
        for name in TERMINATIONS
        if summary.by_termination.get(name, 0)
    ]
    most = max((n for _, n in by_termination), default=1)
    names = [s.name for s in scenarios]
    terminations = [
        {"name": name, "count": n, "w": round(n / most * 150, 3), "y": i * 22}
        for i, (name, n) in enumerate(by_termination)
    ]
    return {
        "terminations": terminations,
        "terminations_height": max(len(terminations) * 22, 22),
        "iterations": _bars([float(s.iterations) for s in scenarios], names),
        "sim_time": _bars([float(s.sim_time) for s in scenarios], names, seconds_axis=True),
    }


# -- per-scenario views ---------------------------------------------------------------------


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
        message = str(error.get("message", ""))
        known.append(message)
        if error.get("exception"):
            message = f"{error['exception']}: {message}"
        if error.get("status"):
            message = f"HTTP {error['status']}: {message}"
        shown = ("type", "message", "exception", "status")
        details = {k: v for k, v in error.items() if k not in shown and v is not None}
        out.append(
            {
                "kind": str(error.get("type", "error")),
                "message": message,
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
        out.append({"kind": "memory", "message": content, "details": {}, "memory": True})
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
    error = scenario.final.error or {}
    for failure in error.get("errors") or []:
        if isinstance(failure, dict) and "call_id" in failure:
            problems = failure.get("errors") or []
            notes.setdefault(str(failure["call_id"]), {})["invalid"] = format_errors(problems)
    return notes


def _ending(scenario: ScenarioResult) -> str:
    """One line on how the run ended."""
    final = scenario.final
    kind = scenario.termination.value
    if kind == "completed":
        return "Completed with a final response" + (
            " (truncated: finish_reason length)" if final.data.get("truncated") else ""
        )
    if kind == "empty":
        return "Nothing to do: the planner returned an empty action"
    if kind == "stagnation":
        window = final.data.get("window", scenario.stagnation_window)
        return (
            f"Stagnation: the plan repeated the previous {window} identical plans and was declined"
        )
    if kind == "max_iterations":
        limit = (final.error or {}).get("max_iterations", scenario.iterations)
        return f"Max iterations reached ({limit})" + (
            ", with a final answer" if final.content is not None else ""
        )
    if kind == "validation_error":
        return "Stopped: a tool call had invalid arguments, so no call of the plan ran"
    if kind == "llm_error":
        error = final.error or {}
        status = error.get("status")
        return (
            "LLM call failed"
            + (f" (HTTP {status})" if status else "")
            + ": "
            + str(error.get("message", ""))
        )
    if kind == "error":
        error = final.error or {}
        return f"Error: {error.get('exception', 'exception')}: {error.get('message', '')}"
    return kind


class _Call:
    """One tool call as the timeline shows it, its texts escaped and cut already."""

    __slots__ = ("args", "head", "invalid", "is_error", "name", "raw", "result", "status")

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


class _Row:
    """One timeline row: an LLM call or a tool plan, with its place on the clock."""

    __slots__ = (
        "asks",
        "call",
        "calls",
        "choice",
        "content",
        "declined",
        "error",
        "failed",
        "finish",
        "kind",
        "label",
        "lanes",
        "parallel",
        "stopped",
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
    ) -> None:
        self.kind = item.kind
        self.call = item.call
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
        error = str((scenario.final.error or {}).get("message", "")) if item.failed else ""
        self.error = clip(error, limits.reply) if error else None
        count = len(item.calls)
        self.label = f"{'tools' if count > 1 else 'tool'} \u00d7{count}"
        self.calls = [_Call(c, notes.get(c.id, {}), limits) for c in item.calls]
        self.track = track_svg(item, total)
        # The lanes of a parallel plan, top to bottom, by tool name (the bars are in order).
        self.lanes = [clip(c.name, limits.call) for c in item.calls] if count > 1 else []
        self.when = f"{seconds(item.start)} → {seconds(item.end)}" + ("" if item.exact else "*")


def _rows(
    timeline: Timeline, scenario: ScenarioResult, notes: dict[str, dict[str, str]], limits: Limits
) -> dict[int, list[_Row]]:
    """The timeline's rows by iteration number, prepared in one pass (the hot path)."""
    total = timeline.total
    return {
        it.number: [_Row(item, total, scenario, notes, limits) for item in it.items]
        for it in timeline.iterations
    }


# How much of a description the text filter searches (the page shows as much).
SEARCH_DESCRIPTION = 1000


def _search_text(scenario: ScenarioResult) -> str:
    """What the page's text filter matches: id, name, description and tags, lower case."""
    description = (scenario.description or "")[:SEARCH_DESCRIPTION]
    return " ".join([scenario.id, scenario.name, description, *scenario.tags]).lower()


def _scenario_view(index: int, scenario: ScenarioResult, limits: Limits) -> dict[str, Any]:
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
        "ending": _ending(scenario),
        "failed": len(failed),
        "tool_errors": sum(1 for c in scenario.tool_calls if c.is_error),
        # Calls that ran (as tool_calls.count counts them) apart from requested ones
        # that never ran (a declined plan, calls left at the limit).
        "tools_ran": sum(1 for c in scenario.tool_calls if c.status != "not_run"),
        "tools_not_run": sum(1 for c in scenario.tool_calls if c.status == "not_run"),
        "usage": scenario.usage,
        "rows": rows,
        "folds": fold_marks(timeline, rows),
    }


# -- public ---------------------------------------------------------------------------------


def render_html(
    results: Results,
    baseline: BaselineDiff | None = None,
    *,
    title: str = "harness report",
) -> str:
    """The report as one HTML document.

    ``baseline`` is a diff from ``diff_results``; without it, the diff stored in
    ``results.baseline`` (if any) is shown.
    """
    # Rendering allocates many short-lived objects next to the results, which are large
    # (millions of objects for a big suite): every full collection would walk them all.
    # Nothing made here needs the cycle collector, so it pauses for the render (a third
    # of the time for 1,000 scenarios) and runs again after.
    paused = gc.isenabled()
    gc.disable()
    try:
        return _render(results, baseline, title)
    finally:
        if paused:
            gc.enable()


def _render(results: Results, baseline: BaselineDiff | None, title: str) -> str:
    diff = baseline if baseline is not None else results.baseline
    scenarios = list(results.scenarios)
    limits = Limits.for_results(results)
    views = [_scenario_view(i, s, limits) for i, s in enumerate(scenarios)]
    anchors = {v["s"].id: v["anchor"] for v in views}
    # Counted from the scenarios shown, so the page agrees with itself even when a
    # results file's summary was edited or is stale.
    summary = Summary.of(scenarios)
    statuses = [(name, summary.by_status.get(name, 0)) for name in STATUSES]
    terminations = [(name, count) for name, count in summary.by_termination.items() if count]
    order = {name: i for i, name in enumerate(TERMINATIONS)}
    terminations.sort(key=lambda item: (order.get(item[0], len(order)), item[0]))
    versions = results.meta.get("versions") if isinstance(results.meta, dict) else None
    template = _environment().get_template("report.html.j2")
    return template.render(
        title=title,
        results=results,
        summary=summary,
        statuses=statuses,
        terminations=terminations,
        started=results.meta.get("started") if isinstance(results.meta, dict) else None,
        versions=versions if isinstance(versions, dict) else {},
        charts=_charts(scenarios, summary),
        scenarios=views,
        diff=diff,
        anchors=anchors,
        limits=limits,
        messages=sum(len(s.transcript) for s in scenarios),
        **_assets(),
    )


def write_html(
    path: str | Path,
    results: Results,
    baseline: BaselineDiff | None = None,
    *,
    title: str = "harness report",
) -> Path:
    """Render the report and write it to ``path`` atomically; returns the path."""
    target = Path(path)
    # Masked before rendering (texts are clipped there) and after (the baseline's texts).
    html = render_html(scrub_model(results), baseline, title=title)
    atomic_write(target, scrub_text(html))
    return target
