"""``shrink()``: a failing scenario in, the smallest scenario that fails the same way out
(docs/shrink.md)."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness._files import atomic_write
from harness._project import display_path
from harness.shrink._draft import Draft
from harness.shrink._elements import Size, size
from harness.shrink._engine import Oracle, Progress, Shrinker
from harness.shrink._failure import Failure, ShrinkError, Verdict
from harness.shrink._output import render
from harness.shrink._passes import LABELS
from harness.shrink._rerun import Rerunner, cassette_text, scenario_text
from harness.shrink._source import Original, first_draft, read_original

__all__ = ["ShrinkInterrupted", "ShrinkResult", "shrink", "verify"]


@dataclass
class ShrinkResult:
    """A shrunk scenario: its text (and the cassettes it reads, by path), the failure it
    keeps, its size before and after, what went, and what it took."""

    text: str
    output: Path | None
    # The file the reruns loaded it as (the output, else the original).
    at: Path
    cassettes: dict[Path, str]
    failure: Failure
    original: Failure
    before: Size
    after: Size
    changes: dict[str, int]
    reruns: int
    rounds: int
    minimal: bool
    seconds: float
    # The original number of each turn left (None without turns:).
    turns: tuple[int, ...] | None = None
    # The failure as the shrunk scenario's own run shows it (its turns numbered anew).
    shown: Failure | None = None
    data: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def reduction(self) -> float:
        """The share of steps + tools + expectations + faults removed (0 to 1)."""
        return 1 - self.after.total / self.before.total if self.before.total else 0.0

    def write(self) -> list[Path]:
        """Write the scenario to ``output`` and its cassettes beside it; the files written."""
        if self.output is None:
            raise ShrinkError("the shrunk scenario has no output file: give output=")
        for path, text in sorted(self.cassettes.items()):
            atomic_write(path, text)
        atomic_write(self.output, self.text)
        return [*sorted(self.cassettes), self.output]


class ShrinkInterrupted(KeyboardInterrupt):
    """Ctrl-C while shrinking: ``result`` is the smallest failing scenario found so far."""

    def __init__(self, result: ShrinkResult) -> None:
        super().__init__("interrupted")
        self.result = result


def shrink(
    scenario: str | Path | Mapping[str, Any],
    *,
    keep: Sequence[str] = (),
    output: str | Path | None = None,
    at: str | Path | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> ShrinkResult:
    """The smallest scenario that fails as ``scenario`` does, 1-minimal (docs/shrink.md).

    ``scenario``: a scenario file, or its mapping with ``at`` the file it would be.
    ``keep``: the failing expectation paths that must still fail (default: all of them).
    ``output``: the file it will be written to (reruns load it as if it were there: its
    relative paths are rebased; a recorded scenario's cassette goes beside it).
    ``on_progress`` is called after every rerun. Ctrl-C raises ``ShrinkInterrupted``
    holding the smallest failing scenario found so far. ShrinkError for a scenario that
    does not fail, a ``keep`` path that does not fail, or a file that does not load.
    """
    started = time.perf_counter()
    original = _original(scenario, at)
    failure, kept = _failures(original, keep)
    target = Path(output).resolve() if output is not None else original.path.resolve()
    with tempfile.TemporaryDirectory(prefix="harness-shrink-") as work:
        oracle = Oracle(Verdict(failure, kept), Rerunner(target, Path(work)))
        first = first_draft(original, target)
        _check_first(oracle, first, original, target, output is not None)
        shrinker = Shrinker(oracle, on_progress)
        oracle.on_rerun = shrinker.progress
        try:
            final, minimal = shrinker.run(first), True
        except KeyboardInterrupt:
            final, minimal = oracle.best or first, False
    final, cassettes = _cassettes_beside(final, target if output is not None else None)
    result = ShrinkResult(
        text="",
        output=target if output is not None else None,
        at=target,
        cassettes=cassettes,
        failure=kept,
        original=failure,
        before=shrinker.start or size(first),
        after=size(final),
        changes={label: shrinker.changes[label] for label in LABELS if shrinker.changes[label]},
        reruns=oracle.reruns,
        rounds=shrinker.rounds,
        minimal=minimal,
        seconds=0.0,
        turns=final.turns,
        shown=oracle.seen,
        data=final.scenario,
    )
    result.text = render(original.text, final.edits, final.scenario, header(original, result))
    result.seconds = time.perf_counter() - started
    if not minimal:
        raise ShrinkInterrupted(result)
    return result


def _original(scenario: str | Path | Mapping[str, Any], at: str | Path | None) -> Original:
    if isinstance(scenario, Mapping):
        if at is None:
            raise ShrinkError("a scenario given as a mapping needs at= (the file it would be)")
        return read_original(Path(at).resolve(), scenario_text(dict(scenario)))
    return read_original(Path(scenario).resolve())


def _failures(original: Original, keep: Sequence[str]) -> tuple[Failure, Failure]:
    """The original's failure, and the part of it to keep; ShrinkError when it passes."""
    failure = Failure.of(original.result)
    if failure.status == "passed":
        raise ShrinkError(
            f"{display_path(original.path)} passes: there is no failure to shrink "
            "(harness shrink takes a scenario that fails)"
        )
    return failure, failure.kept(keep)


def _check_first(
    oracle: Oracle, first: Draft, original: Original, target: Path, written: bool
) -> None:
    """The draft written at the output's place fails as the original does (the output's
    folder may lie in another project, where its target or plugins do not load)."""
    if first.data["cassettes"] and not written:
        raise ShrinkError(
            f"{display_path(original.path)} replays a cassette: its shrunk copy is written "
            "beside the output, so give an output file (-o FILE)"
        )
    if oracle.holds(first):
        return
    rerun = oracle.rerun(first)
    got = Failure.of(rerun).describe() if rerun is not None else "it does not load or run"
    raise ShrinkError(
        f"{display_path(original.path)} written as {display_path(target)} does not fail the "
        f"same way ({got}; as given: {Failure.of(original.result).describe()}): write the "
        "output in the same project"
    )


def _cassettes_beside(final: Draft, output: Path | None) -> tuple[Draft, dict[Path, str]]:
    """The draft reading its cassettes' shrunk copies beside the output, and their texts
    by path (``NAME.cassette.yaml``, a sub-agent's ``NAME.agents.AGENT.llm.cassette.yaml``)."""
    cassettes: dict[Path, str] = {}
    for key, cassette in sorted(final.data["cassettes"].items()):
        assert output is not None  # refused before shrinking
        stem = output.name.split(".")[0]
        name = f"{stem}.cassette.yaml" if key == "llm" else f"{stem}.{key}.cassette.yaml"
        cassettes[output.with_name(name)] = cassette_text(cassette)
        final = final.set(("scenario", *key.split("."), "cassette"), name)
    return final, cassettes


def header(original: Original, result: ShrinkResult) -> list[str]:
    """The comment at the top of the output: what fails, what went, what it took."""
    lines = [
        f"Shrunk by `harness shrink` from {original.scenario.id_path or original.path.name} "
        "(docs/shrink.md).",
        f"It fails the same way: {(result.shown or result.failure).describe()}.",
        f"Size {result.after.shown()}, was {result.before.shown()}.",
    ]
    lines += _changes(result.changes)
    if result.minimal:
        lines.append(
            f"1-minimal: removing any one element no longer fails the same way "
            f"({result.reruns} reruns in {result.rounds} rounds)."
        )
    else:
        lines.append(
            f"Interrupted after {result.reruns} reruns: the smallest failing scenario found "
            "so far, not 1-minimal."
        )
    return lines


# The labels of changes that are not removals, and the verb each is said with.
_NOT_REMOVED = {
    "faults weakened": "Weakened",
    "repeats reduced": "Reduced",
    "texts shortened": "Shortened",
}


def _changes(changes: dict[str, int]) -> list[str]:
    """``Removed: 9 script steps, 5 tools. Shortened: 3 texts.`` (in pass order)."""
    said: dict[str, list[str]] = {}
    for label, n in changes.items():
        verb = _NOT_REMOVED.get(label, "Removed")
        noun = label.split()[0] if label in _NOT_REMOVED else label
        said.setdefault(verb, []).append(f"{n} {noun[:-1] if n == 1 else noun}")
    return (
        [" ".join(f"{verb}: {', '.join(items)}." for verb, items in said.items())] if said else []
    )


def verify(result: ShrinkResult, runs: int = 1) -> bool:
    """Whether the shrunk scenario, as written (its text, loaded as ``result.at``), fails
    the same way ``runs`` times over."""
    from harness.scenario import run_scenario
    from harness.scenario._loader import load_scenario_text
    from harness.shrink._rerun import quiet

    verdict = Verdict(result.original, result.failure)
    for _ in range(runs):
        scenario = load_scenario_text(result.text, result.at)
        with quiet():
            ran = run_scenario(scenario)
        if not verdict.same_way(ran, result.turns):
            return False
    return True
