"""``freeze()``: the scenario that replays a recorded run, drafted from what is frozen
(``_source``), run offline once to take its expectations, checked (``_refusals``), and
written as YAML text; a scenario with cases has each case's recording frozen."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness._results import ScenarioResult
from harness._secrets import Scrubber
from harness.cassettes._format import readable_yaml
from harness.freeze._build import build_scenario, build_target_scenario
from harness.freeze._cases import case_recorded_in, check_cases_pass, combined, recordings
from harness.freeze._check import expectations, run_offline
from harness.freeze._recorded import FreezeError
from harness.freeze._refusals import check_passes, check_replay
from harness.freeze._served import served_stubs
from harness.freeze._source import (
    Source,
    cassette_of,
    cassette_source,
    load_original,
    run_notes,
    trace_source,
)

__all__ = ["Frozen", "freeze"]


@dataclass
class Frozen:
    """A frozen scenario: its YAML text, the run it replays, and notes for the user."""

    text: str
    run: int
    runs: int
    notes: list[str] = field(default_factory=list)


def _header(source: Source) -> str:
    if source.target and source.original.tools:
        edit = (
            "# Edit the replies and the served tools' results to make edge cases: the\n"
            "# target's own code runs, its tools: are served to it over MCP as stubs.\n"
        )
    elif source.target:
        edit = "# Edit the replies to make edge cases: the target's own tools run.\n"
    else:
        edit = "# Edit replies and tool results to make edge cases.\n"
    return (
        f"# Frozen from {source.path.name}{source.of_run()} by `harness freeze`:\n"
        "# a scripted scenario that replays the recorded run with no cassette.\n" + edit
    )


def _draft(source: Source) -> dict[str, Any]:
    """The scenario's data, without expectations yet."""
    made_by = f" by {Path(source.scenario).name}" if source.scenario is not None else ""
    description = f"The run recorded{made_by} in {source.path.name}{source.of_run()}, as a script."
    try:
        if source.target:
            return build_target_scenario(
                source.chosen,
                description=description,
                original=source.original,
                conversations=source.conversations,
            )
        return build_scenario(source.chosen, description=description, original=source.original)
    except FreezeError as exc:  # about an interaction: name the file
        raise FreezeError(f"{source.shown}: {exc}") from None


def _written(header: str, data: dict[str, Any]) -> str:
    """The scenario's text, masked as a cassette is (what reaches it was masked when the
    cassette was read: this is the last line of defence, and it is what the check runs)."""
    return header + readable_yaml(Scrubber().value(data), fast=False)


def freeze(
    cassette: str | Path | None = None,
    *,
    scenario: str | Path | None = None,
    run: int | None = None,
    output: str | Path | None = None,
    trace: str | Path | None = None,
) -> Frozen:
    """The scenario that replays a run recorded in ``cassette``.

    ``scenario``: the scenario that made the recording (its agent section and tool
    definitions are used; its cassette is the default). ``run``: which run of a cassette
    holding several (1-based; default the last recorded). ``output``: where the scenario
    will be written (its path names it; default ``<cassette name>.scenario.yaml`` here).
    ``trace``: an OTLP JSON trace to freeze instead of a cassette (harness.freeze._trace).
    A ``scenario`` with cases records a cassette per case: without ``cassette``, every
    case's recording is frozen into one scenario with ``cases:``; with one, its case alone.
    """
    if trace is not None:
        if cassette is not None:
            raise FreezeError("--trace freezes a trace: give no cassette with it")
        source = trace_source(trace, scenario, run)
    else:
        original = load_original(Path(scenario)) if scenario is not None else None
        if original is not None and original.cases is not None:
            if cassette is None:
                return _freeze_cases(original, scenario, run, output)
            original = case_recorded_in(original, Path(cassette), scenario, cassette_of)
        source = cassette_source(cassette, scenario, run, original)
    target = _target(source, output)
    header = _header(source)
    data, result = _frozen(source, target)
    text = _written(header, data)
    check_passes(source, text, target, result)
    return Frozen(
        text=text, run=source.chosen.number, runs=len(source.runs), notes=run_notes(source, run)
    )


def _target(source: Source, output: str | Path | None) -> Path:
    """Where the frozen scenario goes (its path names it)."""
    return Path(output if output is not None else f"{source.path.stem}.scenario.yaml").resolve()


def _frozen(source: Source, target: Path) -> tuple[dict[str, Any], ScenarioResult]:
    """The frozen scenario's data, checked to replay the recording, with its expectations,
    and the run they were taken from."""
    header, data = _header(source), _draft(source)
    result, sent = run_offline(_written(header, data), target)
    check_replay(source, result, sent)
    if source.target and data.get("tools"):
        # The tools harness served the target, answering as they did in that run.
        data["tools"] = served_stubs(source.original, result)
        result, sent = run_offline(_written(header, data), target)
        check_replay(source, result, sent)
    data["expect"] = expectations(result)
    return data, result


# -- a scenario with cases: each case's recording --------------------------------------------


def _freeze_cases(original: Any, given: Any, run: int | None, output: Any) -> Frozen:
    """Every case's recording frozen into one scenario with ``cases:``."""
    per_case: list[tuple[str, dict[str, Any]]] = []
    notes: list[str] = []
    target = Path(output).resolve() if output is not None else None
    for case, cassette in recordings(original, given, cassette_of):
        source = cassette_source(cassette, given, run, case)
        data, _ = _frozen(source, target or _target(source, None))
        per_case.append((str(case.case_id), data))
        notes += [f"case {case.case_id!r}: {note}" for note in run_notes(source, run)]
    header, data = combined(original, given, per_case)
    text = _written(header, data)
    check_cases_pass(text, target or Path(f"{original.display_name}.scenario.yaml").resolve())
    return Frozen(text=text, run=run or 0, runs=len(per_case), notes=notes)
