"""A function in a forked process (harness.cli.forked): what `harness run --chunk-size`
runs each part of a suite in. Its value comes back, its memory does not, its output goes
where this process's goes, and a child that dies says so."""

from __future__ import annotations

import os
import signal

import pytest

from harness.cli.forked import PartCrashed, forked
from harness.spool import ResultSpool


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
