"""The baseline of ``harness run`` and ``harness report``: read to compare with, written
by ``--update-baseline``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.parsing import UsageError, to_stderr

if TYPE_CHECKING:
    from harness.results import Results

__all__ = ["load_baseline", "update_baseline"]


def load_baseline(shown: str, what: str, *, replacing: bool = False) -> Results | None:
    """The results to compare with, read from ``shown`` (the path as messages name it).

    UsageError when they cannot be read (``what`` names the file: "--baseline", say),
    unless ``replacing`` (``--update-baseline`` is about to replace the file): then a
    line says so and the result is None.
    """
    from harness.results import ResultsFileError, load_results

    try:
        return load_results(shown, what=what)
    except ResultsFileError as exc:
        if not replacing:
            raise UsageError(str(exc)) from None
        to_stderr(f"harness: {exc}; not compared, --update-baseline replaces it")
        return None


def update_baseline(path: Path, results: Results, old: Results | None) -> None:
    """Write ``results`` as the baseline, keeping the entries of ``old`` (the baseline this
    run was compared with) that the run did not run.

    A run narrowed by -k, -m or PATHS says nothing about the scenarios it left out: the
    baseline diff lists them as not run, and their entries stay. Removed ones go.
    """
    from harness.results import build_results

    kept: list[Any] = []
    if old is not None and results.baseline is not None:
        not_run = {ref.id for ref in results.baseline.not_run}
        kept = [s for s in old.scenarios if s.id in not_run]
    merged = build_results([*results.scenarios, *kept])
    merged.meta = results.meta
    merged.write_baseline(path)
