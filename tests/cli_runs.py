"""harness's command run in the test's process, as a user types it: its exit status and
what it printed (stdout, then stderr)."""

from __future__ import annotations

from typing import Any


def harness(capsys: Any, *args: str) -> tuple[int, str]:
    from harness import cli

    status = cli.main(list(args))
    captured = capsys.readouterr()
    return status, captured.out + captured.err
