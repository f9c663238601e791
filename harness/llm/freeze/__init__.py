"""``harness freeze``: turn a recorded run into an editable scripted scenario.

The scenario replays the recorded run with no cassette: the model's replies become
``llm.script`` (with their call ids), the tools become stubs that return, call by call,
what the recorded tools returned, and ``expect`` holds the outcome. The agent's settings
(iteration limit, stagnation window, ...) are not in a cassette: they come from the
scenario that made the recording when it is given (``--scenario``). Before writing,
freeze runs the frozen scenario once, offline: the expectations are what that run did,
and a run that would not send the recorded requests is refused.

Modules: ``recorded`` reads the cassette (calls, replies, runs), ``build`` makes the
scenario, ``check`` runs it and compares.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from harness.errors import HarnessError
from harness.files import atomic_write
from harness.llm.cassettes.format import CassetteFormatError, LoadedInteraction, load_cassette_file
from harness.llm.freeze.build import build_scenario, replayed_calls
from harness.llm.freeze.check import expectations, first_difference, run_offline
from harness.llm.freeze.recorded import (
    FreezeError,
    Run,
    fill_client_ids,
    read_calls,
    split_runs,
)
from harness.secrets import Scrubber

__all__ = ["FreezeError", "Frozen", "freeze", "freeze_main"]


@dataclass
class Frozen:
    """A frozen scenario: its YAML text, the run it replays, and notes for the user."""

    text: str
    run: int
    runs: int
    notes: list[str] = field(default_factory=list)


class _Dumper(yaml.SafeDumper):
    """Readable scenario YAML: block style, multi-line strings as literal blocks."""


def _str(dumper: Any, data: str) -> Any:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str)


def _dump(header: str, scenario: dict[str, Any]) -> str:
    body = yaml.dump(scenario, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    return header + body


def _load(path: Path, shown: str) -> list[LoadedInteraction]:
    try:
        interactions = load_cassette_file(path)
    except CassetteFormatError as exc:
        raise FreezeError(str(exc.in_file(shown))) from None
    except OSError as exc:
        raise FreezeError(f"cannot read cassette {shown}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise FreezeError(f"{shown}: the cassette is not UTF-8 text ({exc.reason})") from None
    # The same masking as the cassette writer's: a cassette recorded elsewhere (or under
    # another key) may hold the current secret values, and the scenario is written to disk.
    scrubber = Scrubber()
    if scrubber.values:
        for item in interactions:
            item.request = scrubber.value(item.request)
            item.request_json = scrubber.value(item.request_json)
            item.response = scrubber.value(item.response)
    return interactions


def _original(path: Path) -> Any:
    from harness.scenario import load_scenario

    return load_scenario(path)


def _cassette_of(original: Any, shown: str) -> Path:
    """The cassette the original scenario records to."""
    from harness.llm.cassettes.paths import resolve_cassette_path
    from harness.llm.config import LLMContext

    if original.llm.provider != "openai":
        raise FreezeError(
            f"{shown} is not a recorded scenario (llm.provider is {original.llm.provider}): "
            "give the cassette to freeze as well"
        )
    context = LLMContext(scenario_file=original.path, project_root=original.root)
    return resolve_cassette_path(original.llm.with_context(context))


def _pick(runs: list[Run], wanted: int | None, shown: str) -> Run:
    listing = "; ".join(run.describe() for run in runs)
    if wanted is None:
        return runs[-1]
    if not 1 <= wanted <= len(runs):
        raise FreezeError(
            f"--run {wanted}: {shown} holds {len(runs)} run(s) ({listing}); "
            f"give --run 1 to {len(runs)}"
        )
    return runs[wanted - 1]


def freeze(
    cassette: str | Path | None = None,
    *,
    scenario: str | Path | None = None,
    run: int | None = None,
    output: str | Path | None = None,
) -> Frozen:
    """The scenario that replays a run recorded in ``cassette``.

    ``scenario``: the scenario that made the recording (its agent section and tool
    definitions are used; its cassette is the default). ``run``: which run of a cassette
    holding several (1-based; default the last recorded). ``output``: where the scenario
    will be written (its path names it; default ``<cassette name>.scenario.yaml`` here).
    """
    original = _original(Path(scenario)) if scenario is not None else None
    if cassette is None:
        if original is None:
            raise FreezeError("give a cassette, or --scenario with a recorded scenario")
        cassette = _cassette_of(original, str(scenario))
    path = Path(cassette)
    shown = str(cassette)
    calls = read_calls(_load(path, shown), shown)
    if not calls:
        raise FreezeError(f"{shown} records no Chat Completions or Responses API request")
    if len({call.api for call in calls}) > 1:
        raise FreezeError(f"{shown} mixes Chat Completions and Responses API requests")
    runs = split_runs(calls)
    chosen = _pick(runs, run, shown)
    fill_client_ids(chosen)
    notes = []
    if len(runs) > 1:
        listing = "; ".join(r.describe() for r in runs)
        which = "the last recorded" if run is None else "as asked"
        notes.append(
            f"{shown} holds {len(runs)} runs ({listing}): froze run {chosen.number}, {which}"
            + ("; --run N picks another" if run is None else "")
        )

    of_run = f" (run {chosen.number} of {len(runs)})" if len(runs) > 1 else ""
    made_by = f" by {Path(scenario).name}" if scenario is not None else ""
    try:
        data = build_scenario(
            chosen,
            description=f"The run recorded{made_by} in {path.name}{of_run}, as a script.",
            original=original,
        )
    except FreezeError as exc:  # about an interaction: name the file
        raise FreezeError(f"{shown}: {exc}") from None
    header = (
        f"# Frozen from {path.name}{of_run} by `harness freeze`:\n"
        "# a scripted scenario that replays the recorded run with no cassette.\n"
        "# Edit replies and tool results to make edge cases.\n"
    )
    target = Path(output) if output is not None else Path(f"{path.stem}.scenario.yaml")
    target = target.resolve()

    result, sent = run_offline(_dump(header, data), target)
    difference = first_difference(replayed_calls(chosen), sent, result)
    if difference is not None:
        kind, what = difference
        if original is not None:
            hint = (
                f"has {scenario} changed since it was recorded? re-record the cassette "
                "(--record-mode rewrite)"
            )
        elif kind == "count":
            hint = (
                "a cassette does not say how the run ended (max_iterations, the stagnation "
                "window, ...): pass --scenario with the scenario that made the recording"
            )
        else:
            hint = "pass --scenario with the scenario that made the recording"
        run_name = f"run {chosen.number} of " if len(runs) > 1 else ""
        raise FreezeError(
            f"{shown}: the frozen scenario would not replay {run_name}the recording: {what}; {hint}"
        )
    if result.status == "error":
        # A run ending in `error` (a scenario or harness bug) fails whatever it expects.
        message = (result.final.error or {}).get("message") or "no message"
        raise FreezeError(
            f"{shown}: the recorded run ends in error ({message}), and a scenario whose run "
            "ends in error cannot pass as written: fix the cause (the scenario, a plugin) "
            "and record again"
        )
    data["expect"] = expectations(result)
    text = _dump(header, data)
    check, _ = run_offline(text, target)
    if check.status != "passed":  # the expectations were taken from the same run
        unmet = ", ".join(e.path for e in check.expectations if not e.ok) or check.status
        raise FreezeError(
            f"{shown}: the frozen scenario does not pass as written ({unmet}): "
            "a bug in harness freeze, please report it"
        )
    return Frozen(text=text, run=chosen.number, runs=len(runs), notes=notes)


def freeze_main(argv: Sequence[str] | None = None) -> int:
    """``harness freeze [CASSETTE] [--scenario S] [--run N] [-o SCENARIO]`` (stdout without -o)."""
    parser = argparse.ArgumentParser(
        prog="harness freeze",
        description="Turn a recorded cassette into an editable scripted scenario.",
    )
    parser.add_argument(
        "cassette", type=Path, nargs="?", help="a vcrpy cassette (default: --scenario's)"
    )
    parser.add_argument("-o", "--output", type=Path, help="the *.scenario.yaml file to write")
    parser.add_argument(
        "--scenario",
        type=Path,
        help="the scenario that made the recording: its agent settings and tool definitions",
    )
    parser.add_argument(
        "--run", type=int, help="which recorded run to freeze (1-based; default the last)"
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        frozen = freeze(args.cassette, scenario=args.scenario, run=args.run, output=args.output)
    except HarnessError as exc:
        print(f"harness freeze: {exc}", file=sys.stderr)
        return 2
    for note in frozen.notes:
        print(f"harness freeze: note: {note}", file=sys.stderr)
    if args.output is None:
        sys.stdout.write(frozen.text)
        return 0
    try:
        atomic_write(args.output, frozen.text)
    except OSError as exc:
        # Like harness report: an output that cannot be written is exit 3, not a bug.
        print(f"harness freeze: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 3
    print(f"harness freeze: wrote {args.output}", file=sys.stderr)
    return 0
