"""Report sections (``harness.plugin.Section``): gathered once through the hook
``harness_report_sections``, then rendered by each medium: terminal lines, Markdown lines
and the HTML report's view.

harness's own sections come from an ordinary plugin, ``harness.report._summary`` (named
``harness.report.summary``), called first; then each plugin's, in registration order. A
plugin that raises or returns something else is one line in ``Gathered.errors`` naming
it, and the reports go on without its sections. docs/plugins.md#a-section-of-the-report
says it for users.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness._errors import printable
from harness._secrets import scrub_text
from harness._sections import Section, Table

if TYPE_CHECKING:
    from harness._plugins import Plugins
    from harness._results import Results

__all__ = [
    "BUILT_IN",
    "Gathered",
    "gather_sections",
    "gathered_sections",
    "html_views",
    "markdown_section_lines",
    "text_section_lines",
]

# harness's own sections' plugin: a report-layer module, so it is called here and not
# listed in harness._plugins.DEFAULT_PLUGINS (whose modules every Agent imports). Its name
# is its module's without the private mark, as every built-in's (builtin_name):
# HARNESS_DISABLE_PLUGINS blocks it by that name.
BUILT_IN = "harness.report.summary"

# A list or table shows this many entries in the terminal, and in Markdown; the HTML
# report shows every one.
_TEXT_SHOWN = 20
_MARKDOWN_SHOWN = 50
# A Markdown paragraph, list item or table cell is cut at this many characters.
_MARKDOWN_TEXT = 1000
_MARKDOWN_ITEM = 200
_MARKDOWN_CELL = 120


@dataclass(frozen=True)
class Gathered:
    """The sections for one set of reports, and one line per plugin that failed."""

    sections: tuple[Section, ...] = ()
    errors: tuple[str, ...] = field(default=())


def gather_sections(results: Results, plugins: Plugins | None = None) -> Gathered:
    """Ask the built-in summary plugin, then each plugin of ``plugins`` (default:
    ``harness._plugins.default_plugins()``), for their sections."""
    if plugins is None:
        from harness._plugins import default_plugins

        plugins = default_plugins()
    sections: list[Section] = []
    errors: list[str] = []
    for name, function in _implementations(plugins):
        try:
            returned = function(results=results)
            sections.extend(_masked(section) for section in _sections_of(returned))
        except Exception as exc:
            errors.append(_failure(name, exc))
    return Gathered(tuple(sections), tuple(errors))


def _implementations(plugins: Plugins) -> Iterator[tuple[str, Callable[..., Any]]]:
    """(plugin name, its hook function): the built-in first, then oldest first."""
    if not plugins.pm.is_blocked(BUILT_IN):
        from harness.report import _summary

        yield BUILT_IN, _summary.harness_report_sections
    # One by one, so a failure names its plugin and costs only that plugin's sections.
    for impl in plugins.hook.harness_report_sections.get_hookimpls():
        yield impl.plugin_name, impl.function


def _sections_of(returned: object) -> list[Section]:
    if returned is None:
        return []
    if isinstance(returned, Section):
        return [returned]
    if isinstance(returned, list | tuple) and all(isinstance(s, Section) for s in returned):
        return list(returned)
    raise _Returned(type(returned).__name__)


def _masked(section: Section) -> Section:
    """The section with secret values masked in every text, before any medium changes
    them (Markdown's escapes would hide a key from the masking of the written file)."""

    def mask(block: str | tuple[str, ...] | Table) -> str | tuple[str, ...] | Table:
        if isinstance(block, str):
            return scrub_text(block)
        if isinstance(block, tuple):
            return tuple(scrub_text(item) for item in block)
        rows = [[scrub_text(cell) for cell in row] for row in block.rows]
        return Table([scrub_text(c) for c in block.columns], rows)

    return Section(scrub_text(section.title), [mask(block) for block in section.blocks])


class _Returned(Exception):
    """A hook returned something that is not sections."""


def _failure(name: str, exc: Exception) -> str:
    if isinstance(exc, _Returned):
        why = (
            f"returned a {exc}, not a harness.plugin.Section, a list of them or None; "
            "its sections are left out"
        )
    else:
        first = (str(exc).strip().splitlines() or [""])[0]
        why = f"raised {type(exc).__name__}" + (f": {first}" if first else "")
        why += "; its sections are left out"
    return printable(scrub_text(f"plugin {name}: harness_report_sections {why}"))


# -- the terminal --------------------------------------------------------------------------


def text_section_lines(sections: Iterable[Section]) -> list[str]:
    """Each section as the terminal summary shows it: ``title:``, then its blocks indented."""
    lines: list[str] = []
    for section in sections:
        lines.append(f"{section.title}:")  # as the summary's own "slowest:"
        for block in section.blocks:
            lines.extend("  " + line for line in _text_block(block))
    # A plugin's text may hold what a terminal would act on (an escape code).
    return [printable(scrub_text(line)) for line in lines]


def _text_block(block: str | tuple[str, ...] | Table) -> list[str]:
    if isinstance(block, str):
        return block.splitlines() or [""]
    if isinstance(block, tuple):
        return _shown([" ".join(item.split()) for item in block], _TEXT_SHOWN, _text_more)
    rows = [block.columns, *block.rows[:_TEXT_SHOWN]]
    rows = [tuple(" ".join(cell.split()) for cell in row) for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(block.columns))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    return lines + _shown([], _TEXT_SHOWN, _text_more, len(block.rows))


def _text_more(hidden: int) -> str:
    return f"... and {hidden} more (the HTML report lists every one)"


def _shown(
    lines: list[str], limit: int, more: Callable[[int], str], count: int | None = None
) -> list[str]:
    """The first ``limit`` lines, and a line counting the rest (of ``count`` in all)."""
    count = len(lines) if count is None else count
    if count <= limit:
        return lines
    return [*lines[:limit], more(count - limit)]


# -- Markdown ------------------------------------------------------------------------------

# Every ASCII punctuation character may be backslash-escaped in CommonMark: the title is
# then literal (no link, emphasis, HTML or heading marks).
_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def markdown_section_lines(sections: Iterable[Section], code: Callable[..., str]) -> list[str]:
    """Each section as Markdown: a ``###`` heading, then its blocks, each text in a code
    span (``code``: the Markdown module's), where GitHub shows it literally."""
    lines: list[str] = []
    for section in sections:
        title = _PUNCTUATION.sub(r"\\\1", " ".join(section.title.split()))
        lines.extend(["", f"### {title}"])
        for block in section.blocks:
            lines.append("")
            lines.extend(_markdown_block(block, code))
    return lines


def _markdown_block(block: str | tuple[str, ...] | Table, code: Callable[..., str]) -> list[str]:
    if isinstance(block, str):
        return [code(block, _MARKDOWN_TEXT)]
    if isinstance(block, tuple):
        items = [f"- {code(item, _MARKDOWN_ITEM)}" for item in block]
        return _shown(items, _MARKDOWN_SHOWN, _markdown_more)

    def row(cells: Sequence[str]) -> str:
        # GitHub splits a table row on every pipe, in a code span too.
        return "| " + " | ".join(code(c, _MARKDOWN_CELL).replace("|", "\\|") for c in cells) + " |"

    lines = [row(block.columns), "|" + " --- |" * len(block.columns)]
    lines.extend(row(cells) for cells in block.rows[:_MARKDOWN_SHOWN])
    return lines + _shown([], _MARKDOWN_SHOWN, _markdown_more, len(block.rows))


def _markdown_more(hidden: int) -> str:
    return f"- … and {hidden} more (see the HTML report)"


# -- HTML ----------------------------------------------------------------------------------


def html_views(sections: Iterable[Section]) -> list[dict[str, Any]]:
    """What the HTML report's template shows of each section (its text escaped there):
    an anchor, the title, and each block as ``("p", text)``, ``("ul", items)`` or
    ``("table", (columns, rows))``."""
    views: list[dict[str, Any]] = []
    taken: set[str] = set()
    for section in sections:
        slug = re.sub(r"[^a-z0-9]+", "-", section.title.lower()).strip("-") or "section"
        anchor, n = f"section-{slug}", 1
        while anchor in taken:
            n += 1
            anchor = f"section-{slug}-{n}"
        taken.add(anchor)
        blocks = [_html_block(block) for block in section.blocks]
        views.append({"anchor": anchor, "title": section.title, "blocks": blocks})
    return views


def _html_block(block: str | tuple[str, ...] | Table) -> tuple[str, Any]:
    if isinstance(block, str):
        return ("p", block)
    if isinstance(block, tuple):
        return ("ul", block)
    return ("table", (block.columns, block.rows))


def gathered_sections(results: Results, sections: Sequence[Section] | None) -> Sequence[Section]:
    """``sections`` as given, or gathered from the default plugins (a renderer called
    without them); a plugin that fails then raises, as the one line saying so."""
    if sections is not None:
        return sections
    gathered = gather_sections(results)
    if gathered.errors:
        from harness._plugins import PluginError

        raise PluginError(gathered.errors[0])
    return gathered.sections
