"""``harness mcp-serve SCENARIO [--transport stdio|http] [--host H] [--port N]``: a
scenario's ``tools:`` served as an MCP server (``harness.mcp``; docs/mcp.md), to any MCP
client: stubs, per-call results, faults, ``inject:`` and ``rug_pull:`` as in a run."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from harness._errors import HarnessError
from harness._exitcodes import EXIT
from harness.cli._parsing import Parser, to_stderr

__all__ = ["add_arguments", "handle"]

DEFAULT_PORT = 8765


def add_arguments(parser: Parser) -> None:
    """``harness mcp-serve``'s description and options."""
    parser.description = (
        "Serve a scenario's tools: as an MCP server (streamable HTTP at /mcp, or stdio), "
        "with their stubs, per-call results, faults, inject: and rug_pull:."
    )
    parser.add_argument("scenario", type=Path, help="a *.scenario.yaml file with tools:")
    parser.add_argument(
        "--transport",
        choices=("http", "stdio"),
        default="http",
        help="http: streamable HTTP (default); stdio: this process's stdin and stdout",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}; 0 picks a free one"
    )
    from harness.mcp._hosting import SessionLimits

    kept = SessionLimits()
    parser.add_argument(
        "--session-ttl",
        type=float,
        default=kept.ttl,
        metavar="S",
        help=f"seconds a session may go without a request (http; default {kept.ttl:g})",
    )
    parser.add_argument(
        "--max-sessions",
        type=int,
        default=kept.max_sessions,
        metavar="N",
        help=f"sessions open at once (http; default {kept.max_sessions})",
    )


def _server(path: Path) -> Any:
    """The scenario's tools as harness's MCP server; HarnessError when it has none."""
    from harness.scenario import load_scenario
    from harness.scenario._cases import one_scenario
    from harness.scenario._loader import build_tools
    from harness.scenario._mcp_tools import served_tools

    scenario = one_scenario(load_scenario(path), "harness mcp-serve")
    if not scenario.tools:
        raise HarnessError(f"{path}: the scenario has no tools: to serve")
    return served_tools(scenario, build_tools(scenario))


def handle(args: argparse.Namespace) -> int:
    """``harness mcp-serve``: serve until the client leaves (stdio) or Ctrl-C / SIGTERM
    (http); 0 then, 2 on bad input."""
    from harness.mcp._hosting import SessionLimits, serve_http_forever, serve_stdio

    if not 0 <= args.port <= 65535:
        to_stderr("harness mcp-serve: --port must be 0-65535")
        return EXIT["bad_input"]
    if args.max_sessions < 1 or not 0 < args.session_ttl < float("inf"):
        to_stderr(
            "harness mcp-serve: --max-sessions must be 1 or more and --session-ttl more than 0"
        )
        return EXIT["bad_input"]
    try:
        server = _server(args.scenario)
    except (HarnessError, OSError) as exc:
        to_stderr(f"harness mcp-serve: {exc}")
        return EXIT["bad_input"]
    if args.transport == "stdio":
        # stdout carries the protocol: every word for people goes to stderr.
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
        from harness._secrets import ScrubbingFilter

        for handler in logging.getLogger().handlers:
            handler.addFilter(ScrubbingFilter())
        serve_stdio(server)
        return EXIT["passed"]

    def started(url: str) -> None:
        print(f"harness mcp-serve: {args.scenario} at {url} (Ctrl-C to stop)", flush=True)

    try:
        sessions = SessionLimits(max_sessions=args.max_sessions, ttl=args.session_ttl)
        serve_http_forever(server, args.host, args.port, on_started=started, sessions=sessions)
    except HarnessError as exc:
        to_stderr(f"harness mcp-serve: {exc}")
        return EXIT["bad_input"]
    print("harness mcp-serve: stopped", flush=True)
    return EXIT["passed"]
