"""Sandboxed code execution: each backend runs code, keeps secrets out, and stops runaways.

Escapes are tried for real (reading the parent's environment, writing outside the work
folder, the network, a fork bomb, a 2 GB allocation, an endless loop); a backend that
cannot run on this machine is skipped with the reason.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from harness import Agent
from harness.sandbox import BACKENDS, Limits, SandboxError, get_sandbox
from harness.sandbox._tool import CodeExecutionTool

# Sandboxed code runs as uid 65534 in every worker: one test at a time (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_sandbox_user_at_a_time")

SECRET = "sk-test-do-not-leak-0123456789abcdef"
FAST = Limits(timeout=2.0)


def backend(name: str):
    try:
        return get_sandbox(name)
    except SandboxError as exc:
        # CI installs bubblewrap (.ci/run): there, a bwrap that cannot run is a failure.
        if name == "bubblewrap" and os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


def run(sandbox, code: str, limits: Limits = FAST):
    return asyncio.run(sandbox.run(code, limits))


@pytest.fixture(params=["process", "bubblewrap", "docker"])
def sandbox(request, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    return backend(request.param)


def test_code_runs_and_its_output_comes_back(sandbox):
    result = run(sandbox, "import sys\nprint(6 * 7)\nprint('oops', file=sys.stderr)\nsys.exit(3)")
    assert (result.stdout, result.stderr, result.exit_status) == ("42\n", "oops\n", 3)
    assert result.limit is None and result.sandbox == sandbox.name


def test_no_secret_reaches_the_childs_environment(sandbox):
    result = run(sandbox, "import os\nprint(dict(os.environ))")
    assert SECRET not in result.stdout
    assert "OPENAI_API_KEY" not in result.stdout


def test_an_endless_loop_is_stopped_at_the_timeout(sandbox):
    result = run(sandbox, "while True:\n    pass", Limits(timeout=1.0))
    assert result.limit == "timeout"
    assert result.exit_status is None


def test_a_2_gb_allocation_fails_inside_the_memory_limit(sandbox):
    result = run(sandbox, "x = bytearray(2 * 1024**3)\nprint('allocated')")
    assert result.limit == "memory"
    assert "allocated" not in result.stdout


def test_a_fork_bomb_is_contained_and_nothing_is_left_running(sandbox):
    # The bomb names its processes (their `comm`, seen from outside any namespace) so
    # that other tests' sandboxes running at the same time are not counted.
    marker = f"bomb{uuid.uuid4().hex[:10]}"
    code = f"import os\nopen('/proc/self/comm', 'w').write({marker!r})\nwhile True:\n    os.fork()"
    result = run(sandbox, code, Limits(timeout=3.0, processes=16))
    # Stopped at the process limit: a bomb that merely ran into the timeout was not held.
    assert result.limit == "processes"
    # The group (and cgroup) was killed: nothing runs on. SIGKILL is delivered by the
    # kernel as each process is next scheduled, so on a busy machine a killed process
    # may show as running for a moment: allow it a bounded time to go.
    deadline = time.monotonic() + 10
    while _named(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _named(marker) == []
    # Nor is its pids cgroup (under root) left behind.
    assert _cgroups_of(os.getpid()) == []


def _cgroups_of(pid: int) -> list[Path]:
    """The pids cgroups harness process ``pid`` made that are still there (v1 and v2)."""
    bases = [Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup")]
    return [path for base in bases for path in base.glob(f"harness-sandbox-{pid}-*")]


def _named(comm: str) -> list[str]:
    """Live processes named ``comm`` (zombies are dead: only their exit status is left,
    until this machine's init, which may be slow to, reaps them)."""
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        state = stat[stat.rindex(")") + 2]
        if name == comm and state not in "ZX":
            found.append(pid)
    return found


def test_output_is_cut_at_the_size_limit_with_a_marker(sandbox):
    result = run(sandbox, "print('x' * 1_000_000)", Limits(timeout=5.0, output_bytes=1000))
    assert result.stdout_cut
    assert result.stdout.startswith("x" * 1000)
    assert result.stdout.endswith("[... output cut at 1000 bytes ...]")


def test_the_work_folder_is_new_and_removed_afterwards(sandbox):
    first = run(sandbox, "import os\nprint(os.getcwd(), sorted(os.listdir('.')))")
    assert first.stdout.split(" ", 1)[1].strip() == "['main.py']"
    again = run(sandbox, "open('left.txt', 'w').write('x')\nimport os\nprint(os.getcwd())")
    assert "left.txt" not in run(sandbox, "import os\nprint(os.listdir('.'))").stdout
    assert again.exit_status == 0


# -- what only the stronger backends refuse: tests/test_sandbox_attacks.py, against the
# table of docs/sandbox.md ---------------------------------------------------------------


def test_a_daemon_that_drops_its_environment_and_holds_the_output_is_found_and_killed(sandbox):
    # It leaves the process group (setsid) and the marker in its environment (a new, empty
    # one), and keeps stdout open: found by the pipe it holds, killed, and the call returns
    # instead of reading on until the daemon ends.
    marker = f"held{uuid.uuid4().hex[:10]}"
    code = (
        "import os\nif os.fork() == 0:\n    os.setsid()\n"
        f"    os.execve('/bin/sh', ['sh', '-c', 'exec -a {marker} sleep 3600'], {{}})\n"
        "print('left it running')"
    )
    limits = Limits(timeout=3.0)
    result = asyncio.run(asyncio.wait_for(sandbox.run(code, limits), limits.timeout + 30))
    assert result.stdout == "left it running\n" and result.survivors == []
    deadline = time.monotonic() + 10
    while _cmdline(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _cmdline(marker) == []


def _cmdline(word: str) -> list[str]:
    """Live processes whose command line starts with ``word``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(word.encode()):
                found.append(pid)
        except OSError:
            continue
    return found


# -- choosing a backend -----------------------------------------------------------------------


def test_auto_picks_the_strongest_backend_that_works_here():
    chosen = get_sandbox("auto")
    working = [name for name in BACKENDS if get_sandbox_or_none(name) is not None]
    assert chosen.name == working[0]


def test_auto_resolves_an_interpreter_path_with_dots():
    # python started as .../bin/../bin/python made bwrap fail, and auto fell back to
    # process without a word.
    if get_sandbox_or_none("bubblewrap") is None:
        pytest.skip("bubblewrap cannot run here")
    dotted = str(
        Path(sys.executable).parent
        / ".."
        / Path(sys.executable).parent.name
        / Path(sys.executable).name
    )
    probe = "from harness.sandbox import choose; s, note = choose(); print(s.name, note)"
    done = subprocess.run([dotted, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["bubblewrap", "None"], done.stderr


def test_a_fallback_to_process_is_said_in_every_result(tmp_path):
    # No bwrap on PATH (and no Docker engine): auto falls back to process, and says so.
    program = (
        "import json, logging\nfrom harness import Agent, CodeExecutionTool\n"
        "logging.basicConfig()\n"
        "script = [{'tool_calls': [{'execute_code': {'code': 'print(1)'}}]}, {'content': 'ok'}]\n"
        "run = Agent(llm=script, tools=[CodeExecutionTool()]).run('go')\n"
        "print(json.dumps(run.tool_calls[0].result))"
    )
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path), "DOCKER_HOST": "unix:///nonexistent"}
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=60
    )
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["sandbox"] == "process" and result["stdout"] == "1\n"
    assert result["warning"].startswith(
        "sandbox 'auto' fell back to 'process', which does not isolate the code"
    )
    assert "bubblewrap: bwrap is not on PATH" in result["warning"]
    assert "fell back to 'process'" in done.stderr  # and in the log, once


def get_sandbox_or_none(name):
    try:
        return get_sandbox(name)
    except SandboxError:
        return None


def test_an_unknown_or_unusable_backend_says_why():
    with pytest.raises(SandboxError, match="unknown sandbox 'firejail'; use one of auto, docker"):
        get_sandbox("firejail")
    reason = BACKENDS["docker"]().unavailable()
    if reason is not None:  # no engine on this machine: the error names what is missing
        with pytest.raises(SandboxError, match="sandbox 'docker' cannot run here: "):
            get_sandbox("docker")


# -- the tool in a run --------------------------------------------------------------------------


def test_code_execution_tool_in_a_run_computes_and_reports_limits_as_error_results():
    # The budget covers the computation's own start (a fork of this process) too:
    # long enough for it on a loaded machine, short for the loop.
    code_tool = CodeExecutionTool(sandbox="process", timeout=3.0)
    agent = Agent(
        llm=[
            {"tool_calls": [{"execute_code": {"code": "print(6 * 7)"}}]},
            {"tool_calls": [{"execute_code": {"code": "while True: pass"}}]},
            {"content": "The answer is 42."},
        ],
        tools=[code_tool],
    )
    result = agent.run("Compute 6*7, then loop forever.")
    assert result.termination == "completed"
    computed, looped = result.tool_calls
    assert computed.status == "ok"
    assert computed.result == {
        "stdout": "42\n",
        "stderr": "",
        "exit_status": 0,
        "sandbox": "process",
    }
    assert looped.status == "error" and looped.is_error
    assert looped.result == (
        "SandboxLimitError: the code ran longer than 3 s and was stopped (its processes "
        "killed) [sandbox: process]"
    )


def test_code_execution_tool_offers_one_code_parameter():
    schema = CodeExecutionTool(sandbox="process").openai_schema()["function"]
    assert schema["name"] == "execute_code"
    assert schema["parameters"]["required"] == ["code"]
    assert list(schema["parameters"]["properties"]) == ["code"]


def test_sigint_handling_is_not_changed_by_a_run():
    before = signal.getsignal(signal.SIGINT)
    run(get_sandbox("process"), "print(1)")
    assert signal.getsignal(signal.SIGINT) == before


def test_only_the_standard_library_unless_site_packages_are_asked_for():
    sandbox = get_sandbox("process")
    probe = "import json, sys\nimport pluggy\nprint(json.dumps(sys.flags.no_site))"
    assert "ModuleNotFoundError: No module named 'pluggy'" in run(sandbox, probe).stderr
    assert run(sandbox, probe, Limits(site_packages=True)).stdout == "0\n"


# -- room for files, and guards checked one at a time ------------------------------------------


def test_shared_memory_works_in_its_own_bounded_dev_shm(sandbox):
    # multiprocessing's shared memory lives in /dev/shm: the code has one it may write
    # (a tmpfs of disk_mb where the backend makes one; the host's under other users).
    code = (
        "from multiprocessing import shared_memory\n"
        "block = shared_memory.SharedMemory(create=True, size=1 << 20)\n"
        "block.buf[:5] = b'hello'\nprint(bytes(block.buf[:5]).decode())\n"
        "block.close()\nblock.unlink()"
    )
    result = run(sandbox, code, Limits(timeout=10.0))
    assert (result.stdout, result.exit_status) == ("hello\n", 0), result.stderr


def test_the_room_for_files_is_the_tools_disk_mb():
    # process has a room of its own only under root (its namespaces)
    backends = ["process"] if os.geteuid() == 0 else []
    backends += [name for name in ("bubblewrap",) if get_sandbox_or_none(name)]
    if not backends:
        pytest.skip("neither bubblewrap nor root here: no room of the code's own to size")
    code = (
        "import os\nwritten = 0\ntry:\n"
        "    for part in range(6):\n"
        "        with open(f'part{part}', 'wb') as out:\n"
        "            for _ in range(4):\n"
        "                out.write(b'x' * (1 << 20)); out.flush(); written += 1 << 20\n"
        "except OSError as exc:\n    print(exc.errno == 28)\nprint(written >> 20)"
    )
    for name in backends:
        tool = CodeExecutionTool(sandbox=name, timeout=20.0, disk_mb=8)
        result = asyncio.run(tool._execute(code))
        if "warning" in result:  # process could not make namespaces here: no room to size
            continue
        lines = result["stdout"].split()
        assert lines[0] == "True" and int(lines[1]) <= 8, (name, result)


def test_bubblewrap_keeps_kernel_settings_read_only_even_if_the_code_were_root(monkeypatch):
    # The second guard alone: bwrap started as harness's own user, root here, maps the
    # code to host root (seen from the host, while it waits); /proc/sys must still be
    # read-only.
    if os.geteuid() != 0:
        pytest.skip("the code is root on the host only when harness is")
    bwrap = backend("bubblewrap")
    from harness.sandbox import _bubblewrap as bubblewrap
    from harness.sandbox._base import Confinement

    monkeypatch.setattr(bubblewrap, "_confinement", lambda: Confinement())
    comm = f"asroot{uuid.uuid4().hex[:8]}"
    code = (
        f"import time\nopen('/proc/self/comm', 'w').write({comm!r})\ntime.sleep(2)\n"
        "value = open('/proc/sys/vm/swappiness').read()\n"
        "try:\n    open('/proc/sys/vm/swappiness', 'w').write(value)\n    print('written')\n"
        "except OSError as exc:\n    print(exc.errno)"
    )
    seen: set[int] = set()
    watching = threading.Event()
    watcher = threading.Thread(target=_watch_uids, args=(comm, seen, watching))
    watching.set()
    watcher.start()
    try:
        result = run(bwrap, code, Limits(timeout=10.0))
    finally:
        watching.clear()
        watcher.join()
    assert seen == {0}, "the code was not root on the host: this guard was not tested alone"
    assert result.stdout == "30\n", result  # EROFS


def _watch_uids(comm: str, seen: set[int], watching: threading.Event) -> None:
    """Add the host's user ids (real, effective) of processes named ``comm`` to ``seen``."""
    while watching.is_set():
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            if fields.get("Name", "").strip() == comm:
                seen.update(int(uid) for uid in fields["Uid"].split()[:2])
        time.sleep(0.05)


def test_process_under_root_without_namespaces_says_so_in_every_result(monkeypatch):
    from harness.sandbox._process import ProcessSandbox

    sandbox = ProcessSandbox()
    sandbox._checked, sandbox._no_namespaces = True, "unshare: Operation not permitted"
    result = run(sandbox, "print(1)")
    assert result.stdout == "1\n"
    if os.geteuid() != 0:
        assert result.warning is None
        return
    assert result.warning == (
        "sandbox 'process' could not make namespaces here, so the code (root without "
        "capabilities) can signal harness and write root's files: unshare: Operation not "
        "permitted"
    )
    tool = CodeExecutionTool(sandbox="process")
    monkeypatch.setattr(tool, "sandbox", sandbox)
    assert asyncio.run(tool._execute("print(1)"))["warning"] == result.warning


def test_a_folder_left_by_a_killed_harness_goes_with_the_next_run(tmp_path):
    # A harness killed mid-run (SIGKILL) cannot remove its work folder on the host; the
    # next run removes it, and leaves a live run's alone: one whose harness runs, or (in
    # another pid namespace, unseen) holds its lock. (Not 1,500 deep as the attacks make
    # it: pytest's own cleanup of tmp_path recurses, should a mutant leave it there.)
    from harness.sandbox import _folder as folder

    holder = (
        "import os, sys, time\nfrom harness.sandbox._folder import HostFolder\n"
        "folder = HostFolder('print(1)')\nos.chdir(folder.path)\n"
        "for _ in range(40):\n    os.mkdir('d'); os.chdir('d')\n"
        "print(folder.path, flush=True)\ntime.sleep(3600)"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}

    def start() -> tuple[subprocess.Popen, Path]:
        held = subprocess.Popen(
            [sys.executable, "-c", holder], stdout=subprocess.PIPE, text=True, env=env
        )
        return held, Path(held.stdout.readline().strip())

    unseen = tmp_path / "harness-sandbox-999999999-1-elsewhere"
    unseen.mkdir()
    lock = os.open(unseen, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(lock, fcntl.LOCK_SH)
    killed, left = start()
    alive, kept = start()
    try:
        killed.kill()
        killed.wait()
        assert left.is_dir()
        subprocess.run(
            [sys.executable, "-c", "from harness.sandbox._folder import HostFolder as F\n"
             "F('print(2)').remove()"],
            check=True, env=env, timeout=300,
        )  # fmt: skip
        assert not left.exists() and kept.is_dir() and unseen.is_dir()
    finally:
        os.close(lock)
        for held in (killed, alive):
            held.kill()
            held.wait()
            held.stdout.close()
        folder._tidy(str(tmp_path))  # the live one's too, now that it is gone


def test_a_cgroup_busy_when_its_run_ended_goes_with_a_later_run():
    # Killed processes stay in their cgroup until they are reaped: a cgroup that could not
    # be removed when its run ended is removed by a later run of the same harness. (Held
    # busy here by a cgroup inside it, removed as the reaping would end it: whether a
    # killed process's zombie keeps its cgroup busy is a race of the kernel's, which made
    # this test fail now and then when the killed process stood in for it.)
    from harness.sandbox._cgroup import PidsCgroup

    first = PidsCgroup(4)
    if first.path is None:
        pytest.skip("harness cannot make a pids cgroup here (root, with cgroups, can)")
    left = Path(str(first.path))
    (left / "busy").mkdir()
    try:
        assert first.close() is False  # busy: still there after its run
        assert left.exists()
        PidsCgroup(4).close()
        assert left.exists()  # a later run cannot remove it while it is busy either
    finally:
        (left / "busy").rmdir()
    PidsCgroup(4).close()
    assert not left.exists() and _cgroups_of(os.getpid()) == []


def test_a_limit_below_one_is_refused_where_the_tool_is_made():
    # disk_mb=0 would make an unbounded tmpfs (a size of 0 means none to the kernel).
    with pytest.raises(SandboxError, match="sandbox limit disk_mb must be at least 1, not 0"):
        CodeExecutionTool(sandbox="process", disk_mb=0)


def test_process_under_root_keeps_the_host_read_only_without_mount_setattr(monkeypatch):
    # Kernels before 5.12 have no mount_setattr: the host's mounts are made read-only one
    # by one instead. (ENOSYS here from a system call number no kernel has.)
    if os.geteuid() != 0:
        pytest.skip("process makes namespaces under root only")
    from harness.sandbox import _namespaces as namespaces
    from harness.sandbox._process import ProcessSandbox

    monkeypatch.setattr(namespaces, "_MOUNT_SETATTR", 99_999)
    probe = f"/var/tmp/harness-readonly-{uuid.uuid4().hex[:8]}"
    code = (
        f"import os\nfor path in [{probe!r}, '/sys/fs/cgroup/pids/cgroup.procs']:\n"
        "    try:\n        open(path, 'w').write('x')\n        print('written', path)\n"
        "    except OSError as exc:\n        print(exc.errno)"
    )
    try:
        result = run(ProcessSandbox(), code)
        assert result.warning is None, result.warning
        assert result.stdout == "30\n30\n", result  # EROFS, both
    finally:
        Path(probe).unlink(missing_ok=True)


def test_process_under_root_runs_an_interpreter_that_lives_under_tmp(tmp_path_factory):
    # A project cloned under /tmp runs its venv's python from there: the sandbox's own
    # /tmp (a new tmpfs) hid it, and the code never started.
    if os.geteuid() != 0:
        pytest.skip("process makes namespaces under root only")
    import site
    import tempfile

    if not Path(tempfile.gettempdir()).resolve().is_relative_to("/tmp"):
        pytest.skip("the temporary folder is not under /tmp here")
    venv = tmp_path_factory.mktemp("venv-under-tmp") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    here = Path(__file__).resolve().parents[1]
    code = (
        "import asyncio\nfrom harness.sandbox import Limits, get_sandbox\n"
        "run = asyncio.run(get_sandbox('process').run('import sys; print(sys.executable)', Limits()))\n"
        "print(run.stdout.strip(), run.warning)"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(here), *site.getsitepackages()])},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [str(venv.resolve() / "bin" / "python"), "None"]
