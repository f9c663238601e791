"""docs/tutorial.md runs as written: its files are written and its commands run in order,
each with the exit status the page says (`# exits N`, else 0). A command ending in `&`
(`harness serve`, standing in for the model) runs in a process of its own until the
page's `kill %1`; its port, 8765 on the page, is a free one here, and `NAME=value` before
a command sets that variable for the command."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

from scenario_texts import SESSION_TESTS

from harness import cli

pytestmark = SESSION_TESTS

TUTORIAL = Path(__file__).resolve().parent.parent / "docs" / "tutorial.md"

_BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def _steps(text: str) -> list[tuple[str, str, str]]:
    """The page's steps in order: ("file", path, text) or ("command", line, expected)."""
    steps = []
    for kind, body in _BLOCK.findall(text):
        first, _, rest = body.partition("\n")
        if first.startswith("# file: "):
            steps.append(("file", first.removeprefix("# file: ").strip(), rest))
        elif kind == "sh":
            for line in body.splitlines():
                command, _, comment = line.partition("#")
                expected = re.search(r"exits (\d+)", comment)
                steps.append(("command", command.strip(), expected.group(1) if expected else "0"))
    return steps


# The port the page's `harness serve` listens on.
PAGE_PORT = "8765"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _in_background(args: list[str], port: int) -> subprocess.Popen[bytes]:
    """``harness ARGS &``: the command in a process of its own, once it listens on port."""
    process = subprocess.Popen([sys.executable, "-m", "harness.cli", *args])
    for _ in range(600):  # it prints its address when it listens; here, its port answers
        if process.poll() is not None:
            raise AssertionError(f"harness {shlex.join(args)} ended with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return process
        except OSError:
            _pause(process, 0.1)
    process.kill()
    raise AssertionError(f"harness {shlex.join(args)} never listened on port {port}")


def _pause(process: subprocess.Popen[bytes], seconds: float) -> None:
    """Give the starting process a moment (it may end meanwhile)."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=seconds)


def test_the_tutorial_runs_as_written(pytester, monkeypatch, capsys):
    monkeypatch.chdir(pytester.path)
    for name in ("GITHUB_STEP_SUMMARY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    port = _free_port()
    text = TUTORIAL.read_text(encoding="utf-8").replace(PAGE_PORT, str(port))
    background: list[subprocess.Popen[bytes]] = []
    try:
        _run_steps(_steps(text), monkeypatch, capsys, port, background)
    finally:
        for process in background:  # a step failed before the page's `kill %1`
            if process.poll() is None:
                process.kill()
                process.wait()


def _run_steps(steps, monkeypatch, capsys, port, background) -> None:
    commands = [s[1] for s in steps if s[0] == "command"]
    assert commands[:7] == [
        "python -m venv .venv && . .venv/bin/activate",
        "pip wheel --no-deps -w wheels path/to/harness",
        "pip install wheels/loop_harness-*.whl",
        "harness init weather",
        "cd weather",
        "pip install -e .",
        "harness run",
    ]
    for kind, what, detail in steps:
        if kind == "file":
            Path(what).write_text(detail, encoding="utf-8")
            continue
        args = shlex.split(what)
        if args[0] in ("pip", "python"):
            # This test runs in the environment harness is installed in (scripts/
            # walkthrough.py does these steps in a fresh one).
            continue
        if args[0] == "cd":
            os.chdir(args[1])  # monkeypatch.chdir above restores the folder
            continue
        if args[0] == "kill":
            assert args[1:] == ["%1"] and background, what
            background[0].terminate()
            assert background[0].wait(timeout=60) == 0, f"{what}: the server's exit status"
            continue
        variables = {}
        while "=" in args[0] and args[0].split("=", 1)[0].isupper():
            name, _, value = args.pop(0).partition("=")
            variables[name] = value
        assert args[0] == "harness", what
        if args[-1] == "&":
            background.append(_in_background(args[1:-1], port))
            continue
        with monkeypatch.context() as scoped:
            for name, value in variables.items():
                scoped.setenv(name, value)
            status = cli.main(args[1:])
        captured = capsys.readouterr()
        assert status == int(detail), f"{what}: exit {status}\n{captured.out}{captured.err}"
        if what.startswith("harness run --fail-on-change --markdown"):
            assert "answer: It is 41F {+and windy+} in Oslo." in captured.out
            assert Path("reports/summary.md").is_file()
        if args[1] == "record":
            # Recorded through the stand-in: the cassette holds both of the model's replies.
            cassette = Path("cassettes/weather-live.yaml").read_text(encoding="utf-8")
            assert "It is 41F and clear in Oslo." in cassette
