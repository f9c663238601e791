"""Names for what a harness process leaves on the machine (a pids cgroup, a work folder),
so that the next run can tell when the harness that made one is gone (killed mid-run)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["PREFIX", "gone", "stamp"]

PREFIX = "harness-sandbox-"


def _started(pid: int | str) -> str | None:
    """When process ``pid`` started (clock ticks after boot), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2 :].split()[19]


def stamp() -> str:
    """This process, as ``PREFIX`` + pid and start time + ``-``: a name's beginning."""
    return f"{PREFIX}{os.getpid()}-{_started('self')}-"


def gone(name: str) -> bool:
    """Whether the harness process named in ``name`` (made with ``stamp``) is gone. Names
    of another form are not judged (False)."""
    pid, _, rest = name.removeprefix(PREFIX).partition("-")
    started = rest.partition("-")[0]
    if not name.startswith(PREFIX) or not pid.isdigit() or not started.isdigit():
        return False
    return _started(pid) != started
