"""docs/tutorial.md runs as written: its files are written and its commands run in order,
each with the exit status the page says (`# exits N`, else 0)."""

from __future__ import annotations

import os
import re
import shlex
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


def test_the_tutorial_runs_as_written(pytester, monkeypatch, capsys):
    monkeypatch.chdir(pytester.path)
    for name in ("GITHUB_STEP_SUMMARY", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    steps = _steps(TUTORIAL.read_text(encoding="utf-8"))
    commands = [s[1] for s in steps if s[0] == "command"]
    assert commands[:4] == [
        "pip install loop-harness",
        "harness init weather",
        "cd weather",
        "harness run",
    ]
    for kind, what, detail in steps:
        if kind == "file":
            Path(what).write_text(detail, encoding="utf-8")
            continue
        args = shlex.split(what)
        if args[0] == "pip":
            continue  # this test runs in the environment harness is installed in
        if args[0] == "cd":
            os.chdir(args[1])  # monkeypatch.chdir above restores the folder
            continue
        assert args[0] == "harness", what
        status = cli.main(args[1:])
        captured = capsys.readouterr()
        assert status == int(detail), f"{what}: exit {status}\n{captured.out}{captured.err}"
        if what.startswith("harness run --fail-on-change --markdown"):
            assert "answer: It is 41F {+and windy+} in Oslo." in captured.out
            assert Path("reports/summary.md").is_file()
