"""``--harness-concurrency N``: up to N scenario runs in flight in one pytest process.

pytest runs items one after another. A live run spends its time waiting for the model,
so each process runs the scenarios of the items it is about to run ahead, N at a time,
on an event loop in a thread of its own; each item then takes its run's outcome when
pytest reaches it, and reports as before (in pytest's order, one by one).

Which items a process is about to run: in a serial session, every selected item; in an
xdist worker, the items the controller has already handed it (the worker's queue). Under
``--dist worksteal`` an item taken back from the queue has run here for nothing; its
result is the one of the worker that runs it as its item.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from harness.pytest_plugin._budget import Budget

__all__ = ["ConcurrentRuns", "queued_items", "run_ahead"]

# How long closing waits for the loop's thread to end (runs still going are cancelled).
_CLOSE_TIMEOUT = 10.0


class ConcurrentRuns:
    """Scenario runs started ahead of their items, at most ``limit`` at once."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._futures: dict[str, concurrent.futures.Future[Any]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._slots: asyncio.Semaphore | None = None
        # A serial session's items by identity -> position (found once, not per item).
        self.positions: dict[int, int] | None = None

    def _start(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()
            self._thread = threading.Thread(
                target=loop.run_forever, name="harness-concurrency", daemon=True
            )
            self._thread.start()
            self._loop = loop
        return self._loop

    def submit(self, key: str, run: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Start ``run()`` when a slot is free (once per key)."""
        if key in self._futures:
            return
        loop = self._start()
        self._futures[key] = asyncio.run_coroutine_threadsafe(self._limited(run), loop)

    async def _limited(self, run: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
        if self._slots is None:  # made on the loop's thread, in the loop it serves
            self._slots = asyncio.Semaphore(self.limit)
        async with self._slots:
            return await run()

    def started(self, key: str) -> bool:
        """Whether a run for ``key`` was submitted (and not yet taken)."""
        return key in self._futures

    def take(self, key: str) -> Any:
        """Wait for the run of ``key``: its result, or the exception it raised."""
        return self._futures.pop(key).result()

    def close(self) -> None:
        """Cancel the runs nobody took (the session stopped early) and end the thread."""
        for future in self._futures.values():
            future.cancel()
        self._futures.clear()
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(_CLOSE_TIMEOUT)
            if not self._thread.is_alive():
                self._loop.close()
        self._loop = self._thread = None


def run_ahead(item: Any, runs: ConcurrentRuns, budget: Budget | None) -> ConcurrentRuns:
    """Start ``item``'s run and those of the next items this process will run (twice the
    concurrency of them: enough to keep every slot busy while pytest reports), in
    ``runs``, unless ``budget`` is reached; the runs started, to take ``item``'s from."""
    runs.submit(item.nodeid, item.arun)
    window = 2 * runs.limit
    if hasattr(item.config, "workerinput"):  # an xdist worker
        upcoming = queued_items(item.config, item.session)
    else:
        upcoming = _following(item, runs, window)
    started = 0
    for other in upcoming:
        if started >= window or (budget is not None and budget.reached()):
            break  # (a run reaching the budget leaves the ones after it unstarted)
        if other is item or not hasattr(other, "arun") or _may_skip(other):
            continue
        runs.submit(other.nodeid, other.arun)
        started += 1
    return runs


def _following(item: Any, runs: ConcurrentRuns, window: int) -> list[pytest.Item]:
    """The items after ``item`` in a serial session's order (a bounded slice)."""
    items = item.session.items
    if runs.positions is None or len(runs.positions) != len(items):
        runs.positions = {id(other): i for i, other in enumerate(items)}
    at = runs.positions.get(id(item))
    return [] if at is None else items[at + 1 : at + 1 + window]


def _may_skip(item: Any) -> bool:
    # A skip or skipif mark may mean the scenario must not run at all: never ahead; nor
    # a sequential scenario's run, which the runs before it may make unneeded.
    if getattr(item, "sequential", None) is not None:
        return True
    return any(item.iter_markers("skip")) or any(item.iter_markers("skipif"))


def queued_items(config: pytest.Config, session: pytest.Session) -> Iterable[pytest.Item]:
    """The items an xdist worker has been handed and not started yet (none elsewhere)."""
    worker = next(
        (p for p in config.pluginmanager.get_plugins() if type(p).__name__ == "WorkerInteractor"),
        None,
    )
    queue = getattr(worker, "torun", None)
    if worker is None or queue is None or not hasattr(queue, "lock"):
        return []  # another xdist version: each item runs when it comes
    with queue.lock() as indices:
        pending = [worker.nextitem_index, *indices]
    return [session.items[i] for i in pending if isinstance(i, int)]
