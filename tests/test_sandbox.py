"""Sandboxed code execution: each backend runs code, keeps secrets out, and stops runaways.

Escapes are tried for real (reading the parent's environment, writing outside the work
folder, the network, a fork bomb, a 2 GB allocation, an endless loop); a backend that
cannot run on this machine is skipped with the reason.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from harness import Agent
from harness.sandbox import BACKENDS, Limits, SandboxError, get_sandbox
from harness.sandbox.tool import CodeExecutionTool

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
    assert result.limit in ("processes", "timeout")
    # The group (and cgroup) was killed: nothing runs on. SIGKILL is delivered by the
    # kernel as each process is next scheduled, so on a busy machine a killed process
    # may show as running for a moment: allow it a bounded time to go.
    deadline = time.monotonic() + 10
    while _named(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _named(marker) == []


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


# -- what only the stronger backends refuse ---------------------------------------------------


@pytest.fixture(params=["bubblewrap", "docker"])
def isolated(request, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    return backend(request.param)


def test_the_parents_environment_cannot_be_read_through_proc(isolated):
    code = (
        "import os\nfound = []\nfor p in os.listdir('/proc'):\n"
        "    if p.isdigit():\n        try:\n"
        "            found.append(open(f'/proc/{p}/environ', 'rb').read().decode())\n"
        "        except OSError:\n            pass\nprint(found)"
    )
    assert SECRET not in run(isolated, code).stdout
    assert str(os.getpid()) not in run(isolated, "import os\nprint(os.listdir('/proc'))").stdout


def test_nothing_outside_the_work_folder_can_be_written(isolated):
    # Outside /tmp (the sandbox has a private one): a folder the host can write to.
    target = Path("/var/tmp") / f"harness-escape-{os.getpid()}.txt"
    try:
        result = run(isolated, f"open({str(target)!r}, 'w').write('x')")
        assert result.exit_status != 0 and "Read-only file system" in result.stderr
        assert not target.exists()
    finally:
        target.unlink(missing_ok=True)


def test_the_network_is_blocked(isolated):
    result = run(isolated, "import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=2)")
    assert result.limit == "network"


# -- choosing a backend -----------------------------------------------------------------------


def test_auto_picks_the_strongest_backend_that_works_here():
    chosen = get_sandbox("auto")
    working = [name for name in BACKENDS if get_sandbox_or_none(name) is not None]
    assert chosen.name == working[0]


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
    code_tool = CodeExecutionTool(sandbox="process", timeout=1.0)
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
        "SandboxLimitError: the code ran longer than 1 s and was stopped (its processes "
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
