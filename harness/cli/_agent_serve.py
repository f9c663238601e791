"""``harness agent-serve SCENARIO_OR_MODULE:ATTR [--host H] [--port N] [--session-ttl S]
[--max-sessions N] [--max-message B] [--max-session B] [--max-turns N] [--callers FILE]``:
an agent served over A2A (``harness.a2a.create_app``), one session per ``contextId``:
held by whoever has the contextId, or by its caller when ``--callers`` names them.

The agent is a scenario file's (a fresh Agent, so a fresh LLM source, per session) or
the one a factory makes: ``module:attr`` names a function (or class) that returns a new
``harness.Agent`` each time it is called, imported from the current folder.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness._errors import HarnessError, describe
from harness._exitcodes import EXIT
from harness.cli._parsing import Parser, to_stderr

__all__ = ["add_arguments", "handle"]

DEFAULT_PORT = 8001


def add_arguments(parser: Parser) -> None:
    """``harness agent-serve``'s description and options."""
    from harness.a2a._sessions import (
        DEFAULT_MAX_MESSAGE,
        DEFAULT_MAX_SESSION,
        DEFAULT_MAX_SESSIONS,
        DEFAULT_MAX_TURNS,
        DEFAULT_SESSION_TTL,
    )

    parser.description = (
        "Serve an agent over A2A (agent card, SendMessage, SendStreamingMessage, "
        "GetTask and the v0.3 names; GET /sessions/ID, POST /sessions)."
    )
    parser.add_argument(
        "agent",
        metavar="SCENARIO_OR_MODULE:ATTR",
        help="a *.scenario.yaml file, or module:attr naming a function that returns a new Agent",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}; 0 picks a free one"
    )
    parser.add_argument(
        "--session-ttl",
        type=float,
        default=DEFAULT_SESSION_TTL,
        help=f"seconds a session may stay idle (default {DEFAULT_SESSION_TTL:g})",
    )
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=DEFAULT_MAX_SESSIONS,
        help=f"sessions kept, least recently used dropped first (default {DEFAULT_MAX_SESSIONS})",
    )
    parser.add_argument(
        "--max-message",
        type=int,
        default=DEFAULT_MAX_MESSAGE,
        metavar="B",
        help=f"bytes of one message (default {DEFAULT_MAX_MESSAGE})",
    )
    parser.add_argument(
        "--max-session",
        type=int,
        default=DEFAULT_MAX_SESSION,
        metavar="B",
        help=f"bytes one session may hold (default {DEFAULT_MAX_SESSION})",
    )
    parser.add_argument(
        "--max-turns",
        type=int,
        default=DEFAULT_MAX_TURNS,
        help=f"turns running or waiting at once (default {DEFAULT_MAX_TURNS})",
    )
    _add_callers(parser)


def _add_callers(parser: Parser) -> None:
    parser.add_argument(
        "--callers",
        type=Path,
        metavar="FILE",
        help="a JSON file {caller name: bearer token}: callers then authenticate by the "
        "agent card's bearer scheme, and a session is its caller's",
    )


def _callers(path: Path | None) -> dict[str, str] | None:
    """--callers' file as create_app takes it (token -> name); HarnessError when it is
    not a JSON object of names and tokens (the tokens are never printed)."""
    import json

    from harness._files import read_bounded

    if path is None:
        return None
    try:
        given = json.loads(read_bounded(path).decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise HarnessError(f"--callers {path}: cannot read it: {exc}") from None
    if not isinstance(given, dict) or not given:
        raise HarnessError(f'--callers {path}: expected a JSON object {{"NAME": "TOKEN", ...}}')
    for name, token in given.items():
        if not isinstance(token, str) or len(token) < 16:
            raise HarnessError(
                f"--callers {path}: {name!r}: its token must be a string of 16 characters or more"
            )
    if len(set(given.values())) < len(given):
        raise HarnessError(f"--callers {path}: two callers have the same token")
    return {token: name for name, token in given.items()}


def _is_scenario(target: str) -> bool:
    return target.endswith((".yaml", ".yml")) or Path(target).is_file()


def _factory(target: str) -> tuple[Callable[[], Any], str, str]:
    """(agent factory, card name, card description) for the command line's agent."""
    if _is_scenario(target):
        from harness.scenario import load_scenario
        from harness.scenario._serving import agent_factory

        scenario = load_scenario(target)
        description = scenario.description or f"the agent of scenario {scenario.display_name}"
        return agent_factory(scenario), scenario.display_name, description
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise HarnessError(
            f"{target!r} is neither a scenario file nor module:attr; write "
            "path/to/agent.scenario.yaml or mypackage.agents:make_agent"
        )
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as exc:
        raise HarnessError(f"cannot import {target}: {type(exc).__name__}: {exc}") from None
    if not isinstance(obj, type) and callable(getattr(obj, "arun", None)):
        raise HarnessError(
            f"{target} is an Agent; agent-serve needs a function that makes a new Agent for "
            "each session (def make_agent(): return Agent(...)), so that sessions share no "
            "LLM source or conversation"
        )
    if not callable(obj):
        raise HarnessError(f"{target} is {describe(obj)}, not a function that returns an Agent")
    return obj, attr.rsplit(".", 1)[-1], f"the agent made by {target}"


def _problem(args: Any) -> str | None:
    if not 0 <= args.port <= 65535:
        return "--port must be 0-65535"
    if not args.session_ttl > 0:
        return "--session-ttl must be > 0 seconds"
    for flag in ("max_sessions", "max_message", "max_session", "max_turns"):
        if getattr(args, flag) < 1:
            return f"--{flag.replace('_', '-')} must be at least 1"
    if args.max_message > args.max_session:
        return "--max-message must not be more than --max-session (a session holds its messages)"
    return None


def handle(args: argparse.Namespace) -> int:
    """``harness agent-serve``: serve until SIGTERM or Ctrl-C; 0 then, 2 on bad input."""
    problem = _problem(args)
    if problem is not None:
        to_stderr(f"harness agent-serve: {problem}")
        return EXIT["bad_input"]
    try:
        callers = _callers(args.callers)
        factory, name, description = _factory(args.agent)
        # Made once now: a factory that fails says so before the server starts.
        factory()
    except HarnessError as exc:
        to_stderr(f"harness agent-serve: {exc}")
        return EXIT["bad_input"]
    except Exception as exc:
        to_stderr(
            f"harness agent-serve: {args.agent} did not make an agent: {type(exc).__name__}: {exc}",
        )
        return EXIT["bad_input"]
    from harness.a2a._app import create_app
    from harness.a2a._running import serve_app
    from harness.cli._serve import _is_loopback

    if not _is_loopback(args.host):
        to_stderr(
            f"harness agent-serve: warning: serving on {args.host}, reachable from other machines",
        )
    app = create_app(
        factory,
        name=name,
        description=description,
        session_ttl=args.session_ttl,
        max_sessions=args.max_sessions,
        max_message=args.max_message,
        max_session=args.max_session,
        max_turns=args.max_turns,
        callers=callers,
    )

    def started(port: int) -> None:
        shown = f"[{args.host}]" if ":" in args.host else args.host
        print(
            f"harness agent-serve: {args.agent} at http://{shown}:{port} (agent card at "
            "/.well-known/agent-card.json; Ctrl-C to stop)",
            flush=True,
        )

    try:
        serve_app(app, args.host, args.port, on_started=started)
    except HarnessError as exc:
        to_stderr(f"harness agent-serve: {exc}")
        return EXIT["bad_input"]
    print("harness agent-serve: stopped", flush=True)
    return EXIT["passed"]
