"""``harness explore PATHS [--depth 1|2] [--faults KIND,...] [--sites ...] ...``: every
fault at every site of passing scenarios, each failure a scenario file (``harness.explore``
does it; docs/explore.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from harness._exitcodes import EXIT
from harness.cli._parsing import Parser, to_stderr

__all__ = ["add_arguments", "handle"]


def add_arguments(parser: Parser) -> None:
    """``harness explore``'s description and options."""
    parser.description = (
        "Run every fault of the catalogue (model errors and spoiled replies, tool and MCP "
        "faults) at every site of passing scenarios (each model call, tool call, MCP call "
        "and sub-agent call of a first run as written), judge each variant by the "
        "scenario's invariants (default: the run ends, without a crash, with at most 5 "
        "requests for one reply), and write each failure as a scenario that fails the "
        "same way. Exit 0 when no schedule broke an invariant, 1 when one did, 2 for bad "
        "input. See docs/explore.md."
    )
    parser.usage_on_error = False
    parser.add_argument(
        "paths", nargs="+", type=Path, metavar="PATHS", help="scenario files or folders"
    )
    parser.add_argument(
        "--depth", type=int, choices=(1, 2), default=1, help="faults per schedule (default 1)"
    )
    parser.add_argument(
        "--faults", metavar="KIND,...", help="the fault kinds to try (default: all)"
    )
    parser.add_argument(
        "--sites",
        metavar="SITE,...",
        help="the sites to try: model, tools, mcp, agents (default: all)",
    )
    parser.add_argument(
        "--max-variants", type=int, metavar="N", help="at most N schedules per scenario, sampled"
    )
    parser.add_argument("--seed", default="0", metavar="S", help="the sample's seed (default 0)")
    parser.add_argument(
        "-n", dest="jobs", type=int, default=1, metavar="N", help="worker processes (default 1)"
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=Path("explored"),
        metavar="DIR",
        help="where failures are written (default explored/)",
    )
    parser.add_argument(
        "--json", type=Path, metavar="F", help="write the results (an explore section) to F"
    )
    parser.add_argument(
        "--html", type=Path, metavar="F", help="write the site x fault kind grid to F"
    )
    parser.add_argument(
        "--no-shrink", action="store_true", help="write failures as found, not shrunk"
    )
    parser.add_argument("--shard", metavar="K/N", help="run shard K of N of the schedules")


def _listed(text: str | None, known: tuple[str, ...], what: str) -> tuple[str, ...]:
    """A comma-separated flag's values, each one of ``known`` (ValueError otherwise)."""
    if text is None:
        return known
    given = tuple(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    unknown = [g for g in given if g not in known]
    if unknown or not given:
        bad = repr(unknown[0]) if unknown else "(none given)"
        raise ValueError(f"--{what} {text}: unknown {bad}; known: {', '.join(known)}")
    return given


def _shard(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    k, _, n = text.partition("/")
    if not (k.isdigit() and n.isdigit()) or not 1 <= int(k) <= int(n):
        raise ValueError(f"--shard {text}: write K/N with 1 <= K <= N (e.g. 1/4)")
    return int(k), int(n)


def _options(args: argparse.Namespace) -> object:
    from harness.explore import ALL_FAULTS, SITE_KINDS, ExploreOptions

    if args.max_variants is not None and args.max_variants < 1:
        raise ValueError(f"--max-variants {args.max_variants}: give 1 or more")
    if args.jobs < 1:
        raise ValueError(f"-n {args.jobs}: give 1 or more")
    if args.output.exists() and not args.output.is_dir():
        raise ValueError(f"-o {args.output}: not a folder")
    seed: int | str = int(args.seed) if args.seed.lstrip("-").isdigit() else args.seed
    return ExploreOptions(
        depth=args.depth,
        faults=_listed(args.faults, ALL_FAULTS, "faults"),
        sites=_listed(args.sites, SITE_KINDS, "sites"),
        max_variants=args.max_variants,
        seed=seed,
        jobs=args.jobs,
        output=args.output,
        shrink=not args.no_shrink,
        shard=_shard(args.shard),
    )


def handle(args: argparse.Namespace) -> int:
    """``harness explore``: the summary on stdout; 0 all held, 1 a failure, 2 bad input."""
    from harness.explore import ExploreError, explore

    try:
        options = _options(args)
    except ValueError as exc:
        to_stderr(f"harness explore: {exc}")
        return EXIT["bad_input"]
    try:
        exploration = explore(args.paths, options)  # type: ignore[arg-type]
    except ExploreError as exc:
        to_stderr(f"harness explore: {exc}")
        return EXIT["bad_input"]
    return _finish(exploration, args.json, args.html)


def _finish(exploration: Any, json_path: Path | None, html_path: Path | None) -> int:
    """The summary on stdout, the files asked for; 0 when every schedule held, else 1."""
    from harness._files import atomic_write
    from harness.report._explore import explore_html, explore_text

    sys.stdout.write(explore_text(exploration))
    if json_path is not None:
        body = {"explore": exploration.model_dump(mode="json")}
        atomic_write(json_path, json.dumps(body, indent=2, ensure_ascii=False) + "\n")
    if html_path is not None:
        atomic_write(html_path, explore_html(exploration, html_path))
    # A crashed schedule is not a failure of the agent (its variant could not be judged).
    return EXIT["failed"] if exploration.schedules.broken else EXIT["passed"]


def merge_shards(args: argparse.Namespace) -> int:
    """``harness merge`` of ``harness explore --shard K/N --json F`` files: the serial
    exploration's summary, and its --json and --html when asked for."""
    from harness.explore._merging import MergeError, merge_explorations, read_exploration

    try:
        parts = [read_exploration(Path(shard)) for shard in args.shards]
        merged = merge_explorations(parts, args.shards)
    except MergeError as exc:
        to_stderr(f"harness merge: error: {exc}")
        return EXIT["bad_input"]
    json_path = Path(args.json) if args.json else None
    return _finish(merged, json_path, Path(args.html) if args.html else None)
