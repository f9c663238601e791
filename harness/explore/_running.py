"""Running variants: each an ordinary scenario, loaded from its mapping as if it were a
file of the output folder and run in this process (own loop and python targets alike: no
pytest session per variant), or in ``jobs`` worker processes."""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness._errors import HarnessError
from harness._repeats import run_steps
from harness._results import ScenarioResult
from harness.explore._catalogue import Site
from harness.explore._oracle import Verdict, judge
from harness.explore._sites import sites_of
from harness.scenario._loader import Place
from harness.shrink._failure import Failure

__all__ = ["Runner", "Variant", "VariantRun", "Workers", "divergence"]


@dataclass(frozen=True)
class Variant:
    """A schedule of faults (``(site, kind)`` in order) and the scenario mapping it makes."""

    faults: tuple[tuple[Site, str], ...]
    data: dict[str, Any]


@dataclass(frozen=True)
class VariantRun:
    """What a variant's run came to: its verdict, its failure (status, termination, cause,
    failing paths), where it first parted from the run as written, and its sites."""

    verdict: Verdict
    failure: Failure | None
    divergence: str
    sites: tuple[Site, ...] = ()
    where: str | None = None  # where a target's own code raised


def run_one(data: dict[str, Any], at: Path | Place) -> ScenarioResult:
    """The run of the scenario mapping ``data`` loaded as the file ``at`` (HarnessError
    when it does not load)."""
    from harness.scenario import run_scenario
    from harness.scenario._loader import load_scenario_data
    from harness.shrink._rerun import quiet

    scenario = load_scenario_data(data, at)
    with quiet():
        if scenario.target is None:
            return _own_loop.run(scenario)
        # A target's run starts servers and maybe the agent's own event loop: a fresh
        # asyncio.run each time, as harness run gives it.
        return run_scenario(scenario)


class _OwnLoop:
    """One event loop for the process's own-loop variants: asyncio.run's new loop, signal
    handlers and shutdown cost a tenth of a scripted variant's run. What a run leaves
    behind (tasks, async generators) is ended after it, as asyncio.run would."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None

    def run(self, scenario: Any) -> ScenarioResult:
        from harness.scenario._runner import arun_scenario

        if self._loop is None or self._loop.is_closed():
            self._loop = asyncio.new_event_loop()
        loop = self._loop
        try:
            return loop.run_until_complete(arun_scenario(scenario))
        finally:
            left = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in left:
                task.cancel()
            if left:
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())

    def close(self) -> None:
        """Close the loop (the next run makes another)."""
        if self._loop is not None:
            self._loop.close()
            self._loop = None


_own_loop = _OwnLoop()


def _run_variant(
    variant: Variant,
    at: Path | Place,
    base: list[tuple[str, str]],
    invariants: dict[str, Any],
    sites: bool,
) -> VariantRun:
    try:
        result = run_one(variant.data, at)
    except (KeyboardInterrupt, SystemExit):
        raise
    except HarnessError as exc:
        return VariantRun(Verdict("crashed", message=_line(str(exc))), None, "")
    except Exception as exc:  # a target's or plugin's crash outside the run
        return VariantRun(
            Verdict("crashed", message=_line(f"{type(exc).__name__}: {exc}")), None, ""
        )
    found = tuple(sites_of(variant.data, result)) if sites else ()
    where = result.final.error.where if result.final.error is not None else None
    parted = divergence(base, run_steps(result))
    verdict = judge(result, invariants)
    unscripted = _unscripted(result)
    if verdict.outcome == "broken" and unscripted is not None:
        # Not the agent's failure: the script cannot follow the run the fault made.
        verdict = Verdict("crashed", message=f"the script cannot answer this run: {unscripted}")
    return VariantRun(verdict, Failure.of(result), parted, found, where)


# What a scripted model says when it cannot answer a run (the own loop's checks, and
# harness serve's 400s): the script was written for the run as written.
_UNSCRIPTED = (
    "script exhausted",
    "the script does not fit",
    'to a request made with tool_choice="none"',
)


def _unscripted(result: ScenarioResult) -> str | None:
    """The scripted model's refusal that ended the run, if one did."""
    error = result.final.error
    text = error.message if error is not None else ""
    if error is not None and error.type == "script_exhausted":
        return _line(text)
    return _line(text) if any(marker in text for marker in _UNSCRIPTED) else None


def _line(text: str) -> str:
    return text.splitlines()[0] if text else "crashed"


_NUMBERS = re.compile(r" \d+$")


def divergence(base: list[tuple[str, str]], steps: list[tuple[str, str]]) -> str:
    """Where ``steps`` first part from the run as written (``base``), said without what
    differs from site to site (call numbers, tool names, arguments, messages): ``model
    call: failed``, ``model call: asked for tools (cut at the length limit)``, ``tool
    call: invalid``, ``the ending: llm_error``; ``none`` when they do not part."""
    for index, step in enumerate(steps):
        if index < len(base) and base[index] == step:
            continue
        where, what = step
        kind = _NUMBERS.sub("", where)
        if kind == "model call":
            if what.startswith("failed"):
                what = "failed"
            elif what.startswith("asked for"):
                cut = " (cut at the length limit)" if what.endswith("limit)") else ""
                what = f"asked for tools{cut}"
        elif kind == "tool call":
            what = what[what.rfind("[") + 1 : -1] if what.endswith("]") else "ok"
        return f"{kind}: {what}"
    return "none" if len(steps) == len(base) else "the ending: earlier"


# -- in this process, or in workers ------------------------------------------------------------


def _in_worker(
    variant: Variant,
    at: Place,
    base: list[tuple[str, str]],
    invariants: dict[str, Any],
    sites: bool,
) -> VariantRun:
    return _run_variant(variant, at, base, invariants, sites)


def _star(fn: Callable[..., Any], job: tuple[Any, ...]) -> Any:
    return fn(*job)


class Workers:
    """``jobs`` worker processes for a whole exploration (1: none, this process runs)."""

    def __init__(self, jobs: int = 1) -> None:
        self.jobs = jobs
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None

    def pool(self) -> concurrent.futures.ProcessPoolExecutor:
        """The pool, started on first use."""
        if self._pool is None:
            # forkserver: workers forked from a fresh process that imported harness once,
            # not from this one and the threads its runs left (servers, a target's loop).
            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(["harness.explore._running", "harness.scenario"])
            self._pool = concurrent.futures.ProcessPoolExecutor(self.jobs, mp_context=context)
        return self._pool

    def map(self, fn: Callable[..., Any], jobs: Sequence[tuple[Any, ...]]) -> list[Any]:
        """``fn(*job)`` of each job, in order: on the workers, or here with one."""
        if self.jobs <= 1 or len(jobs) < 2:
            return [fn(*job) for job in jobs]
        return list(self.pool().map(_star, [fn] * len(jobs), jobs))

    def close(self) -> None:
        """Stop the workers (and close this process's event loop for variants)."""
        _own_loop.close()
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


class Runner:
    """Runs the variants of one scenario: loaded as if at ``at``, judged by ``invariants``,
    compared with the run as written (``base``), on ``workers``."""

    def __init__(
        self,
        at: Path,
        base: ScenarioResult,
        invariants: dict[str, Any],
        workers: Workers | None = None,
    ) -> None:
        self.at = at
        self.place = Place.of(at)  # found once for every variant
        self.base = run_steps(base)
        self.invariants = invariants
        self.workers = workers or Workers()

    def run(self, variants: Sequence[Variant], sites: bool = False) -> list[VariantRun]:
        """Each variant's run, in order (``sites``: with the sites its run made)."""
        jobs = self.workers.jobs
        if jobs <= 1 or len(variants) < 2:
            return [
                _run_variant(v, self.place, self.base, self.invariants, sites) for v in variants
            ]
        n = len(variants)
        # Chunks small enough that the workers finish together (a depth-2 exploration's
        # chunk of a quarter of its share left one worker alone for seconds at the end).
        chunk = max(1, min(n // (jobs * 4), 128))
        context = ([self.place] * n, [self.base] * n, [self.invariants] * n, [sites] * n)
        return list(self.workers.pool().map(_in_worker, variants, *context, chunksize=chunk))
