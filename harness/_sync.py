"""Running harness's coroutines from synchronous code."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from harness._errors import HarnessError

__all__ = ["run_sync"]

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T], *, name: str, instead: str) -> T:
    """``asyncio.run(coro)`` for a sync entry point; inside a running loop, a clear error.

    ``name`` is the sync function (for the message), ``instead`` what to await there.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        coro.close()
        raise HarnessError(
            f"{name} was called inside a running event loop; use `await {instead}` there instead"
        )
    # The result comes back through a box, not as the main task's result: on exit
    # asyncio.run (seen on CPython 3.11) formats repr() of its SIGINT handler, which holds
    # the task and so the whole result, twice (about 40% of a long run's time).
    box: list[T] = []

    async def main() -> None:
        box.append(await coro)

    asyncio.run(main())
    return box[0]
