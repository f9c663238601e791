"""Which iterations of a long run fold in the report: runs of alike ones.

An iteration's shape is what it did without its texts (the tools asked for and run, with
their statuses); three or more alike iterations in a row, or request-and-tools pairs, show
their first and last and fold the rest. The stagnation window never folds. Alike is not
identical: the fold says which tools had other arguments in it.
"""

from __future__ import annotations

from typing import Any

from harness.report._timeline import Timeline

__all__ = ["FOLD_AT", "fold_marks"]


def _shape(iteration: Any, rows: list[Any]) -> tuple[Any, ...]:
    """What an iteration looks like, without its texts: alike iterations fold together."""
    if iteration.in_window:
        return ("window", iteration.number)  # the stagnation window always shows whole
    return (
        tuple(
            (r.kind, r.asks, r.failed, r.declined, r.stopped, tuple(c.status for c in r.calls))
            if r.kind == "llm"
            else (r.kind, r.declined, r.stopped, tuple((c.name, c.status) for c in r.calls))
            for r in rows
        ),
    )


# Runs of at least this many alike iterations (or pairs of them: agentbuilder alternates
# a request and a tool plan) fold, keeping the first and the last in view.
FOLD_AT = 3


def _folds(shapes: list[tuple[Any, ...]]) -> list[tuple[int, int]]:
    """(first, last) positions of the iterations to fold: runs of repeated units.

    A unit is one iteration, or two (agentbuilder's request then tools); a run of
    FOLD_AT or more units shows its first and last unit and folds the rest.
    """
    folds, i, n = [], 0, len(shapes)
    while i < n:
        for period in (1, 2):
            j = i + period
            while j < n and shapes[j] == shapes[j - period]:
                j += 1
            units = (j - i) // period
            if units >= FOLD_AT:
                folds.append((i + period, i + (units - 1) * period - 1))
                i += units * period
                break
        else:
            i += 1
    return folds


def _differing(folded: list[list[Any]]) -> list[dict[str, Any]]:
    """Per tool whose calls in the folded iterations had other arguments: how many
    different ones, the first and the last (alike iterations need not be identical, and
    a fold must not hide that)."""
    seen: dict[str, list[Any]] = {}
    for rows in folded:
        for row in rows:
            for call in row.calls:
                args = seen.setdefault(call.name, [])
                if call.args not in args:
                    args.append(call.args)
    return [
        {"name": name, "count": len(args), "first": args[0], "last": args[-1]}
        for name, args in seen.items()
        if len(args) > 1
    ]


def fold_marks(timeline: Timeline, rows: dict[int, list[Any]]) -> dict[int, dict[str, Any]]:
    """Per iteration number in a fold: its fold number, and on the first one the fold's
    size and the tools whose arguments differ in it."""
    numbers = [it.number for it in timeline.iterations]
    shapes = [_shape(it, rows[it.number]) for it in timeline.iterations]
    marks: dict[int, dict[str, Any]] = {}
    for fold, (first, last) in enumerate(_folds(shapes), 1):
        for position in range(first, last + 1):
            marks[numbers[position]] = {"fold": fold}
        marks[numbers[first]].update(
            count=last - first + 1,
            first=numbers[first],
            last=numbers[last],
            differ=_differing([rows[numbers[p]] for p in range(first, last + 1)]),
        )
    return marks
