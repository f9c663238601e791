"""The Ctrl-C tests pass however the test run was started.

A background job (`pytest &` in a script) inherits SIGINT ignored; the processes those
tests start must restore Ctrl-C themselves, or the tests would hang or fail there.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CTRL_C_TESTS = [
    "tests/test_cli.py::test_ctrl_c_leaves_reports_and_baseline_as_they_were",
    "tests/test_pytest_plugin.py::test_an_interrupted_run_writes_no_reports",
]


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_ctrl_c_tests_pass_when_started_with_sigint_ignored():
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_XDIST")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            *CTRL_C_TESTS,
        ],
        cwd=ROOT,
        env=env,
        preexec_fn=_ignore_sigint,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "4 passed" in done.stdout
