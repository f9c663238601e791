"""The sandboxed child's own set-up, between ``fork`` and ``exec``: what every backend's
child does (a session, a keyring, a cgroup, limits) and what a backend asks for besides.
"""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.sandbox._cgroup import PidsCgroup
from harness.sandbox._namespaces import Isolation, reach
from harness.sandbox._privileges import (
    become_unprivileged,
    capability_dropper,
    keyring_joiner,
    set_death_signal,
)

if TYPE_CHECKING:
    from harness.sandbox._base import Limits

__all__ = ["Confinement", "preexec"]


@dataclass(frozen=True)
class Confinement:
    """What a backend's child gives up besides what every child does."""

    # Drop every capability and privilege (a backend with no namespaces of its own).
    drop_capabilities: bool = False
    # ``process`` under root: namespaces of its own (namespaces.Isolation).
    isolation: Isolation | None = None
    # bubblewrap under root: run as an unprivileged user, after covering the folders on
    # the interpreter's way that this user could not pass (namespaces.cover_unreachable).
    unprivileged: list[tuple[Path, list[Path]]] | None = None


def _set_limits(limits: Limits, processes: bool) -> None:
    memory = limits.memory_mb * 1024 * 1024
    cpu = int(limits.timeout) + 1
    chosen = [
        (resource.RLIMIT_AS, memory),
        (resource.RLIMIT_CPU, cpu),  # soft: SIGXCPU; the hard limit one second later
        (resource.RLIMIT_FSIZE, limits.file_bytes),
        (resource.RLIMIT_CORE, 0),
    ]
    if processes:  # per user, host-wide: only where no cgroup counts the run's own
        chosen.append((resource.RLIMIT_NPROC, limits.processes))
    for which, value in chosen:
        hard = value + 1 if which == resource.RLIMIT_CPU else value
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(which, (value, hard))


def preexec(limits: Limits, pids: PidsCgroup, confinement: Confinement) -> Callable[[], None]:
    """The function the child runs before ``exec`` (made here, in the parent)."""
    drop = capability_dropper() if confinement.drop_capabilities else None
    join_keyring = keyring_joiner()

    def setup() -> None:
        os.setsid()  # a process group of its own: killed as a whole at the timeout
        set_death_signal()  # and killed with harness, if harness is killed
        procs = pids.opened()
        join_keyring()  # none of harness's keys in reach
        if confinement.isolation is not None:
            confinement.isolation.enter()  # returns in the new namespaces only
        pids.join(procs)
        _set_limits(limits, processes=pids.path is None)
        if confinement.unprivileged is not None:
            reach(confinement.unprivileged)
            become_unprivileged()
        if drop is not None:
            drop()  # last: joining the cgroup and setting limits need the privileges

    return setup
