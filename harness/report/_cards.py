"""The report's scenario cards, made one at a time: a small report carries every card's
body inline; a large one carries each body packed (deflated, base64), which the page
unpacks when the card opens (docs/report.md#large-reports).

The browser then parses only the index of cards (a header line each) when the page
opens, however many scenarios there are, and the writer holds one card at a time.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from markupsafe import Markup
from pydantic import Field

from harness._actions import Termination
from harness._results import CountedEntry, ScenarioResult
from harness.report._views import Limits, scenario_view

__all__ = ["PACK_AFTER", "Card", "Digest", "Surveyed", "cards", "index_view", "pack"]

# Scenarios in a report above which card bodies are packed: up to here the page opens
# in about a second with every body inline, and reads without script.
PACK_AFTER = 500

# (view, packed body or None), as the template's card macro takes them.
Card = tuple[dict[str, Any], str | None]


def pack(html: str) -> str:
    """A card body as the page carries it: raw deflate (what the browser's
    ``DecompressionStream("deflate-raw")`` reads), base64; the same text every time."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    data = packer.compress(html.encode("utf-8")) + packer.flush()
    return base64.b64encode(data).decode("ascii")


class Surveyed(CountedEntry):
    """What the report's first pass reads of a scenario entry on disk: what the summary
    counts, the fields its digest keeps, and how many transcript messages it has (a sixth
    of the time of a whole ScenarioResult; the cards read each whole once more)."""

    name: str
    iterations: int = 0
    matrix: dict[str, Any] | None = None
    transcript: list[Any] = Field(default_factory=list)


def index_view(index: int, scenario: ScenarioResult | Surveyed) -> dict[str, Any]:
    """What the charts, the matrix and the repeats tables need of scenario number
    ``index + 1`` (its bar links to its card)."""
    return {
        "anchor": f"s{index + 1}",
        "number": index + 1,
        "status": scenario.status,
        "s": Digest(scenario),
    }


class Digest:
    """What the report's summary parts read of a scenario (not its whole run): a large
    suite's report keeps one of these per scenario, and reads each run once more for
    its card."""

    __slots__ = (
        "id",
        "iterations",
        "matrix",
        "name",
        "repeats",
        "run",
        "sim_time",
        "status",
        "termination",
    )

    def __init__(self, scenario: ScenarioResult | Surveyed) -> None:
        self.id, self.name, self.status = scenario.id, scenario.name, scenario.status
        self.termination: Termination = scenario.termination
        self.iterations, self.sim_time = scenario.iterations, scenario.sim_time
        self.run, self.repeats, self.matrix = scenario.run, scenario.repeats, scenario.matrix

    @property
    def scenario_key(self) -> str:
        """The id of the scenario this is a run of (the id without ``[run]``)."""
        return self.id if self.run is None else self.id.removesuffix(f"[{self.run}]")


def cards(
    scenarios: Iterable[ScenarioResult],
    limits: Limits,
    body: Callable[[dict[str, Any]], Markup] | None,
) -> Iterator[Card]:
    """Each scenario's card in order; ``body`` (the template's body macro) given: packed.

    A packed card's view keeps only what its header shows: the timeline and its rows
    (the bulk of a view) are dropped once the body is made.
    """
    for index, scenario in enumerate(scenarios):
        view = scenario_view(index, scenario, limits)
        if body is None:
            yield view, None
            continue
        packed = pack(str(body(view)))
        for heavy in ("timeline", "rows", "folds", "spans", "errors", "notes"):
            view.pop(heavy, None)
        yield view, packed
