"""The run as Markdown, for a pull-request comment or a CI job's summary: the counts, what
did not pass, repeated scenarios' pass rates, skips, the report sections (the budget's and
plugins', harness.report._sections), and the baseline diff with its values.

Model output, tool results, names and ids are untrusted: every such text is put in a code
span (a fence longer than any run of backticks in it), where GitHub shows it literally, so
it can make no link, image, mention or HTML; newlines are folded, and ``|`` is escaped in
tables. The same results give the same text (no times but the run's own counts).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from harness._baseline import BaselineDiff
from harness._repeats import Repeats
from harness._results import Results, ScenarioResult
from harness._sections import Section
from harness.report._changes import (
    change_details,
    counted,
    divergence_lines,
    percent,
    rate_sentence,
    rate_test_sentence,
    repeats_text,
    shorten,
)
from harness.report._coverage import markdown_lines
from harness.report._sections import gathered_sections, markdown_section_lines
from harness.report._text import ending_sentence

__all__ = ["code", "render_markdown"]

# Each list names at most this many scenarios; the rest are counted (the report has all).
_LISTED = 50


def code(text: str, limit: int = 200) -> str:
    """``text`` as an inline code span, shortened to one line, literal in any renderer."""
    text = shorten(text, limit)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _cell(text: str) -> str:
    """A table cell: a code span with its pipes escaped (GitHub's tables split on them)."""
    return code(text, 120).replace("|", "\\|")


def _listed(lines: Iterable[str], count: int) -> list[str]:
    lines = list(lines)
    if count > _LISTED:
        lines.append(f"- … and {count - _LISTED} more (see the HTML report)")
    return lines


def _head(results: Results) -> list[str]:
    s = results.summary
    statuses = ", ".join(f"{n} {k}" for k, n in s.by_status.items()) or "none"
    terminations = ", ".join(f"{k} {n}" for k, n in s.by_termination.items())
    failing = results.failing()
    verdict = "all passed" if not failing else f"{len(failing)} not passed"
    lines = [
        f"## harness: {s.total} scenario run(s), {verdict}",
        "",
        f"**{statuses}**; simulated time {s.sim_time:.2f}s",
    ]
    if terminations:
        lines.append(f"Terminations: {terminations}")
    return lines


def _not_passed(results: Results) -> list[str]:
    # The first few listed, the rest counted: results.scenarios is read once, and only
    # the lines listed are kept.
    shown: list[str] = []
    count = 0
    for s in results.scenarios:
        if s.status != "passed" and (s.repeats is None or s.repeats.min_pass_rate is None):
            count += 1
            if len(shown) < _LISTED:
                shown.append(_failure(s))
    if not count:
        return []
    lines = ["", "### Not passed", ""]
    lines.extend(_listed(iter(shown), count))
    return lines


def _failure(scenario: ScenarioResult) -> str:
    unmet = [e.path for e in scenario.failed_expectations]
    why = f"unmet: {', '.join(unmet)}" if unmet else ending_sentence(scenario)
    return f"- {code(scenario.id)} {scenario.status}: {code(why, 160)}"


def _repeats(results: Results) -> list[str]:
    groups: dict[str, Repeats] = {}
    for s in results.counted():
        if s.repeats is not None:
            groups.setdefault(s.scenario_key, s.repeats)
    if not groups:
        return []
    lines = [
        "",
        "### Repeated scenarios",
        "",
        "| scenario | runs passed | pass rate (95% CI) | needed | verdict |",
        "| --- | ---: | --- | ---: | --- |",
    ]
    for key, r in list(groups.items())[:_LISTED]:
        needed = percent(r.min_pass_rate) if r.min_pass_rate is not None else "every run"
        interval = f" ({percent(r.interval[0])}-{percent(r.interval[1])})" if r.interval else ""
        verdict = "passes" if r.passes else "**fails**"
        lines.append(
            f"| {_cell(key)} | {r.passed}/{r.runs} | {percent(r.pass_rate)}{interval} "
            f"| {needed} | {verdict} |"
        )
    diverging = [(k, r) for k, r in groups.items() if r.divergence is not None]
    for key, r in diverging[:_LISTED]:
        assert r.divergence is not None
        first, *variants = divergence_lines(r.divergence)
        lines.extend(["", f"{code(key)} ({repeats_text(r)}): {first}"])
        lines.extend(f"- {code(v.strip())}" for v in variants)
    return lines


def _skipped(results: Results) -> list[str]:
    if not results.skipped:
        return []
    lines = ["", f"### Skipped ({len(results.skipped)})", ""]
    entries = (f"- {code(s.id)}: {code(s.reason, 160)}" for s in results.skipped[:_LISTED])
    return lines + _listed(entries, len(results.skipped))


def _diff(diff: BaselineDiff) -> list[str]:
    counts = ", ".join(counted(n, k) for k, n in diff.counts().items())
    not_run = f", {len(diff.not_run)} not run" if diff.not_run else ""
    source = f" ({code(diff.source)})" if diff.source else ""
    lines = ["", f"### Changes since the baseline{source}", "", f"{counts}{not_run}"]
    if diff.regressions:
        lines += ["", "**Regressions**", ""]
        for entry in diff.status_regressions[:_LISTED]:
            unmet = ", ".join(entry.failed_expectations)
            lines.append(
                f"- {code(entry.id)}: {entry.old_status} → {entry.new_status}"
                + (f" (unmet: {code(unmet)})" if unmet else "")
            )
        test = diff.rate_test
        lines.extend(f"- {code(r.id)}: {rate_sentence(r, test)}" for r in diff.rate_regressions)
    others = [r for r in diff.pass_rates if r.verdict != "regression"]
    if others:
        lines += ["", "**Pass rates that moved within noise or rose**", ""]
        lines.extend(f"- {code(r.id)}: {rate_sentence(r, diff.rate_test)}" for r in others)
    if diff.rate_test is not None and diff.pass_rates:
        lines += ["", rate_test_sentence(diff.rate_test)]
    if diff.fixed:
        lines += ["", "**Fixed**", ""]
        lines.extend(f"- {code(e.id)}: {e.old_status} → passed" for e in diff.fixed[:_LISTED])
    if diff.changed:
        lines += ["", "**Changed**", ""]
        for change in diff.changed[:_LISTED]:
            lines.append(f"- {code(change.id)}")
            lines.extend(f"  - {code(line)}" for line in change_details(change))
        lines.extend(_listed([], len(diff.changed)))
    if diff.no_longer_covered:
        lines += ["", "**No longer covered**", ""]
        entries = (f"- {code(f'{c.kind} {c.key}')}" for c in diff.no_longer_covered[:_LISTED])
        lines.extend(_listed(entries, len(diff.no_longer_covered)))
    for title, refs in (("Added", diff.added), ("Removed", diff.removed)):
        if refs:
            lines += ["", f"**{title}**", ""]
            entries = (f"- {code(r.id)} ({r.status})" for r in refs[:_LISTED])
            lines.extend(_listed(entries, len(refs)))
    return lines


def render_markdown(
    results: Results, *, report: str | None = None, sections: Sequence[Section] | None = None
) -> str:
    """The summary, the report sections and the baseline diff (when ``results`` holds
    one) as Markdown; ``report``: the HTML report's path, named at the end; ``sections``:
    as ``gather_sections`` gave them (default: gathered from the default plugins)."""
    lines = _head(results)
    if results.coverage is not None:
        lines += markdown_lines(results.coverage, code)
    lines += _not_passed(results)
    lines += _repeats(results)
    lines += _skipped(results)
    lines += markdown_section_lines(gathered_sections(results, sections), code)
    if results.baseline is not None:
        lines += _diff(results.baseline)
    if report is not None:
        lines += ["", f"The whole report: {code(report)}"]
    return "\n".join(lines) + "\n"
