"""A function in a forked process (harness.cli._forked): what `harness run --chunk-size`
runs each part of a suite in. Its value comes back, its memory does not, its output goes
where this process's goes, and a child that dies says so."""

from __future__ import annotations

import os
import signal

import pytest

from harness._spool import ResultSpool
from harness.cli._forked import PartCrashed, forked


def test_the_value_comes_back_from_another_process():
    assert forked(lambda: ("made in", os.getpid())) != ("made in", os.getpid())
    assert forked(lambda: {"a": [1, 2]}) == {"a": [1, 2]}


def test_what_the_child_changes_in_memory_stays_in_the_child():
    kept: list[int] = [1]

    def grow() -> int:
        kept.extend(range(10_000))
        return len(kept)

    assert forked(grow) == 10_001
    assert kept == [1]


def test_output_is_written_once_in_order(capfd):
    print("before ", end="")  # not flushed yet: a fork would write it twice
    forked(lambda: print("in the child"))
    print("after")
    assert capfd.readouterr().out == "before in the child\nafter\n"


def test_a_child_that_raises_is_a_crash_with_its_traceback(capfd):
    def fail() -> None:
        raise LookupError("no such part")

    with pytest.raises(PartCrashed, match="ended with status 70, without its results"):
        forked(fail)
    assert "LookupError: no such part" in capfd.readouterr().err


def test_a_child_killed_by_a_signal_is_a_crash():
    with pytest.raises(PartCrashed, match="ended with signal 9"):
        forked(lambda: os.kill(os.getpid(), signal.SIGKILL))


def test_ctrl_c_is_the_childs_to_handle_while_it_runs():
    # The terminal sends SIGINT to the whole process group: this process waits for the
    # child to end as it chooses (pytest stops and reports), rather than leave it behind.
    def interrupted() -> str:
        os.kill(os.getppid(), signal.SIGINT)
        return "ended as it chose"

    handler = signal.getsignal(signal.SIGINT)
    assert forked(interrupted) == "ended as it chose"
    assert signal.getsignal(signal.SIGINT) is handler  # this process's own again


def test_results_a_child_spools_come_back_in_the_parents_file():
    spool = ResultSpool()
    spool["first"] = "kept here"

    def part() -> ResultSpool:
        own = ResultSpool(spool.blobs)  # the same file, an index of its own
        own["second"] = "written by the child"
        return own

    handed = forked(part)
    assert handed.blobs is spool.blobs
    spool.extend(handed)
    assert dict(spool) == {"first": "kept here", "second": "written by the child"}
    spool["third"] = "after it"  # written after the child's, not over it
    assert spool["second"] == "written by the child"
    spool.close()


def test_a_spool_takes_in_only_a_spool_of_its_own_file():
    spool, other = ResultSpool(), ResultSpool()
    with pytest.raises(ValueError, match="sharing its blobs"):
        spool.extend(other)
    spool.close()
    other.close()


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie nobody reaped has: it runs no more)."""
    try:
        status = open(f"/proc/{pid}/status").read()  # noqa: SIM115
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


def _wait(check, seconds: float = 30.0) -> bool:
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return False


KILLED_PARENT = """\
import os, sys, time
from pathlib import Path
from harness.cli import _forked as module

here = Path(sys.argv[1])
module._CLEANUP = 1


def work():
    try:
        (here / "child.pid").write_text(str(os.getpid()))
        time.sleep(60)
    finally:
        (here / "unwound").write_text("yes")  # its cleanup ran
        if sys.argv[2] == "hangs":
            time.sleep(120)  # a cleanup that never ends: the child is ended all the same


module.forked(work)
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="PR_SET_PDEATHSIG: Linux")
@pytest.mark.parametrize("cleanup", ["ends", "hangs"])
def test_a_child_dies_with_its_parent_its_cleanup_run_and_no_file_left(tmp_path, cleanup):
    import subprocess
    import sys

    temporary = tmp_path / "tmp"
    temporary.mkdir()
    parent = subprocess.Popen(
        [sys.executable, "-c", KILLED_PARENT, str(tmp_path), cleanup],
        env={**os.environ, "TMPDIR": str(temporary)},
    )
    try:
        assert _wait(lambda: (tmp_path / "child.pid").exists())
        child = int((tmp_path / "child.pid").read_text())
        parent.kill()  # kill -9: the parent runs no code of its own any more
        parent.wait(30)
        assert _wait(lambda: _gone(child)), "the child outlived its killed parent"
    finally:
        parent.kill()
    assert (tmp_path / "unwound").read_text() == "yes"
    assert list(temporary.iterdir()) == []  # its value's file had no name
