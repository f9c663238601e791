"""The ``harness`` command's entry point: the table of commands, the argument parser
built from it, and the command chosen run, its errors turned into exit statuses
(``harness._exitcodes``)."""

from __future__ import annotations

import difflib
import importlib
import sys
from collections.abc import Callable, Sequence

from harness._exitcodes import EXIT
from harness.cli._parsing import Parser, UsageError, to_stderr

__all__ = ["COMMANDS", "main"]

# Every command, in the order `harness --help` lists them: its module and its line there.
COMMANDS = {
    "init": ("harness.cli._init", "make a project skeleton that passes `harness run`"),
    "run": ("harness.cli._run", "run scenario files through pytest and write reports/"),
    "record": ("harness.cli._record", "record cassettes: run with --record-mode once"),
    "validate": ("harness.cli._validate", "check scenario files without running them"),
    "schema": ("harness.cli._schema", "print the JSON Schema of scenario files"),
    "plugins": ("harness.cli._plugins", "list plugins, their hooks and what they registered"),
    "report": ("harness.cli._report", "render saved results as HTML"),
    "serve": ("harness.cli._serve", "a scenario's model served on OpenAI, Anthropic, Gemini APIs"),
    "mcp-serve": ("harness.cli._mcp_serve", "a scenario's tools served as an MCP server"),
    "freeze": ("harness.cli._freeze", "a scenario file from a recorded cassette"),
    "shrink": ("harness.cli._shrink", "the smallest scenario that fails the same way"),
    "explore": ("harness.cli._explore", "every fault at every site: the failures nobody wrote"),
    "merge": ("harness.cli._merge", "join the results of `harness run --shard` jobs"),
    "coverage": (
        "harness.cli._coverage",
        "a run's behaviour coverage, and scenarios for what it missed",
    ),
    "agent-serve": (
        "harness.cli._agent_serve",
        "an agent served over A2A, one session per contextId",
    ),
}


def _parser(command: str | None) -> tuple[Parser, Parser | None]:
    """The parser of ``harness``, and the subcommand's, with ``command``'s arguments."""
    from harness import __version__

    parser = Parser(
        prog="harness",
        description="Test and simulate LLM agent loops: scenario files, cassettes, reports.",
    )
    parser.add_argument("--version", action="version", version=f"harness {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    chosen = None
    for name, (module, help_text) in COMMANDS.items():
        sub = commands.add_parser(name, help=help_text)
        if name == command:
            importlib.import_module(module).add_arguments(sub)
            chosen = sub
    return parser, chosen


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``harness`` console script; returns the exit status."""
    from harness.cli._stops import stopped_from_outside

    return stopped_from_outside(lambda: _dispatch(argv))


def _dispatch(argv: Sequence[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    parser, sub = _parser(args[0] if args and args[0] in COMMANDS else None)
    passed_on: list[str] = []
    if sub is not None and sub.passes_on and "--" in args:
        cut = args.index("--")
        args, passed_on = args[:cut], args[cut + 1 :]
    try:
        options, unknown = parser.parse_known_args(args)
    except SystemExit as exc:  # --help, --version (0) and usage errors (2)
        return int(exc.code or 0)
    command = options.command
    if command is None or sub is None:
        parser.print_help(sys.stderr)
        return EXIT["bad_input"]
    if unknown:
        return _refuse(sub, unknown)
    options.passed_on = passed_on
    handle = importlib.import_module(COMMANDS[command][0]).handle
    return _guarded(command, lambda: int(handle(options)))


def _refuse(sub: Parser, unknown: list[str]) -> int:
    """Arguments the command does not know: its parser says how they are refused."""
    message = f"unrecognized arguments: {' '.join(unknown)}"
    known = [o for o in sub._option_string_actions if o.startswith("--")]
    for argument in unknown:
        flag = argument.split("=", 1)[0]
        hint = difflib.get_close_matches(flag, known, n=1) if flag.startswith("-") else []
        if hint:
            message += f" (did you mean {hint[0]}?)"
            break
    if sub.unknown_hint is None:
        try:
            sub.error(message)
        except SystemExit as exc:
            return int(exc.code or 0)
    to_stderr(f"{sub.prog}: {message}{sub.unknown_hint}")
    return EXIT["bad_input"]


def _guarded(command: str, call: Callable[[], int]) -> int:
    """Run a command: bad input exits 2 with its message, a harness bug 3 with a traceback,
    a stop from outside (Ctrl-C, a closed pipe) 130 or 141 quietly (harness.cli._stops)."""
    from harness._errors import HarnessError

    try:
        return call()
    except (UsageError, HarnessError) as exc:
        to_stderr(f"harness {command}: {exc}")
        return EXIT["bad_input"]
    except KeyboardInterrupt:
        return EXIT["interrupted"]
    except Exception as exc:
        from harness.cli._stops import output_closed, reader_gone

        if output_closed(exc):
            return reader_gone()
        import traceback

        traceback.print_exc()
        to_stderr(f"harness {command}: internal error (a bug in harness): {exc}")
        return EXIT["internal"]
