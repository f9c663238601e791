"""The shrinking loop: every pass in turn, round after round, until a whole round changes
nothing; then no single element can go (1-minimal), since that round asked about each."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness._results import ScenarioResult
from harness.shrink._ddmin import ddmin
from harness.shrink._draft import Draft
from harness.shrink._elements import Size, size
from harness.shrink._failure import Failure, Verdict
from harness.shrink._passes import PASSES, REMOVE, Removal, Rewrite, Site, Text

__all__ = ["Oracle", "Progress", "Shrinker", "tokens"]


@dataclass(frozen=True)
class Progress:
    """Where a shrink is: reruns made, the round and pass, the size now and at first."""

    reruns: int
    round: int
    stage: str
    size: Size
    start: Size


class Oracle:
    """Answers "does this draft still fail the same way?", rerunning each distinct draft
    once (the answers are cached by the draft's content: reruns are deterministic)."""

    def __init__(
        self,
        verdict: Verdict,
        rerun: Callable[[Draft], ScenarioResult | None],
        on_rerun: Callable[[Draft], None] | None = None,
    ) -> None:
        self.verdict = verdict
        self.rerun = rerun
        self.on_rerun = on_rerun
        self.reruns = 0
        self._answers: dict[str, bool] = {}
        # The smallest draft seen to fail the same way: every draft asked about is
        # smaller than the last one that did, so the last one is the smallest. And the
        # failure of the last rerun that did (as the draft's own paths name it).
        self.best: Draft | None = None
        self.seen: Failure | None = None

    def holds(self, draft: Draft) -> bool:
        """Whether ``draft`` fails the same way."""
        key = hashlib.sha256(
            json.dumps(draft.data, sort_keys=True, default=str).encode()
        ).hexdigest()
        answer = self._answers.get(key)
        if answer is None:
            result = self.rerun(draft)
            answer = result is not None and self.verdict.same_way(result, draft.turns)
            self._answers[key] = answer
            self.reruns += 1
            if answer:
                self.best = draft
                self.seen = Failure.of(result) if result is not None else None
            if self.on_rerun is not None:
                self.on_rerun(draft)
        elif answer:
            self.best = draft
        return answer


# A template expression or statement (with what sticks to it), a word and the spaces
# after it, or leading spaces: a text's removable pieces.
_TOKEN = re.compile(r"\{\{.*?\}\}\S*\s*|\{%.*?%\}\S*\s*|\{#.*?#\}\S*\s*|\S+\s*|\s+", re.S)


def tokens(text: str) -> list[str]:
    """``text`` cut into pieces that join back into it (templates kept whole)."""
    return _TOKEN.findall(text)


@dataclass
class Shrinker:
    """Runs the passes over a draft until a round changes nothing."""

    oracle: Oracle
    on_progress: Callable[[Progress], None] | None = None
    # Elements removed (by label), faults weakened, texts shortened.
    changes: Counter[str] = field(default_factory=Counter)
    rounds: int = 0
    stage: str = ""
    start: Size | None = None

    def run(self, draft: Draft) -> Draft:
        """The smallest draft found, 1-minimal."""
        self.start = size(draft)
        self.oracle.best = draft
        while True:
            self.rounds += 1
            before = draft
            for stage, sites_of in PASSES:
                self.stage = stage
                draft = self._pass(draft, sites_of)
            if draft.data == before.data:
                return draft

    def progress(self, draft: Draft) -> None:
        """Tell ``on_progress`` where the shrink is (after each rerun)."""
        if self.on_progress is not None and self.start is not None:
            best = self.oracle.best or draft
            self.on_progress(
                Progress(self.oracle.reruns, self.rounds, self.stage, size(best), self.start)
            )

    def _pass(self, draft: Draft, sites_of: Callable[[Draft], list[Site]]) -> Draft:
        """Every site of one pass, each found again after the last one changed the draft."""
        done: set[Any] = set()
        while True:
            site = next((s for s in sites_of(draft) if (type(s), s.key) not in done), None)
            if site is None:
                return draft
            done.add((type(site), site.key))
            if isinstance(site, Removal):
                draft = self._remove(draft, site)
            elif isinstance(site, Rewrite):
                draft = self._rewrite(draft, site)
            else:
                draft = self._shorten(draft, site)

    def _remove(self, draft: Draft, site: Removal) -> Draft:
        handles = list(site.handles)

        def holds(kept: list[Any]) -> bool:
            return self.oracle.holds(draft.remove(set(handles) - set(kept)))

        kept = ddmin(handles, holds)
        dropped = set(handles) - set(kept)
        if not dropped:
            return draft
        self.changes[site.label] += len(dropped)
        return draft.remove(dropped)

    def _rewrite(self, draft: Draft, site: Rewrite) -> Draft:
        for value in site.candidates:
            candidate = (
                draft.remove([site.path]) if value is REMOVE else draft.set(site.path, value)
            )
            if self.oracle.holds(candidate):
                self.changes[site.label] += 1
                return candidate
        return draft

    def _shorten(self, draft: Draft, site: Text) -> Draft:
        text = draft.get(site.path)
        pieces = tokens(text)

        def holds(kept: list[str]) -> bool:
            return self.oracle.holds(draft.set(site.path, "".join(kept)))

        shorter = "".join(ddmin(pieces, holds))
        if shorter == text:
            return draft
        self.changes[site.label] += 1
        return draft.set(site.path, shorter)
