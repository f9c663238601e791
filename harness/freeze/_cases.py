"""``harness freeze --scenario FILE`` of a scenario with cases: each case records into a
cassette of its own (docs/scenarios.md#cases), so a cassette names its case, and every
case's recording frozen together is one scripted scenario with ``cases:`` (what all cases
share at the top, what each has of its own in its case)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.freeze._recorded import FreezeError

__all__ = ["case_recorded_in", "check_cases_pass", "combined", "recordings"]


def case_recorded_in(
    original: Any, cassette: Path, given: Any, cassette_of: Callable[[Any, str], Path]
) -> Any:
    """The case of ``original`` whose recording ``cassette`` is."""
    wanted = cassette.resolve()
    found = {}
    for case in original.case_scenarios:
        path = cassette_of(case, str(given))
        if path.resolve() == wanted:
            return case
        found[case.case_id] = os.path.relpath(path)
    listing = ", ".join(f"{case} ({path})" for case, path in found.items())
    raise FreezeError(
        f"{cassette} is not the recording of a case of {given}; its cases record into: "
        f"{listing}. Give one of them, or no cassette to freeze every case"
    )


def recordings(
    original: Any, given: Any, cassette_of: Callable[[Any, str], Path]
) -> list[tuple[Any, Path]]:
    """Each case of ``original`` with its cassette; FreezeError for a case not recorded."""
    out = []
    for case in original.case_scenarios:
        cassette = cassette_of(case, str(given))
        if not cassette.is_file():
            raise FreezeError(
                f"case {case.case_id!r} of {given} has no recording ({os.path.relpath(cassette)}"
                f"): record it first (harness record {given})"
            )
        out.append((case, cassette))
    return out


def combined(original: Any, given: Any, per_case: list[tuple[str, dict]]) -> tuple[str, dict]:
    """The header and data of one scenario holding every case's frozen data: the keys all
    cases give alike at the top, the rest in each case."""
    shared = {
        key: value
        for key, value in per_case[0][1].items()
        if key != "description" and all(data.get(key, object()) == value for _, data in per_case)
    }
    cases = [
        {"id": case_id, **{k: v for k, v in data.items() if k not in shared and k != "description"}}
        for case_id, data in per_case
    ]
    name = Path(str(given)).name
    data = {
        "name": original.display_name,
        "description": f"The runs recorded by {name}, one case each, as scripts.",
        **shared,
        "cases": cases,
    }
    header = (
        f"# Frozen from the recordings of {name}'s {len(cases)} cases by `harness freeze`:\n"
        "# a scripted scenario that replays each case's recorded run with no cassette.\n"
        "# Edit replies and tool results to make edge cases.\n"
    )
    return header, data


def check_cases_pass(text: str, target: Path) -> None:
    """Every case of the frozen scenario passes (each was checked alone already)."""
    from harness.scenario import run_scenario
    from harness.scenario._loader import load_scenario_text

    for case in load_scenario_text(text, target).case_scenarios:
        result = run_scenario(case)
        if result.status != "passed":
            unmet = ", ".join(e.path for e in result.expectations if not e.ok) or result.status
            raise FreezeError(
                f"case {case.case_id!r}: the frozen scenario does not pass as written ({unmet}): "
                "a bug in harness freeze, please report it"
            )
