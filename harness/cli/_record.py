"""``harness record``: ``harness run`` with record mode ``once`` by default, so that the
cassettes of recorded scenarios get what they lack."""

from __future__ import annotations

from harness.cli._parsing import Parser
from harness.cli._run import declare, handle

__all__ = ["add_arguments", "handle"]


def add_arguments(parser: Parser) -> None:
    """``harness record``'s description and options: ``harness run``'s."""
    declare(parser, record=True)
