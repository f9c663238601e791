"""Render results (and a baseline diff) into one self-contained HTML file.

Everything the page needs is inline: CSS, SVG charts and a few lines of script for
the filters. Untrusted text (model output, tool results, scenario names) only ever
reaches the page through Jinja's autoescaping, and a Content-Security-Policy that
allows nothing but this page's own style and script (by hash) stands behind it.

The output is deterministic: the same results give byte-identical HTML. The page is
made in steps: ``markup`` (escaped, clipped text), ``charts`` (SVG geometry),
``views`` (one scenario's card) and here the template around them.
"""

from __future__ import annotations

import base64
import gc
import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, get_args

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from harness._baseline import BaselineDiff
from harness._files import atomic_write
from harness._results import Results, ScenarioResult, Status, Summary
from harness._secrets import scrub_model, scrub_text
from harness._sections import Section
from harness._spool import read_as
from harness.report._cards import PACK_AFTER, Surveyed, cards, index_view
from harness.report._changes import (
    divergence_lines,
    rate_sentence,
    rate_test_sentence,
    repeats_text,
    sequential_text,
)
from harness.report._charts import TERMINATIONS, bars_svg, scenario_charts
from harness.report._coverage import coverage_view
from harness.report._markup import (
    clip,
    compact,
    seconds,
    signed,
    stderr_apart,
    to_text,
    transcript_text,
    value_text,
    word_diff,
)
from harness.report._matrix import matrix_view
from harness.report._repeats import FlakySides, repeats_view
from harness.report._sections import gathered_sections, html_views
from harness.report._views import Limits

__all__ = ["render_html", "write_html"]

STATUSES: tuple[str, ...] = get_args(Status)


# -- jinja environment ----------------------------------------------------------------------


def _asset(name: str) -> str:
    return resources.files("harness.report").joinpath("templates", name).read_text("utf-8")


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


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
    env.filters["stderr_apart"] = stderr_apart
    env.globals["transcript_text"] = transcript_text
    env.globals["word_diff"] = word_diff
    env.globals["rate_sentence"] = rate_sentence
    env.globals["rate_test_sentence"] = rate_test_sentence
    env.globals["sequential_text"] = sequential_text
    env.globals["repeats_text"] = repeats_text
    env.globals["divergence_lines"] = divergence_lines
    env.globals["bars_svg"] = bars_svg
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


# -- public ---------------------------------------------------------------------------------


def render_html(
    results: Results,
    baseline: BaselineDiff | None = None,
    *,
    title: str = "harness report",
    packed: bool | None = None,
    sections: Sequence[Section] | None = None,
) -> str:
    """The report as one HTML document.

    ``baseline`` is a diff from ``diff_results``; without it, the diff stored in
    ``results.baseline`` (if any) is shown. ``packed``: card bodies packed, opened on a
    click (default: past PACK_AFTER scenarios). ``sections``: the report sections, as
    ``harness.report._sections.gather_sections`` gave them (default: gathered from the
    default plugins).
    """
    return "".join(_generate(results, baseline, title, packed, sections))


def _generate(
    results: Results,
    baseline: BaselineDiff | None,
    title: str,
    packed: bool | None,
    sections: Sequence[Section] | None,
) -> Iterator[str]:
    """The document in pieces, made as they are written: one card at a time."""
    # Rendering allocates many short-lived objects next to the results, which are large
    # (millions of objects for a big suite): every full collection would walk them all.
    # Nothing made here needs the cycle collector, so it pauses for the render (a third
    # of the time for 1,000 scenarios) and runs again after.
    paused = gc.isenabled()
    gc.disable()
    try:
        shown = html_views(gathered_sections(results, sections))
        yield from _render(results, baseline, title, packed, shown)
    finally:
        if paused:
            gc.enable()


def _render(
    results: Results,
    baseline: BaselineDiff | None,
    title: str,
    packed: bool | None,
    sections: list[dict[str, Any]],
) -> Iterator[str]:
    diff = baseline if baseline is not None else results.baseline
    # One pass for what the page's top needs, one more for the cards: results.scenarios
    # may be read from disk (a large suite's), and is never held whole.
    index, sides, messages = _survey(results.scenarios)
    digests = [view["s"] for view in index]
    anchors = {d.id: v["anchor"] for d, v in zip(digests, index, strict=True)}
    limits = Limits.for_messages(messages)
    # Counted from the scenarios shown, so the page agrees with itself even when a
    # results file's summary was edited or is stale.
    summary = Summary.of(digests)
    statuses = [(name, summary.by_status.get(name, 0)) for name in STATUSES]
    terminations = [(name, count) for name, count in summary.by_termination.items() if count]
    order = {name: i for i, name in enumerate(TERMINATIONS)}
    terminations.sort(key=lambda item: (order.get(item[0], len(order)), item[0]))
    versions = results.meta.get("versions")
    env = _environment()
    template = env.get_template("report.html.j2")
    if packed is None:
        packed = len(index) > PACK_AFTER
    body = None
    if packed:
        module = env.get_template("macros.html.j2").make_module(
            {"limits": limits, "anchors": anchors}
        )
        scenario_body: Callable[[dict[str, Any]], Markup] = module.scenario_body  # type: ignore[attr-defined]

        def body(view: dict[str, Any]) -> Markup:
            # Masked here: write_html's masking of the page cannot see into a packed body.
            return Markup(scrub_text(str(scenario_body(view))))

    yield from template.generate(
        title=title,
        results=results,
        summary=summary,
        statuses=statuses,
        terminations=terminations,
        started=results.meta.get("started"),
        versions=versions if isinstance(versions, dict) else {},
        charts=scenario_charts(digests, summary),
        index=index,
        cards=cards(_masked(results.scenarios), limits, body),
        packed=packed,
        diff=diff,
        anchors=anchors,
        repeats=repeats_view(digests, anchors, sides),
        matrix=matrix_view(digests, anchors),
        coverage=coverage_view(results.coverage, anchors),
        sections=sections,
        limits=limits,
        messages=messages,
        **_assets(),
    )


def _survey(
    scenarios: Sequence[ScenarioResult],
) -> tuple[list[dict[str, Any]], FlakySides, int]:
    """What the page's top needs, in one pass: each scenario's index entry (with its
    digest), the flaky scenarios' two sides, and how many transcript messages there are.
    Scenarios on disk are read into those fields only (Surveyed)."""
    index: list[dict[str, Any]] = []
    sides = FlakySides()
    messages = 0
    for i, scenario in enumerate(read_as(scenarios, Surveyed)):
        view = index_view(i, scenario)
        index.append(view)
        if scenario.repeats is not None and scenario.repeats.flaky:
            whole = scenario if isinstance(scenario, ScenarioResult) else scenarios[i]
            sides.add(scrub_model(whole), view["anchor"])  # masked before it is shortened
        messages += len(scenario.transcript)
    return index, sides, messages


def _masked(scenarios: Iterable[ScenarioResult]) -> Iterator[ScenarioResult]:
    """Each scenario with its secret values masked (before the page shortens its texts)."""
    for scenario in scenarios:
        yield scrub_model(scenario)


def write_html(
    path: str | Path,
    results: Results,
    baseline: BaselineDiff | None = None,
    *,
    title: str = "harness report",
    packed: bool | None = None,
    sections: Sequence[Section] | None = None,
) -> Path:
    """Render the report and write it to ``path`` atomically; returns the path
    (``packed`` and ``sections`` as for ``render_html``)."""
    target = Path(path)
    # Masked before rendering (texts are clipped there) and after (the baseline's texts).
    # Written as it is made: a large report is never whole in memory.
    head = results.model_copy(update={"scenarios": []})
    masked = scrub_model(head).model_copy(update={"scenarios": results.scenarios})
    pieces = _generate(masked, baseline, title, packed, sections)
    atomic_write(target, (scrub_text(piece) for piece in pieces))
    return target
