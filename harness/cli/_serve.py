"""``harness serve SCENARIO [--host H] [--port N] [--max-delay S]``: a scenario's
``llm.script`` served on every model API harness speaks (OpenAI Chat Completions and
Responses, Anthropic Messages, Gemini; ``harness.serve`` serves it);
``harness serve --cassette FILE``: a recorded cassette served the same way
(``harness.external.CassetteApp``)."""

from __future__ import annotations

import argparse
import ipaddress
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness._errors import HarnessError
from harness._exitcodes import EXIT
from harness.cli._parsing import Parser, to_stderr
from harness.llm._config import RECORDED_PROVIDERS
from harness.llm._script import ScriptStep
from harness.serve import DEFAULT_MAX_DELAY, DEFAULT_PORT, serve
from harness.serve._bounds import DEFAULT_MAX_BODY, BodyLimits
from harness.serve._conversations import ConversationLimits

__all__ = ["add_arguments", "handle"]


def add_arguments(parser: Parser) -> None:
    """``harness serve``'s description and options."""
    parser.description = (
        "Serve a scenario's llm.script as a model on four APIs (docs/wires.md): OpenAI "
        "Chat Completions (POST /v1/chat/completions) and Responses (POST /v1/responses), "
        "Anthropic Messages (POST /v1/messages) and Gemini (POST "
        "/v1beta/models/MODEL:generateContent, :streamGenerateContent); the model's "
        "metadata (GET /v1/models/MODEL, /v1beta/models/MODEL) and POST /v1/reset. Point "
        "an SDK's base URL at it: OpenAI's at http://HOST:PORT/v1, Anthropic's and "
        "google-genai's at http://HOST:PORT."
    )
    parser.add_argument(
        "scenario", type=Path, nargs="?", help="a *.scenario.yaml file with llm.script"
    )
    parser.add_argument(
        "--cassette",
        type=Path,
        metavar="FILE",
        help="serve a recorded cassette instead (replay, matching request bodies; a miss "
        "is answered 400 with the nearest recorded request and a diff)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"default {DEFAULT_PORT}; 0 picks a free one",
    )
    parser.add_argument(
        "--max-delay",
        type=float,
        default=DEFAULT_MAX_DELAY,
        help="longest a response is held, for `error: timeout` and latency (default 30 s)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="what one_of steps are drawn with: each request a one_of step answers draws "
        "anew (default 0)",
    )
    _add_bounds(parser)


def _add_bounds(parser: Parser) -> None:
    """The options of serve's bounds (docs/wires.md#limits)."""
    parser.add_argument(
        "--max-body",
        type=int,
        default=DEFAULT_MAX_BODY,
        metavar="B",
        help=f"bytes of one request body; larger ones get a 413 (default {DEFAULT_MAX_BODY})",
    )
    kept = ConversationLimits()
    parser.add_argument(
        "--max-conversations",
        type=int,
        default=kept.max_conversations,
        metavar="N",
        help="conversations kept, the least recently continued forgotten first "
        f"(default {kept.max_conversations})",
    )
    parser.add_argument(
        "--conversation-ttl",
        type=float,
        default=kept.ttl,
        metavar="S",
        help=f"seconds a conversation may stay idle before it is forgotten (default {kept.ttl:g})",
    )


def _project_plugins(path: Path) -> None:
    """Discover the plugins of the project ``path`` belongs to (docs/plugins.md)."""
    from harness._plugins import discover
    from harness._project import project_root

    discover(project_root(path.resolve().parent))


def _script_of(path: Path) -> tuple[list[ScriptStep], list[ScriptStep], str | None, Any]:
    """The scenario's ``llm.script`` and ``llm.judge_script`` (the steps the server answers
    the agent's requests and a judge's from), what to serve instead when its model is
    recorded, and its ``llm.conversations``."""
    from harness.scenario import load_scenario
    from harness.scenario._cases import one_scenario

    scenario = one_scenario(load_scenario(path), "harness serve")
    llm = scenario.llm
    conversations = llm.served_conversations()
    return list(llm.scripted()), list(llm.judge_script), _recorded(scenario, path), conversations


def _recorded(scenario: Any, shown: Path) -> str | None:
    """For a recorded scenario: the cassette it names or implies (its default path), to
    serve with --cassette; None for a scripted one."""
    import os

    if scenario.llm.provider not in RECORDED_PROVIDERS:
        return None
    try:
        path = scenario.cassette_path()
    except HarnessError:
        return None
    if scenario.matrix:  # a cassette per combination, in a folder (as resolve_cassette_path)
        path = path.with_suffix("")
    try:
        cassette = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        cassette = str(path)
    if scenario.matrix:
        cassette = os.path.join(cassette, "<combination>.yaml")
    if not path.exists():
        return f"its model is recorded, but not yet (`harness record {shown}` writes {cassette})"
    return f"its model is recorded: serve its cassette with `harness serve --cassette {cassette}`"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _problem(args: Any, steps: list[ScriptStep], recorded: str | None) -> str | None:
    """What is wrong with the options once the script is read (None when nothing)."""
    if not steps:
        return f"{args.scenario} has no llm.script to serve" + (f"; {recorded}" if recorded else "")
    return _bad_option(args)


def _bad_option(args: Any) -> str | None:
    """What is wrong with the options every mode reads (None when nothing)."""
    if args.max_delay < 0 or not 0 <= args.port <= 65535:
        return "--port must be 0-65535 and --max-delay >= 0"
    if args.max_body < 1:
        return "--max-body must be a number of bytes, 1 or more"
    if args.max_conversations < 1 or not 0 < args.conversation_ttl < float("inf"):
        return "--max-conversations must be 1 or more and --conversation-ttl more than 0"
    return None


def handle(args: argparse.Namespace) -> int:
    """``harness serve``: serve until SIGTERM or Ctrl-C; 0 then, 2 on bad input."""
    if (args.scenario is None) == (args.cassette is None):
        to_stderr(
            "harness serve: give a scenario file or --cassette FILE (one of them)",
        )
        return EXIT["bad_input"]
    try:
        # The project's plugins: a model API a plugin registers is served too.
        _project_plugins(args.cassette or args.scenario)
    except HarnessError as exc:
        to_stderr(f"harness serve: {exc}")
        return EXIT["bad_input"]
    if args.cassette is not None:
        return _serve_cassette(args)
    try:
        steps, judge_steps, recorded, conversations = _script_of(args.scenario)
    except (HarnessError, OSError) as exc:
        to_stderr(f"harness serve: {exc}")
        return EXIT["bad_input"]
    problem = _problem(args, steps, recorded)
    if problem is not None:
        to_stderr(f"harness serve: {problem}")
        return EXIT["bad_input"]
    if not _is_loopback(args.host):
        to_stderr(
            f"harness serve: warning: serving on {args.host}, reachable from other machines",
        )

    return _until_stopped(
        args.scenario,
        args.host,
        lambda started: serve(
            steps,
            args.host,
            args.port,
            args.max_delay,
            on_started=started,
            judge_steps=judge_steps,
            conversations=conversations,
            draws=f"harness serve\x00seed {args.seed}",
            bounds=BodyLimits(max_body=args.max_body),
            limits=ConversationLimits(
                max_conversations=args.max_conversations, ttl=args.conversation_ttl
            ),
        ),
    )


def _until_stopped(what: Any, host: str, start: Callable[[Callable[[int], None]], None]) -> int:
    """Serve ``what`` (``start(on_started)`` blocks until Ctrl-C or SIGTERM), saying where
    it listens once it does; a bind failure is bad input."""

    def started(port: int) -> None:
        shown = f"[{host}]" if ":" in host else host
        print(f"harness serve: {what} at http://{shown}:{port}/v1 (Ctrl-C to stop)", flush=True)

    try:
        start(started)
    except HarnessError as exc:
        to_stderr(f"harness serve: {exc}")
        return EXIT["bad_input"]
    print("harness serve: stopped", flush=True)
    return EXIT["passed"]


def _serve_cassette(args: Any) -> int:
    """``harness serve --cassette FILE``: the cassette's interactions, to any client."""
    from harness._errors import LLMError
    from harness.cassettes._session import CassetteSession
    from harness.external import CassetteApp
    from harness.serve import serve_app

    path = args.cassette
    if not path.is_file():
        to_stderr(f"harness serve: no cassette file {path}")
        return EXIT["bad_input"]
    problem = _bad_option(args)
    if problem is not None:
        to_stderr(f"harness serve: {problem}")
        return EXIT["bad_input"]
    try:
        session = CassetteSession(path, record_mode="none", shown_path=str(path))
    except LLMError as exc:
        to_stderr(f"harness serve: {exc}")
        return EXIT["bad_input"]

    app = CassetteApp(session, repeat=True)
    return _until_stopped(
        path,
        args.host,
        lambda started: serve_app(
            app,
            args.host,
            args.port,
            on_started=started,
            bounds=BodyLimits(max_body=args.max_body),
        ),
    )
