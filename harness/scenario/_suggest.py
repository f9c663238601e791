"""``harness coverage --suggest``: a scenario for each behaviour a suite did not cover
that one of its scenarios can reach (docs/coverage.md#suggestions).

For each uncovered cell (in the coverage's order), the suite's scripted scenarios that
reach it are tried in id order: the scenario's data is edited by ``derive`` (what
produces the behaviour), written to the output folder, and run once; the first whose run
exercises the cell, without ending in ``error``, is kept, its ``expect:`` the termination
that run reached. A suite rerun with the kept files covers those cells.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from harness._coverage import Cell, Coverage, exercised
from harness._errors import HarnessError
from harness._files import atomic_write
from harness.scenario._coverage import OfferedTools, needs_observer, reachable
from harness.scenario._derive import Context, derive, describe
from harness.scenario._loader import build_tools, load_scenario
from harness.scenario._mcp_tools import mcp_entries, recording_path
from harness.scenario._runner import run_scenario
from harness.scenario._schema import Scenario
from harness.scenario._serving import scenario_id

__all__ = ["Suggestion", "suggest"]

# The kinds a derivation exists for.
SUGGESTED = ("tool", "tool_outcome", "model_fault")
# How many scenarios are tried for one cell before it is given up.
_TRIES = 3


@dataclass(frozen=True)
class Suggestion:
    """What became of one uncovered cell: the file written (and the scenario it was
    derived from), or why none was."""

    cell: Cell
    path: Path | None = None
    source: str | None = None
    why: str | None = None
    # The source's MCP recording, copied for the file to replay (the folder of cassettes).
    recording: Path | None = None


@dataclass
class _Source:
    """A scenario a suggestion may start from, what it reaches, what its run did."""

    scenario: Scenario
    id: str
    reach: set[Cell]
    context: Context
    learned: bool = False  # whether a run told what its requests offered


def suggest(coverage: Coverage, files: Iterable[Path], out: Path) -> list[Suggestion]:
    """A suggestion for each uncovered cell of the kinds derivations exist for, derived
    from the scenarios of ``files`` and written to ``out``."""
    sources = _sources(files)
    by_id = {source.id: source for source in sources}
    for cell in coverage.cells:
        for source in filter(None, map(by_id.get, cell.scenarios)):
            if cell.kind == "tool":
                source.context.called.add(cell.key)
            tool, _, status = cell.key.rpartition(":")
            if cell.kind == "tool_outcome" and status in ("ok", "error"):
                source.context.ran.add(tool)
    found = []
    for cell in coverage.uncovered():
        wanted = (cell.kind, cell.key)
        if cell.kind in SUGGESTED:
            found.append(_one(wanted, _candidates(wanted, sources), out))
    return found


def _candidates(cell: Cell, sources: list[_Source]) -> list[_Source]:
    """The sources that reach ``cell``: by their files, else (a tool only requests
    offered: a target's own, an MCP server's) by what their requests offered, learned
    from one run of each source that watches its requests."""
    found = [s for s in sources if cell in s.reach]
    if found or cell[0] == "model_fault":
        return found
    for source in sources:
        if not source.learned and needs_observer(source.scenario):
            _learn(source)
    return [s for s in sources if cell in s.reach]


def _learn(source: _Source) -> None:
    """Run a source once to learn the tools its requests offer (and their schemas)."""
    source.learned = True
    offered = OfferedTools()
    try:
        run_scenario(source.scenario, plugins=[offered])
    except HarnessError:
        return
    source.reach |= reachable(source.scenario, offered.tools)
    for name, schema in offered.schemas.items():
        if isinstance(schema, dict):
            source.context.schemas.setdefault(name, schema)


def _sources(files: Iterable[Path]) -> list[_Source]:
    """The scenarios a suggestion may start from: scripted, one combination, loadable."""
    sources = []
    for path in sorted(set(files)):
        try:
            scenario = load_scenario(path)
        except (HarnessError, OSError):
            continue  # moved or broken since the run: nothing to derive from
        if scenario.matrix or scenario.llm.provider != "scripted":
            continue
        target = scenario.target is not None
        context = Context(schemas=_schemas(scenario), target=target)
        sources.append(_Source(scenario, str(scenario_id(scenario)), reachable(scenario), context))
    return sorted(sources, key=lambda s: s.id)


def _one(cell: Cell, sources: Sequence[_Source], out: Path) -> Suggestion:
    """The first source whose derived scenario covers ``cell``, written; or why none."""
    if not sources:
        return Suggestion(
            cell, why="no scenario of the suite with a scripted model names it in its file"
        )
    tried = 0
    for source in sources:
        data = _data(source.scenario)
        if data is None or not derive(data, cell, source.context):
            continue
        tried += 1
        path = _written(source.scenario, data, cell, out)
        termination, recording = _covering_run(path, cell, source.scenario)
        if termination is not None:
            data["expect"] = {"termination": termination}
            _write(path, data, source.scenario, cell)
            return Suggestion(cell, path=path, source=source.id, recording=recording)
        path.unlink(missing_ok=True)
        if tried >= _TRIES:
            break
    if not tried:
        return Suggestion(cell, why="none of the scenarios that reach it can be made to")
    return Suggestion(cell, why=f"the derived scenarios ({tried} tried) did not cover it")


def _data(scenario: Scenario) -> dict[str, Any] | None:
    """A copy of the scenario file's data (its model's, for a file built from others)."""
    source = scenario.source
    data = getattr(source, "data", None)
    if isinstance(data, dict) and not {"extends", "cases"} & data.keys():
        return copy.deepcopy(data)
    return scenario.model_dump(mode="json", by_alias=True, exclude_unset=True)


def _schemas(scenario: Scenario) -> dict[str, dict[str, Any]]:
    """Each tool's JSON Schema (a sub-agent's tools too), for the calls a derivation adds."""
    holders = [scenario] + [
        scenario.model_copy(update={"tools": agent.tools}) for agent in scenario.agents.values()
    ]
    schemas: dict[str, dict[str, Any]] = {}
    for holder in holders:
        try:
            tools = build_tools(holder)
        except HarnessError:
            continue
        for name, tool in tools.items():
            schemas.setdefault(name, tool.parameters or {"type": "object"})
    return schemas


def _slug(cell: Cell) -> str:
    kind, key = cell
    text = f"call-{key}" if kind == "tool" else key
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")


def _written(scenario: Scenario, data: dict[str, Any], cell: Cell, out: Path) -> Path:
    """The derived scenario written to ``out`` (named after its source and the cell)."""
    assert scenario.path is not None  # loaded from a file
    stem = scenario.path.name
    for suffix in (".scenario.yaml", ".scenario.yml"):
        stem = stem.removesuffix(suffix)
    slug = _slug(cell)
    path = out / f"{stem}--{slug}.scenario.yaml"
    data["name"] = f"{scenario.display_name}--{slug}"
    data["description"] = f"{describe(cell)} (derived from {scenario_id(scenario)})"
    for key in ("expect", "repeat", "matrix"):
        data.pop(key, None)
    _relocate(data, scenario, out)
    _write(path, data, scenario, cell)
    return path


def _write(path: Path, data: dict[str, Any], scenario: Scenario, cell: Cell) -> None:
    head = (
        f"# Written by `harness coverage --suggest` from {scenario_id(scenario)}:\n"
        f"# it covers {cell[0]} {cell[1]}. docs/coverage.md#suggestions\n"
    )
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, [head, text])


def _relocate(data: dict[str, Any], scenario: Scenario, out: Path) -> None:
    """Paths the file gives relative to itself, made relative to ``out``."""

    def moved(value: Any) -> Any:
        if not isinstance(value, str) or Path(value).is_absolute():
            return value
        return os.path.relpath(scenario.resolve(value), out.resolve())

    if isinstance(data.get("history"), str):
        data["history"] = moved(data["history"])
    holders = [data, *(a for a in (data.get("agents") or {}).values() if isinstance(a, dict))]
    for holder in holders:
        for spec in (holder.get("tools") or {}).values():
            remote = spec.get("remote") if isinstance(spec, dict) else None
            if isinstance(remote, dict) and isinstance(remote.get("scenario"), str):
                remote["scenario"] = moved(remote["scenario"])


# A derived scenario that ends so is no suggestion: an error, or a tool's server failing (a
# replayed MCP server that does not hold the new call).
_REFUSED = ("error", "tool_error")


def _covering_run(path: Path, cell: Cell, source: Scenario) -> tuple[str | None, Path | None]:
    """The termination of a run of the file when it exercises ``cell`` (and does not end
    in error), else None; and the MCP recording copied from the source for it (removed
    again when the run did not cover the cell)."""
    try:
        derived = load_scenario(path)
    except HarnessError:
        return None, None
    copied = _mcp_recording(source, derived)
    try:
        result = run_scenario(derived)
    except HarnessError:
        result = None
    ended = result.termination.value if result is not None else "error"
    if result is not None and ended not in _REFUSED and cell in exercised(result, result.turns):
        return ended, copied
    if copied is not None:
        copied.unlink(missing_ok=True)
    return None, None


def _mcp_recording(source: Scenario, derived: Scenario) -> Path | None:
    """The source's recorded MCP traffic copied to where the derived scenario replays it
    from (a scripted scenario's recording is found by its file's path); None when the
    source has none."""
    if not mcp_entries(source):
        return None
    found, target = recording_path(source), recording_path(derived)
    if not found.is_file() or target.exists():
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(found, target)
    return target
