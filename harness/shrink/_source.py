"""The scenario to shrink: read, checked, run once as written (its failure is the one to
keep), and made into the first draft, as it would be written at the output's place."""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness._errors import HarnessError, ScenarioError
from harness._project import display_path
from harness._results import ScenarioResult
from harness.llm._config import RECORDED_PROVIDERS
from harness.scenario._loader import load_scenario_text
from harness.scenario._schema import Scenario, scenario_name
from harness.scenario._yamlsource import load_yaml
from harness.shrink._draft import Draft, Path_
from harness.shrink._elements import llms, tools
from harness.shrink._failure import ShrinkError

__all__ = ["Original", "first_draft", "read_original"]


@dataclass(frozen=True)
class Original:
    """The scenario as given: its file, text, mapping, loaded form and run."""

    path: Path
    text: str
    data: dict[str, Any]
    scenario: Scenario
    result: ScenarioResult


def _one_line(exc: HarnessError) -> str:
    """A load error in one line: the first problem, and how many more there are."""
    if isinstance(exc, ScenarioError) and len(exc.issues) > 1:
        first = ScenarioError.format_issue(*exc.issues[0])
        return f"{first} (and {len(exc.issues) - 1} more: see harness validate)"
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def read_original(path: Path, text: str | None = None) -> Original:
    """The scenario at ``path`` (or ``text`` as if it were there), loaded and run once."""
    from harness.scenario import run_scenario
    from harness.shrink._rerun import quiet

    try:
        if text is None:
            text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ShrinkError(f"{display_path(path)}: cannot read the scenario: {exc}") from None
    try:
        scenario = load_scenario_text(text, path)
    except HarnessError as exc:
        raise ShrinkError(_one_line(exc)) from None
    if scenario.matrix:
        raise ShrinkError(
            f"{display_path(path)}: a scenario with a matrix is several scenarios: shrink one "
            "combination (copy the file with the matrix's values written in)"
        )
    if scenario.skip_reason is not None:
        raise ShrinkError(
            f"{display_path(path)}: the scenario is skipped here: {scenario.skip_reason}"
        )
    try:
        with quiet():
            result = run_scenario(scenario)
    except HarnessError as exc:
        raise ShrinkError(_one_line(exc)) from None
    data = load_yaml(text, str(path)).data
    return Original(path, text, data, scenario, result)


def first_draft(original: Original, at: Path) -> Draft:
    """The original as a draft written at ``at``: relative paths rebased, the name kept
    (a name gives the default seed), cassettes read in to be shrunk too."""
    data = copy.deepcopy(original.data)
    turns = data.get("turns")
    draft = Draft(
        {"scenario": data, "cassettes": {}},
        tuple(range(len(turns))) if isinstance(turns, list) else None,
    )
    draft = _rebased(draft, original.path.parent, at.parent)
    name = original.scenario.display_name
    if "name" not in data and scenario_name(at) != name:
        draft = draft.set(("scenario", "name"), name)
    return _with_cassettes(draft, original)


def _references(scenario: dict[str, Any]) -> list[Path_]:
    """The values that are paths relative to the scenario file's folder."""
    found: list[Path_] = [
        ("scenario", key)
        for key in ("history", "extends", "cases")
        if isinstance(scenario.get(key), str)
    ]
    found += [
        (*at, "cassette") for at, llm in llms(scenario) if isinstance(llm.get("cassette"), str)
    ]
    for at, spec in tools(scenario):
        remote = spec.get("remote")
        if isinstance(remote, dict) and isinstance(remote.get("scenario"), str):
            found.append((*at, "remote", "scenario"))
    return found


def _rebased(draft: Draft, was: Path, now: Path) -> Draft:
    if was.resolve() == now.resolve():
        return draft
    for path in _references(draft.scenario):
        value = draft.get(path)
        if not Path(value).is_absolute():
            moved = Path(os.path.relpath(was.resolve() / value, now.resolve())).as_posix()
            draft = draft.set(path, moved)
    return draft


def _with_cassettes(draft: Draft, original: Original) -> Draft:
    """The cassettes of the recorded llm sections, read into the draft (keyed by the
    section's dotted path: ``llm``, ``agents.NAME.llm``)."""
    cassettes: dict[str, Any] = {}
    for at, llm in llms(draft.scenario):
        if llm.get("provider") not in RECORDED_PROVIDERS:
            continue
        key = ".".join(str(p) for p in at[1:])
        path = _cassette_path(original, at, llm)
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ShrinkError(
                f"{display_path(original.path)}: cannot read the cassette "
                f"{display_path(path)}: {exc.__class__.__name__}: {exc}"
            ) from None
        if not isinstance(loaded, dict) or not isinstance(loaded.get("interactions"), list):
            raise ShrinkError(f"{display_path(path)}: not a cassette (no interactions)")
        cassettes[key] = loaded
    if not cassettes:
        return draft
    return Draft({**draft.data, "cassettes": cassettes}, draft.turns, draft.edits)


def _cassette_path(original: Original, at: Path_, llm: dict[str, Any]) -> Path:
    if at == ("scenario", "llm"):
        return original.scenario.cassette_path()
    return original.scenario.resolve(str(llm.get("cassette")))
