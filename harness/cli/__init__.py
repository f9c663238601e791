"""The ``harness`` command: every front end, one module per command.

``run`` (run and record, through pytest), ``validate`` (validate and schema),
``plugins``, ``report``, ``serve``, ``freeze``, ``merge`` and ``agent-serve``; ``parsing``
holds the one argument parser, ``exitcodes`` the one table of exit statuses, ``baseline``
the baseline's reading and writing. ``report``, ``serve``, ``freeze``, ``merge`` and
``agent-serve`` parse their own arguments (``report_main``, ``serve_main``,
``freeze_main``, ``merge_main``, ``agent_serve_main``): ``main`` hands them the rest of
the command line. Command modules are imported when their command runs, so that
``harness --version`` and the pytest plugin (which reads ``exitcodes``) stay light.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from harness.cli.parsing import Parser, UsageError, to_stderr
from harness.exitcodes import EXIT

__all__ = ["EXIT", "main"]

# Commands that parse their own arguments: module, function, help.
_DELEGATES = {
    "report": ("harness.cli.report", "report_main", "render saved results as HTML"),
    "serve": ("harness.cli.serve", "serve_main", "an OpenAI-compatible server for a scenario"),
    "freeze": ("harness.cli.freeze", "freeze_main", "a scenario file from a recorded cassette"),
    "merge": ("harness.cli.merge", "merge_main", "join the results of `harness run --shard` jobs"),
    "agent-serve": (
        "harness.cli.agent_serve",
        "agent_serve_main",
        "an agent served over A2A, one session per contextId",
    ),
}
_Handler = Callable[[argparse.Namespace, list[str]], int]


def _parser() -> Parser:
    from harness import __version__
    from harness.cli import plugins, run, validate

    parser = Parser(
        prog="harness",
        description="Test and simulate LLM agent loops: scenario files, cassettes, reports.",
    )
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    run.add_parsers(commands)
    validate.add_parsers(commands)
    plugins.add_parser(commands)
    for name, (_, _, help_text) in _DELEGATES.items():
        commands.add_parser(name, help=help_text, add_help=False)
    return parser


def _handlers() -> dict[str, _Handler]:
    from harness.cli.plugins import plugins_command
    from harness.cli.run import run_command
    from harness.cli.validate import schema_command, validate_command

    return {
        "run": run_command,
        "record": run_command,
        "validate": validate_command,
        "schema": schema_command,
        "plugins": plugins_command,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``harness`` console script; returns the exit status."""
    from harness.cli.stops import stopped_from_outside

    return stopped_from_outside(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in _DELEGATES:
        command = args[0]
        return _guarded(command, lambda: _delegate(command, args[1:]))
    extra: list[str] = []
    if args and args[0] in ("run", "record") and "--" in args:
        cut = args.index("--")
        args, extra = args[:cut], args[cut + 1 :]
    parser = _parser()
    try:
        options, unknown = parser.parse_known_args(args)
    except SystemExit as exc:  # --help, --version (0) and usage errors (2)
        return int(exc.code or 0)
    command = options.command
    if command is None:
        parser.print_help(sys.stderr)
        return EXIT["bad_input"]
    if unknown:
        hint = (
            "; pytest options go after `--`: harness run scenarios/ -- --maxfail 3"
            if command in ("run", "record")
            else ""
        )
        to_stderr(
            f"harness {command}: unrecognized arguments: {' '.join(unknown)}{hint}",
        )
        return EXIT["bad_input"]
    handler = _handlers()[command]
    return _guarded(command, lambda: handler(options, extra))


def _delegate(command: str, argv: list[str]) -> int:
    module_name, function, _ = _DELEGATES[command]
    target = getattr(importlib.import_module(module_name), function)
    return int(target(argv) or 0)


def _guarded(command: str, call: Callable[[], int]) -> int:
    """Run a command: bad input exits 2 with its message, a harness bug 3 with a traceback,
    a stop from outside (Ctrl-C, a closed pipe) 130 or 141 quietly (harness.cli.stops)."""
    from harness.errors import HarnessError

    try:
        return call()
    except (UsageError, HarnessError) as exc:
        to_stderr(f"harness {command}: {exc}")
        return EXIT["bad_input"]
    except KeyboardInterrupt:
        return EXIT["interrupted"]
    except Exception as exc:
        from harness.cli.stops import output_closed, reader_gone

        if output_closed(exc):
            return reader_gone()
        import traceback

        traceback.print_exc()
        to_stderr(f"harness {command}: internal error (a bug in harness): {exc}")
        return EXIT["internal"]
