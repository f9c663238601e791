"""The report's SVG geometry: the summary charts and each timeline row's clock track.

Built in Python, not in the templates, because they run for every scenario (and every
timeline item); they hold only numbers, class names and escaped names.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from markupsafe import Markup, escape

from harness._actions import Termination
from harness.report._markup import clip, seconds
from harness.report._timeline import Item


class Charted(Protocol):
    """What a chart reads of a scenario."""

    @property
    def name(self) -> str: ...
    @property
    def iterations(self) -> int: ...
    @property
    def sim_time(self) -> float: ...


__all__ = ["LANE", "TERMINATIONS", "bar", "bars_svg", "scenario_charts", "track_svg"]

# In the order of the Termination enum (the loop's order of events).
TERMINATIONS = tuple(t.value for t in Termination)


def bar(start: float, end: float, total: float) -> dict[str, float]:
    """x and width of a span on a 200-unit clock track (always at least a sliver wide)."""
    if total <= 0:
        return {"x": 0.0, "w": 1.0}
    x = min(max(start / total * 200.0, 0.0), 199.0)
    return {"x": round(x, 2), "w": round(max((end - start) / total * 200.0, 1.0), 2)}


# Height in px of a tool call's lane on a clock track; the CSS gives the lanes' names
# (.lanes) this line height, so that each name sits beside its bar.
LANE = 14


def track_svg(item: Item, total: float, wall: bool = False) -> Markup:
    """An item's bars on the run's clock (simulated, or the wall clock: ``wall``): one lane
    per tool call of a plan, so parallel calls show side by side in time. Built here, not in
    the template, because it runs for every item of every scenario; it holds only numbers
    and class names."""
    if total <= 0:
        return Markup("")
    if item.kind == "tools":
        # One LANE px per call, as tall as a line of the lane's name beside it (the
        # names would overlap in less).
        lanes = []
        for lane, call in enumerate(item.calls):
            # A plan validation stopped never ran: its records carry no times of their own;
            # nor does a plan on the wall clock (the plan's place is its calls').
            span = (
                bar(item.start, item.end, total)
                if item.stopped or wall
                else bar(call.sim_start, call.sim_end, total)
            )
            lanes.append(
                f'<rect x="{span["x"]}" y="{lane * LANE + 4}" width="{span["w"]}" height="6" '
                f'class="tc-{escape(call.status)}"><title>{escape(call.name)}</title></rect>'
            )
        height = len(item.calls) * LANE
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


class _Bars:
    """A per-scenario chart's bars, each made as the template reaches it: a suite of
    20,000 scenarios would otherwise keep 40,000 dicts until the page's top is written."""

    def __init__(
        self, values: list[float], names: list[str], top: float, width: float, height: float
    ) -> None:
        self.values, self.names, self.top = values, names, top
        self.width, self.height = width, height

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        top, height, names = self.top, self.height, self.names
        slot = self.width / max(len(self.values), 1)
        gap = min(slot * 0.2, 2.0)
        named = len(self.values) <= NAMED_BARS
        for index, value in enumerate(self.values):
            h = 0.0 if top == 0 else value / top * height
            name = names[index]
            yield {
                "x": round(index * slot + gap / 2, 3),
                "y": round(height - h, 3),
                "w": round(max(slot - gap, 0.5), 3),
                "h": round(max(h, 0.0), 3),
                "cx": round((index + 0.5) * slot, 3),
                "name": (name if len(name) <= BAR_LABEL else name[: BAR_LABEL - 1] + "…")
                if named
                else None,
            }


def bars_svg(chart: dict[str, Any], views: Sequence[dict[str, Any]], key: str) -> Markup:
    """A per-scenario chart's bars, each a link to its scenario's card (``views``: the
    report's index, in the bars' order; ``key``: the value shown, ``sim_time`` or
    ``iterations``). Made here, not by a loop in the template, which gathered the pieces of
    every bar before the chart was written: 25 MB for a suite of 20,000 scenarios."""
    below = chart["height"] + 6
    rows = []
    for bar, view in zip(chart["bars"], views, strict=True):
        digest = view["s"]
        shown = seconds(digest.sim_time) if key == "sim_time" else f"{digest.iterations} iterations"
        name = bar["name"]
        label = (
            ""
            if name is None
            else f'<text transform="translate({bar["cx"]} {below}) rotate(-40)" class="bl">'
            f"{escape(name)}</text>"
        )
        rows.append(
            f'    <a href="#{escape(view["anchor"])}"><rect x="{bar["x"]}" y="{bar["y"]}" '
            f'width="{bar["w"]}" height="{bar["h"]}" class="st-{escape(view["status"])}">'
            f"<title>#{view['number']} {clip(digest.name, 120)}: {escape(shown)}</title>"
            f"</rect>{label}</a>"
        )
    return Markup("\n".join(rows))


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
    named = len(values) <= NAMED_BARS
    step = _tick_step(len(values))
    slot = width / max(len(values), 1)
    ticks = (
        []
        if named
        else [
            {"n": n, "x": round((n - 0.5) * slot, 3)}
            for n in sorted({1, *range(step, len(values) + 1, step)})
        ]
    )
    return {
        "bars": _Bars(values, names, top, width, height),
        "max": top,
        "label": label,
        "width": width,
        "height": height,
        "named": named,
        "ticks": ticks,
        # Room under the axis: slanted names need more than numbers.
        "below": 64 if named and values else 24,
    }


def scenario_charts(scenarios: Sequence[Charted], summary: Any) -> dict[str, Any]:
    """Geometry of the report's charts: terminations, iterations and simulated time
    (``scenarios``: results, or the digests the report keeps of them)."""
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
