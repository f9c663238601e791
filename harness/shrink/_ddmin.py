"""Delta debugging (Zeller and Hildebrandt's ddmin): the smallest subset of a list that
still makes a test hold, 1-minimal (removing any one item left makes it fail)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["ddmin"]

T = TypeVar("T")


def _chunks(items: list[T], n: int) -> list[list[T]]:
    """``items`` cut into ``n`` runs of nearly equal length, in order."""
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for k in range(n):
        end = start + size + (1 if k < extra else 0)
        out.append(items[start:end])
        start = end
    return [chunk for chunk in out if chunk]


def ddmin(items: Sequence[T], holds: Callable[[list[T]], bool]) -> list[T]:
    """The items kept: a subset of ``items`` (in order) for which ``holds`` is true and
    from which no single item can be removed with ``holds`` still true.

    ``holds(kept)`` is asked about subsets only; ``items`` itself is taken to hold. The
    order of the questions is fixed, so a deterministic ``holds`` gives the same answer
    every time. Everything at once goes first, since most elements of a long failing
    scenario do not matter.
    """
    # Indices, not items: equal items (two identical words) are still two items.
    kept = list(range(len(items)))

    def test(indices: list[int]) -> bool:
        return holds([items[i] for i in indices])

    if not kept or test([]):
        return []
    n = 2
    while len(kept) >= 2:
        chunks = _chunks(kept, n)
        reduced = False
        # A chunk alone, then everything but a chunk (for n == 2 these are the same).
        for chunk in chunks if n > 2 else []:
            if test(chunk):
                kept, n, reduced = chunk, 2, True
                break
        if not reduced:
            for chunk in chunks:
                dropped = set(chunk)
                rest = [i for i in kept if i not in dropped]
                if test(rest):
                    kept, n, reduced = rest, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(kept):
                break
            n = min(2 * n, len(kept))
    return [items[i] for i in kept]
