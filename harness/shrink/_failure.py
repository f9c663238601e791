"""What "fails the same way" means (docs/shrink.md#the-same-way): a run's failure as a
signature, and the comparison every rerun is judged by."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from harness._errors import HarnessError
from harness._results import ScenarioResult

__all__ = ["Failure", "ShrinkError", "Verdict"]


class ShrinkError(HarnessError):
    """A scenario that cannot be shrunk (it does not fail, a --keep path it does not
    fail, a file that does not load): one line saying why."""


class Failure(BaseModel):
    """How a run failed: its status, its termination and why it ended so (the error type,
    the detector or the budget), and the expectation paths that failed, sorted."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    status: str
    termination: str
    cause: str | None = None
    failing: tuple[str, ...] = ()

    @classmethod
    def of(cls, result: ScenarioResult) -> Failure:
        """The failure of ``result`` (a passed run has one too: status ``passed``)."""
        return cls(
            status=result.status,
            termination=str(result.termination),
            cause=_cause(result),
            failing=tuple(sorted({e.path for e in result.expectations if not e.ok})),
        )

    def kept(self, keep: Sequence[str]) -> Failure:
        """This failure narrowed to the ``keep`` paths; ShrinkError for one that did not fail."""
        if not keep:
            return self
        unknown = [path for path in keep if path not in self.failing]
        if unknown:
            failing = ", ".join(self.failing) or "none (only its termination fails)"
            raise ShrinkError(
                f"--keep {unknown[0]}: that expectation does not fail in this run; "
                f"failing: {failing}"
            )
        return self.model_copy(update={"failing": tuple(sorted(set(keep)))})

    def describe(self) -> str:
        """One line: ``termination completed; failing: never_called, tool_calls.forbid``."""
        ending = self.termination + (f" ({self.cause})" if self.cause else "")
        failing = ", ".join(self.failing) or "no expectation"
        return f"{self.status}: termination {ending}; failing: {failing}"


def _cause(result: ScenarioResult) -> str | None:
    """Why the run ended as it did, beyond its termination: ``final.error.type`` (with the
    HTTP status of an LLM error), the stuck detector, or the budget crossed."""
    final = result.final
    if final.error is not None:
        status = f" {final.error.status}" if final.error.status is not None else ""
        return f"{final.error.type}{status}"
    if result.termination == "stagnation":
        return final.data.detector or "repeat"
    if result.termination == "budget":
        return final.data.budget
    return None


_TURN = re.compile(r"^turns\.(\d+)\.")


class Verdict:
    """Judges reruns: the same status, termination and cause, every kept path failing,
    and no expectation failing that did not fail in the original run."""

    def __init__(self, original: Failure, kept: Failure) -> None:
        self.original = original
        self.kept = kept

    def same_way(self, result: ScenarioResult, turns: Sequence[int] | None = None) -> bool:
        """Whether ``result`` fails the way the shrunk scenario must; ``turns`` maps the
        candidate's turn numbers to the original's (turns removed renumber the rest)."""
        got = Failure.of(result)
        if (got.status, got.termination, got.cause) != (
            self.kept.status,
            self.kept.termination,
            self.kept.cause,
        ):
            return False
        failing = set(_renumbered(got.failing, turns))
        return set(self.kept.failing) <= failing <= set(self.original.failing)


def _renumbered(paths: Iterable[str], turns: Sequence[int] | None) -> list[str]:
    """``turns.K.path`` written with the original scenario's turn numbers."""
    if turns is None:
        return list(paths)
    out = []
    for path in paths:
        match = _TURN.match(path)
        # Turn numbers are 1-based in results; ``turns`` holds 0-based positions.
        if match and 0 < int(match.group(1)) <= len(turns):
            path = f"turns.{turns[int(match.group(1)) - 1] + 1}.{path[match.end() :]}"
        out.append(path)
    return out
