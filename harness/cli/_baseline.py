"""The baseline of ``harness run`` and ``harness report``: read to compare with, written
by ``--update-baseline``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

from harness.cli._parsing import UsageError, to_stderr

if TYPE_CHECKING:
    from harness._results import Results

__all__ = ["load_baseline", "update_baseline"]


@overload
def load_baseline(shown: str, what: str, *, replacing: Literal[False] = False) -> Results: ...
@overload
def load_baseline(shown: str, what: str, *, replacing: bool) -> Results | None: ...
def load_baseline(shown: str, what: str, *, replacing: bool = False) -> Results | None:
    """The results to compare with, read from ``shown`` (the path as messages name it).

    UsageError when they cannot be read (``what`` names the file: "--baseline", say),
    unless ``replacing`` (``--update-baseline`` is about to replace the file): then a
    line says so and the result is None. The scenarios stay on disk, read one at a time
    (a ScenarioList): a large suite's baseline is never whole in memory.
    """
    from harness._results import ResultsFileError, load_results

    try:
        return load_results(shown, what=what)
    except ResultsFileError as exc:
        if not replacing:
            raise UsageError(str(exc)) from None
        to_stderr(f"harness: {exc}; not compared, --update-baseline replaces it")
        return None


# Seconds a run waits for another run's update of the same baseline to finish.
LOCK_TIMEOUT = 60.0


def update_baseline(path: Path, results: Results) -> None:
    """Write ``results`` as the baseline, keeping the entries the run did not run.

    A run narrowed by -k, -m or PATHS says nothing about the scenarios it left out: their
    entries stay; the ones its baseline diff found removed go. The baseline is read again
    under a lock (``baseline.json.lock`` beside it, the ``filelock`` package): another run
    that updated it since this one started (with ``-k`` of its own, say) keeps its entries.
    OSError when the file cannot be written or the lock is held for more than
    LOCK_TIMEOUT seconds.
    """
    from filelock import FileLock, Timeout

    from harness._coverage import carried
    from harness._results import build_results
    from harness._spool import ResultSpool

    lock = FileLock(f"{path}.lock", timeout=LOCK_TIMEOUT)
    try:
        with lock:
            current = _current(path)
            # Both sides go through a spool one scenario at a time: never whole in memory.
            spool = ResultSpool()
            live: set[str] = set()
            for scenario in results.scenarios:
                spool.add(scenario)
                # The runs of a live repeated scenario are one sample: replaced as a whole.
                if scenario.repeats and scenario.repeats.live:
                    live.add(scenario.scenario_key)
            removed = {r.id for r in results.baseline.removed} if results.baseline else set()
            kept: list[str] = []
            for scenario in current.scenarios if current else []:
                gone = scenario.id in removed or scenario.scenario_key in live
                if scenario.id not in spool and not gone:
                    spool.add(scenario)
                    kept.append(scenario.id)
            merged = build_results(spool)
            merged.meta = results.meta
            # docs/coverage.md: what the kept entries covered stays covered.
            old = current.coverage if current is not None else None
            merged.coverage = carried(results.coverage, old, kept)
            merged.write_baseline(path)
    except Timeout:
        raise OSError(
            0,
            f"another harness run has held its lock ({lock.lock_file}) for more than "
            f"{LOCK_TIMEOUT:g} s; run again when it is done, or delete the lock file if no "
            "run is going on",
        ) from None


def _current(path: Path) -> Results | None:
    """The baseline on disk now (None when there is none, or none that reads: it is being
    replaced)."""
    from harness._results import ResultsFileError, load_results

    if not path.is_file():
        return None
    try:
        return load_results(str(path), what="baseline")
    except ResultsFileError:
        return None
