"""The command synopses in README.md and docs/running.md agree with `harness CMD --help`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness import cli

ROOT = Path(__file__).resolve().parent.parent
OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])(?![\w-])")


def _blocks(text: str) -> list[list[str]]:
    """The lines of each fenced block without a language (how the synopses are written)."""
    blocks, current = [], None
    for line in text.splitlines():
        if line.startswith("```"):
            if current is None:
                current = [] if line.strip() == "```" else ["<other>"]
            else:
                if current[:1] != ["<other>"]:
                    blocks.append(current)
                current = None
        elif current is not None:
            current.append(line)
    return blocks


def _synopses(path: Path) -> dict[str, set[str]]:
    """Command -> options named in the file's ``harness CMD ...`` lines (and their
    continuation lines)."""
    found: dict[str, set[str]] = {}
    for block in _blocks(path.read_text(encoding="utf-8")):
        command = None
        for line in block:
            start = re.match(r"harness ([a-z][\w-]*)", line)
            if start:
                command = start.group(1)
            elif not line.startswith(" ") or command is None:
                command = None
                continue
            text = line.split("#", 1)[0].split("[-- PYTEST ARGS]", 1)[0]
            found.setdefault(command, set()).update(OPTION.findall(text))
    return found


def _parser_options(command: str, capsys) -> set[str]:
    """The options `harness COMMAND --help` shows in its usage."""
    try:
        status = cli.main([command, "--help"])
    except SystemExit as exited:
        status = exited.code
    assert status == 0
    out = capsys.readouterr().out
    usage = out.split("\n\n", 1)[0]
    return set(OPTION.findall(usage)) - {"-h"}


@pytest.mark.parametrize("doc", ["README.md", "docs/running.md"])
def test_synopses_name_exactly_the_options_of_each_command(doc, capsys):
    synopses = _synopses(ROOT / doc)
    assert {"run", "validate", "plugins", "report", "serve", "freeze", "agent-serve"} <= set(
        synopses
    )
    for command, named in synopses.items():
        if command == "record":  # "the same options" as run
            continue
        assert named == _parser_options(command, capsys), f"{doc}: harness {command}"
