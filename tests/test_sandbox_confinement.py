"""What the sandbox keeps and what it closes, checked to the byte: the output kept is the
limit and no more, and bubblewrap's own /dev takes no files (it is unbounded memory).

Each test here failed against a hand-made mutant that the other sandbox tests let pass
(scripts/mutation.py, scripts/mutants.toml).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid
from pathlib import Path

import pytest

from harness.sandbox import Limits, SandboxError, get_sandbox
from harness.sandbox._base import CUT

# Sandboxed code runs as uid 65534 in every worker: one test at a time (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_sandbox_user_at_a_time")


def backend(name: str):
    try:
        return get_sandbox(name)
    except SandboxError as exc:
        if name == "bubblewrap" and os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


def run(sandbox, code: str, limits: Limits):
    return asyncio.run(sandbox.run(code, limits))


@pytest.mark.parametrize("name", ["process", "bubblewrap"])
def test_the_output_kept_is_the_limit_exactly_then_the_marker(name):
    # The code prints far more than one pipe read: what comes back is the first 1,000
    # bytes and the marker, never a whole read's worth (harness's memory, the model's
    # context).
    sandbox = backend(name)
    result = run(sandbox, "print('x' * 1_000_000)", Limits(timeout=5.0, output_bytes=1000))
    assert result.stdout == "x" * 1000 + CUT.format(limit=1000)
    assert result.stdout_cut and not result.stderr_cut


def test_bubblewrap_s_own_dev_takes_no_files():
    # bwrap's /dev is a tmpfs with no size limit: a file written there would fill memory
    # past disk_mb. It is read-only (only /dev/shm, bounded, is the code's to write).
    sandbox = backend("bubblewrap")
    code = (
        "import errno\n"
        "for attempt in (lambda: open('/dev/filler', 'wb'), lambda: __import__('os')"
        ".mkdir('/dev/folder')):\n"
        "    try:\n        attempt()\n        print('written')\n"
        "    except OSError as exc:\n        print(errno.errorcode[exc.errno])\n"
        "open('/dev/shm/ok', 'wb').write(b'x')\nprint('shm')"
    )
    result = run(sandbox, code, Limits(timeout=10.0))
    assert result.stdout == "EROFS\nEROFS\nshm\n", result


@pytest.mark.parametrize("name", ["process", "bubblewrap"])
def test_the_code_runs_in_a_session_of_its_own(name):
    # Not harness's session nor its process group: the code can signal neither as a
    # group (kill(0, ...), killpg), and has no terminal of harness's to type into.
    sandbox = backend(name)
    comm = f"session{uuid.uuid4().hex[:8]}"
    code = (
        f"import time\nopen('/proc/self/comm', 'w').write({comm!r})\ntime.sleep(3)\nprint('done')"
    )
    seen: dict[str, set[int]] = {"session": set(), "group": set()}
    watching = threading.Event()
    watching.set()
    watcher = threading.Thread(target=_watch_session, args=(comm, seen, watching))
    watcher.start()
    try:
        result = run(sandbox, code, Limits(timeout=15.0))
    finally:
        watching.clear()
        watcher.join()
    assert result.stdout == "done\n", result
    assert seen["session"], "the code's process was never seen from the host"
    assert os.getsid(0) not in seen["session"]
    assert os.getpgid(0) not in seen["group"]


def _watch_session(comm: str, seen: dict[str, set[int]], watching: threading.Event) -> None:
    """The host's session and process group ids of processes named ``comm``."""
    while watching.is_set():
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            name, _, rest = stat.partition(" (")[2].rpartition(") ")
            if name == comm:
                fields = rest.split()  # state, ppid, pgrp, session, ...
                seen["group"].add(int(fields[2]))
                seen["session"].add(int(fields[3]))
        time.sleep(0.05)


def test_process_code_can_gain_no_privilege_back():
    # Two guards, each on its own: no capability left even in the bounding set (a root
    # exec gets nothing back), and no_new_privs (a set-user-ID program gives nothing).
    sandbox = backend("process")
    code = (
        "fields = dict(line.split(':', 1) for line in open('/proc/self/status'))\n"
        "print(fields['NoNewPrivs'].strip(), int(fields['CapEff'], 16))"
    )
    result = run(sandbox, code, Limits(timeout=10.0))
    assert result.stdout == "1 0\n", result
    if os.geteuid() == 0:
        bounding = (
            "print(int(dict(l.split(':', 1) for l in open('/proc/self/status'))['CapBnd'], 16))"
        )
        assert run(sandbox, bounding, Limits(timeout=10.0)).stdout == "0\n"


def test_a_run_s_cgroup_is_not_tidied_away_by_a_run_starting_beside_it():
    # Runs overlap (--harness-concurrency, several tools): a cgroup made for a run whose
    # child has not joined it yet is empty, and must outlive another run's tidying, or
    # that child would run uncapped.
    from harness.sandbox._cgroup import PidsCgroup

    first = PidsCgroup(8)
    if first.path is None:
        pytest.skip("harness cannot make pids cgroups here (not root, or no cgroup fs)")
    path = first.path
    second = PidsCgroup(8)
    try:
        assert path.is_dir() and (path / "pids.max").read_text().strip() == "8"
    finally:
        second.close()
        first.close()
    assert not path.exists()


def test_tidying_leaves_another_user_s_folder_alone(tmp_path, monkeypatch):
    # A folder named as a gone harness's, but another user's (made to look like one):
    # not harness's to empty, whoever harness runs as.
    if os.geteuid() != 0:
        pytest.skip("making a folder another user owns needs root")
    import tempfile

    from harness.sandbox._folder import HostFolder

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    theirs = tmp_path / "harness-sandbox-999999999-1-theirs"
    theirs.mkdir()
    (theirs / "work.txt").write_text("theirs")
    os.chown(theirs, 65534, 65534)
    os.chown(theirs / "work.txt", 65534, 65534)
    HostFolder("print(1)").remove()
    assert (theirs / "work.txt").read_text() == "theirs"


def test_processes_that_could_not_be_stopped_are_said_in_the_result(monkeypatch):
    # The backend found processes it could not kill (a root daemon in another pid
    # namespace, say): the model and the user are told, never left to guess.
    from harness.sandbox._base import Execution
    from harness.sandbox._tool import CodeExecutionTool

    tool = CodeExecutionTool("process")

    async def left_behind(code: str, limits: Limits) -> Execution:
        return Execution("done\n", "", 0, "process", survivors=[4242, 4343])

    monkeypatch.setattr(tool.sandbox, "run", left_behind)
    result = asyncio.run(tool.fn(code="print('done')"))
    assert result["stdout"] == "done\n"
    assert "could not be stopped: 4242, 4343" in result["warning"]
