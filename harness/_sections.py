"""A report section: a title and a little neutral content, rendered by every medium.

The terminal summary, the Markdown summary and the HTML report each render a ``Section``
their own way (``harness.report.sections``); a plugin returns sections from the hook
``harness_report_sections`` (docs/plugins.md#a-section-of-the-report), and harness's own
summary sections that read alike in every medium come through the same hook.

The content is plain text in three shapes: a paragraph (``str``), a list (a list or
tuple of ``str``) and a table (``Table``). Text is literal in every medium: no markup of
any medium reaches the output (HTML escapes it, Markdown puts it in code spans).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Block", "Section", "Table"]


@dataclass(frozen=True)
class Table:
    """A table: a header row (``columns``) and rows of as many cells."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...] = ()

    def __init__(self, columns: Sequence[str], rows: Sequence[Sequence[str]] = ()) -> None:
        heads = _texts(columns, "Table columns")
        cells = tuple(_texts(row, "a Table row") for row in rows)
        for row in cells:
            if len(row) != len(heads):
                raise ValueError(
                    f"a Table row has {len(row)} cell(s), its columns {len(heads)}: {row!r}"
                )
        object.__setattr__(self, "columns", heads)
        object.__setattr__(self, "rows", cells)


# A paragraph, a list of items, or a table.
Block = str | tuple[str, ...] | Table


@dataclass(frozen=True)
class Section:
    """A titled part of the report: ``Section("Cost", ["3 runs cost $0.12", ["a", "b"]])``.

    ``blocks``: each a paragraph (``str``), a list (a list or tuple of ``str``) or a
    ``Table``, shown in order.
    """

    title: str
    blocks: tuple[Block, ...] = ()

    def __init__(self, title: str, blocks: Sequence[str | Sequence[str] | Table] = ()) -> None:
        if not isinstance(title, str) or not title.strip():
            raise ValueError(f"a Section's title must be a non-empty str, not {title!r}")
        if isinstance(blocks, str | Table):
            blocks = [blocks]  # one block given alone
        object.__setattr__(self, "title", title)
        object.__setattr__(self, "blocks", tuple(_block(b) for b in blocks))


def _block(block: object) -> Block:
    if isinstance(block, str | Table):
        return block
    if isinstance(block, list | tuple):
        return _texts(block, "a Section's list")
    raise ValueError(
        f"a Section's block is a str (a paragraph), a list of str or a Table, "
        f"not {type(block).__name__}"
    )


def _texts(values: object, what: str) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, list | tuple):
        raise ValueError(f"{what} must be a list of str, not {type(values).__name__}")
    wrong = [v for v in values if not isinstance(v, str)]
    if wrong:
        raise ValueError(f"{what} must hold str only, not {type(wrong[0]).__name__}")
    return tuple(values)
