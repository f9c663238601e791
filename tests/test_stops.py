"""A command stopped from outside ends by one rule (docs/running.md#stopped-from-outside):
quietly, with 128 + the signal's number, as a shell reports it. Every command that prints
runs into a closed pipe (what `| head` leaves once it has read enough): 141. Ctrl-C while
a command works: 130. (Ctrl-C in the middle of `harness run`: tests/test_cli.py; the
servers, for which Ctrl-C is the normal end: tests/test_server.py.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

FOREIGN = Path(__file__).parent / "fixtures" / "foreign-cassettes"
CASSETTE = FOREIGN / "llm-test_tools-test_tool_use_basic.yaml"
SCENARIO = """\
name: greet
input: hi
llm: {script: [{content: Hello there.}]}
expect: {termination: completed}
"""
# Ctrl-C while the command loads its plugins: the module interrupts its own process.
SIGINT_AT_IMPORT = """\
import os
import signal

signal.signal(signal.SIGINT, signal.default_int_handler)
os.kill(os.getpid(), signal.SIGINT)
"""
QUIET = ("Traceback", "internal error", "Exception ignored", "BrokenPipeError")


def _sigint_as_usual() -> None:
    # A test run started as a background job hands its children SIGINT ignored.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def harness(project: Path, *args: str, **options) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=project,
        text=True,
        timeout=180,
        preexec_fn=_sigint_as_usual,
        **options,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A project with one scenario, and the results of its run as one shard."""
    root = tmp_path_factory.mktemp("project")
    (root / "pyproject.toml").write_text("[project]\nname = 'stops'\n")
    (root / "scenarios").mkdir()
    (root / "scenarios" / "greet.scenario.yaml").write_text(SCENARIO)
    (root / "sigint_at_import.py").write_text(SIGINT_AT_IMPORT)
    done = harness(
        root, "run", "--shard", "1/1", "--json", "shard.json", "--html", "shard.html",
        capture_output=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return root


PRINTING = {
    "run": ["run", "scenarios", "--json", "out.json", "--html", "out.html"],
    "record": ["record", "scenarios", "--json", "out.json", "--html", "out.html"],
    "validate": ["validate", "scenarios"],
    "schema": ["schema"],
    "plugins": ["plugins"],
    "plugins --json": ["plugins", "--json"],
    "report": ["report", "shard.json", "-o", "out.html"],
    "merge": ["merge", "shard.json", "--json", "merged.json", "--html", "merged.html"],
    "freeze": ["freeze", str(CASSETTE)],
    "serve": ["serve", "scenarios/greet.scenario.yaml", "--port", "0"],
    "agent-serve": ["agent-serve", "scenarios/greet.scenario.yaml", "--port", "0"],
    "--help": ["--help"],
    "run --help": ["run", "--help"],
    "--version": ["--version"],
}


@pytest.mark.parametrize("args", PRINTING.values(), ids=PRINTING.keys())
def test_a_closed_pipe_ends_every_command_quietly_with_141(project, args):
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    try:
        done = harness(project, *args, stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr
    assert not [word for word in QUIET if word in done.stderr], done.stderr


def test_with_its_reader_there_the_same_commands_exit_0(project):
    # The control: nothing above fails for another reason.
    for args in (PRINTING["plugins --json"], PRINTING["freeze"], PRINTING["report"]):
        done = harness(project, *args, capture_output=True)
        assert (done.returncode, done.stderr.count("Traceback")) == (0, 0), done.stderr


@pytest.mark.parametrize("command", ["run", "validate", "plugins"])
def test_ctrl_c_while_plugins_load_exits_130(project, command):
    args = [command, "-p", "sigint_at_import"] + (["scenarios"] if command != "plugins" else [])
    done = harness(project, *args, capture_output=True)
    assert done.returncode == 130, done.stdout + done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["report", "{fifo}", "-o", "out.html"],
        ["merge", "{fifo}", "--json", "merged.json", "--html", "merged.html"],
        ["freeze", "{fifo}"],
    ],
    ids=["report", "merge", "freeze"],
)
def test_ctrl_c_while_a_command_waits_for_its_input_exits_130(project, tmp_path, args):
    # The input is a named pipe nobody writes to: the command waits in read() until
    # Ctrl-C. Opening the pipe's other end returns once the command has opened it, so
    # the signal comes while the command works, never while Python starts.
    fifo = tmp_path / "input.json"
    os.mkfifo(fifo)
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *(a.format(fifo=fifo) for a in args)],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_sigint_as_usual,
    )
    writer: list[int] = []
    opened = threading.Thread(target=lambda: writer.append(os.open(fifo, os.O_WRONLY)))
    opened.daemon = True
    opened.start()
    opened.join(timeout=120)
    try:
        assert writer, "the command never opened its input"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        process.kill()
        for fd in writer:
            os.close(fd)
    assert process.returncode == 130, out + err
    assert "Traceback" not in err
