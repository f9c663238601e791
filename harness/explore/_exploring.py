"""``explore()``: every fault at every site of passing scenarios, each failure a file
(docs/explore.md)."""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness._errors import HarnessError
from harness._project import display_path
from harness.explore._catalogue import ALL_FAULTS, SITE_KINDS, FaultError, Site, with_fault
from harness.explore._findings import failure_expect, file_name, group, header, write_failure
from harness.explore._model import Cell, Exploration, ExploredScenario, KindCount, Schedule
from harness.explore._oracle import invariants_of
from harness.explore._running import Runner, Variant, VariantRun, Workers
from harness.explore._sites import sites_of
from harness.llm._config import RECORDED_PROVIDERS
from harness.shrink._draft import Draft

__all__ = [
    "ExploreError",
    "ExploreOptions",
    "count",
    "explore",
    "explore_file",
    "scenario_files",
    "summarize",
]


class ExploreError(HarnessError):
    """Input explore cannot work from (a scenario that fails as written, no files): one
    line saying what and how to fix it."""


@dataclass(frozen=True)
class ExploreOptions:
    """How to explore (the command's flags)."""

    depth: int = 1
    faults: tuple[str, ...] = ALL_FAULTS
    sites: tuple[str, ...] = SITE_KINDS
    max_variants: int | None = None
    seed: int | str = 0
    jobs: int = 1
    output: Path = Path("explored")
    shrink: bool = True
    shard: tuple[int, int] | None = None  # (K, N): this shard's schedules, K from 1
    write: bool = True
    # Reruns of each written failure: None for 10 (own loop) or 3 (a target).
    reruns: int | None = None


def scenario_files(paths: Sequence[Path], output: Path) -> list[Path]:
    """The scenario files under ``paths`` (folders searched, hidden ones and the output
    folder left out), sorted within each folder; ExploreError for a path that is not there."""
    from harness.scenario import SUFFIXES

    skip = output.resolve()
    files: list[Path] = []
    for path in paths:
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            found = sorted(f for suffix in SUFFIXES for f in path.rglob(f"*{suffix}"))
            files += [
                f
                for f in found
                if not any(p.startswith(".") for p in f.relative_to(path).parts[:-1])
                and not f.resolve().is_relative_to(skip)
            ]
        else:
            raise ExploreError(f"no such file or folder: {path}")
    return files


def explore(
    paths: Sequence[Path],
    options: ExploreOptions,
    on_scenario: Callable[[ExploredScenario], None] | None = None,
) -> Exploration:
    """Explore every scenario file under ``paths``; ExploreError for bad input (one that
    fails as written stops the exploration)."""
    files = scenario_files(paths, options.output)
    if not files:
        raise ExploreError(f"no scenario files (*.scenario.yaml) in {', '.join(map(str, paths))}")
    exploration = Exploration(
        depth=options.depth,
        faults=list(options.faults),
        sites=list(options.sites),
        seed=options.seed,
        max_variants=options.max_variants,
        shard=f"{options.shard[0]}/{options.shard[1]}" if options.shard else None,
    )
    workers = Workers(options.jobs)
    # Variants load as files of the output folder (a relative path in them goes through
    # it): it exists while they run, and goes again if nothing was written in it.
    made = not options.output.exists()
    options.output.mkdir(parents=True, exist_ok=True)
    try:
        for path in files:
            entry = explore_file(path, options, workers)
            exploration.scenarios.append(entry)
            if on_scenario is not None:
                on_scenario(entry)
    finally:
        workers.close()
        if made and not any(options.output.iterdir()):
            options.output.rmdir()
    count(exploration)
    return exploration


def count(exploration: Exploration) -> None:
    """The suite's totals and per fault kind, from its scenarios' schedules."""
    kinds = {kind: KindCount(kind=kind) for kind in exploration.faults}
    total = exploration.schedules = type(exploration.schedules)()
    for scenario in exploration.scenarios:
        for schedule in scenario.tried:
            total.add(schedule.outcome)
            for kind in dict.fromkeys(kind for _, kind in schedule.faults):
                kinds.setdefault(kind, KindCount(kind=kind)).add(schedule.outcome)
    exploration.kinds = [k for k in kinds.values() if k.tried]


# -- one scenario ------------------------------------------------------------------------------


@dataclass
class _Base:
    """The scenario as written: its file, run, mapping (as it would be in the output
    folder), invariants, sites, and whether it is a target's."""

    path: Path
    shown: str
    text: str
    draft: Draft
    result: Any
    invariants: dict[str, Any]
    sites: list[Site]
    target: bool
    stem: str
    at: Path

    def variant(self, faults: Sequence[tuple[Site, str]]) -> Variant:
        """The variant with ``faults`` placed, its expectation the invariants (FaultError
        when one does not apply)."""
        data = self.draft.scenario
        for site, kind in faults:
            data = with_fault(data, site, kind, target=self.target)
        data = _without_expectations(data)
        data["expect"] = dict(self.invariants)
        return Variant(tuple(faults), data)


def _without_expectations(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without its turns' expectations (the invariants are the oracle)."""
    out = dict(data)
    if isinstance(out.get("turns"), list):
        out["turns"] = [
            {k: v for k, v in turn.items() if k != "expect"} if isinstance(turn, dict) else turn
            for turn in out["turns"]
        ]
    return out


def explore_file(
    path: Path, options: ExploreOptions, workers: Workers | None = None
) -> ExploredScenario:
    """One scenario's exploration; ExploreError when it fails as written."""
    base = _base(path, options)
    if isinstance(base, ExploredScenario):
        return base  # skipped
    runner = Runner(base.at, base.result, base.invariants, workers)
    (as_written,) = runner.run([base.variant([])])
    if as_written.divergence != "none":
        # Loaded from the output folder it runs otherwise: another project's root (its
        # plugins, recordings, modules), or none.
        raise ExploreError(
            f"{base.shown} run as a file of {display_path(options.output)} does not run as "
            f"written (it parts at {as_written.divergence or as_written.verdict.message}): "
            "give -o a folder inside its project"
        )
    if as_written.verdict.outcome != "held":
        # Every variant would break what the run as written breaks already.
        why = ", ".join(as_written.verdict.broken) or as_written.verdict.message
        got = as_written.failure.termination if as_written.failure else "it does not run"
        skipped = f"it breaks its invariants as written ({why}; {got}): nothing to explore"
        return ExploredScenario(id=str(base.result.id), file=base.shown, skipped=skipped)
    schedules = _explore_schedules(base, runner, options)
    entry = ExploredScenario(
        id=str(base.result.id),
        file=base.shown,
        sites=[site.label for site in base.sites],
        invariants=base.invariants,
        tried=schedules,
    )
    summarize(entry)
    return entry


def _explore_schedules(base: _Base, runner: Runner, options: ExploreOptions) -> list[Schedule]:
    kinds = options.faults
    first = _sampled(_applicable(base, [[]], base.sites, kinds), options, base, 1)
    # At depth 2 every shard runs every depth-1 schedule: their runs' sites make the pairs.
    mine = _mine(len(first), options) if options.depth == 1 else list(range(len(first)))
    runs = runner.run([first[i] for i in mine], sites=options.depth >= 2)
    ran = [(i, first[i], run) for i, run in zip(mine, runs, strict=True)]
    if options.depth >= 2:
        pairs: list[Variant] = []
        seen: set[tuple[Any, ...]] = set()
        for _, variant, run in ran:
            pairs += _applicable(base, [list(variant.faults)], list(run.sites), kinds, seen)
        second = _sampled(pairs, options, base, 2, budget_used=len(first))
        ran = [(i, v, r) for i, v, r in ran if i in set(_mine(len(first), options))]
        picked = _mine(len(second), options)
        runs = runner.run([second[i] for i in picked])
        ran += [(i, second[i], run) for i, run in zip(picked, runs, strict=True)]
    schedules = [(variant, _schedule(variant, run, order)) for order, variant, run in ran]
    if options.write:
        broken = [(v, s) for v, s in schedules if s.outcome == "broken"]
        _write_all(base, broken, options, runner.workers)
    return [schedule for _, schedule in schedules]


def _mine(count: int, options: ExploreOptions) -> list[int]:
    """The indexes of the schedules this shard runs (every one without --shard)."""
    if options.shard is None:
        return list(range(count))
    k, n = options.shard
    return [i for i in range(count) if i % n == k - 1]


def _applicable(
    base: _Base,
    prefixes: list[list[tuple[Site, str]]],
    sites: list[Site],
    kinds: Sequence[str],
    seen: set[tuple[Any, ...]] | None = None,
) -> list[Variant]:
    """The variants of each prefix schedule with one more fault, at each site, of each
    kind that applies there, in order (pairs already met in another order left out)."""
    out: list[Variant] = []
    for prefix in prefixes:
        for site in sites:
            for kind in kinds:
                faults = [*prefix, (site, kind)]
                if seen is not None:
                    key = _pair_key(faults)
                    if key in seen:
                        continue
                    seen.add(key)
                try:
                    out.append(base.variant(faults))
                except FaultError:
                    continue
    return out


def _pair_key(faults: list[tuple[Site, str]]) -> tuple[Any, ...]:
    """Two faults at different sites are one schedule in either order; at one site
    their order matters (a 429, then a malformed reply, before one reply)."""
    (a, b) = faults
    return (a, b) if a[0] == b[0] else tuple(sorted((a, b)))


def _sampled(
    variants: list[Variant], options: ExploreOptions, base: _Base, depth: int, budget_used: int = 0
) -> list[Variant]:
    """The variants tried: a deterministic sample within --max-variants (seeded by --seed
    and the scenario), in their order."""
    if options.max_variants is not None:
        room = max(0, options.max_variants - budget_used)
        if len(variants) > room:
            rng = random.Random(f"{options.seed}:{base.shown}:{depth}")
            variants = [variants[i] for i in sorted(rng.sample(range(len(variants)), room))]
    return variants


def summarize(entry: ExploredScenario) -> None:
    """The counts, findings and depth-1 grid of a scenario from its schedules."""
    entry.schedules = type(entry.schedules)()
    for schedule in entry.tried:
        entry.schedules.add(schedule.outcome)
    entry.findings = group(entry.tried)
    number = {file: f.number for f in entry.findings for file in f.files}
    entry.cells = [
        Cell(
            site=s.faults[0][0],
            kind=s.faults[0][1],
            outcome=s.outcome,
            broken=s.broken,
            finding=number.get(s.file) if s.file else None,
            file=s.file,
        )
        for s in entry.tried
        if len(s.faults) == 1
    ]


# -- the run as written ------------------------------------------------------------------------


def _base(path: Path, options: ExploreOptions) -> _Base | ExploredScenario:
    from harness.shrink import ShrinkError
    from harness.shrink._source import first_draft, read_original

    shown = display_path(path)
    try:
        original = read_original(path.resolve())
    except ShrinkError as exc:
        if "is skipped here" in str(exc) or "a matrix" in str(exc):
            return ExploredScenario(id=shown, file=shown, skipped=str(exc).split(": ", 1)[-1])
        raise ExploreError(str(exc)) from None
    result = original.result
    if result.status != "passed":
        failing = ", ".join(e.path for e in result.failed_expectations) or "its termination"
        raise ExploreError(
            f"{shown} {result.status} as written ({result.termination}; failing: {failing}): "
            "explore starts from a passing scenario; fix it or leave it out"
        )
    root = original.scenario.root
    if not options.output.resolve().is_relative_to(root):
        raise ExploreError(
            f"{shown}: -o {display_path(options.output)} lies outside its project "
            f"({display_path(root)}): its variants load as files of the output folder and "
            "find their modules, recordings and plugins from the project; give -o a folder "
            "inside it"
        )
    options.output.mkdir(parents=True, exist_ok=True)  # a relative path goes through it
    at = options.output.resolve() / path.name
    if _mcp_recorded(original.data) and at.parent != path.resolve().parent:
        # Its servers' recording lies beside the cassette its file's place names; a
        # scripted model has no cassette: key to name it by.
        why = "its MCP servers' recording is found from its file's place: -o its own folder"
        return ExploredScenario(id=shown, file=shown, skipped=why)
    draft = _with_cassette(first_draft(original, at), original, at)
    if "name" not in draft.scenario:
        # Its files are named after their faults: the name (and the seed it gives) stays.
        draft = draft.set(("scenario", "name"), original.scenario.display_name)
    data = original.data
    return _Base(
        path=path,
        shown=original.scenario.id_path or shown,
        text=original.text,
        draft=draft,
        result=result,
        invariants=invariants_of(data),
        sites=[s for s in sites_of(data, result) if s.kind in options.sites],
        target=data.get("target") is not None,
        stem=path.name.split(".")[0],
        at=at,
    )


def _mcp_recorded(data: dict[str, Any]) -> bool:
    """Whether a scripted scenario's own loop uses real MCP servers (recorded by its path)."""
    llm, tools = data.get("llm"), data.get("tools")
    llm = llm if isinstance(llm, dict) else {}
    tools = tools if isinstance(tools, dict) else {}
    scripted = llm.get("provider", "scripted") not in RECORDED_PROVIDERS
    return scripted and any(isinstance(t, dict) and "mcp" in t for t in tools.values())


def _with_cassette(draft: Draft, original: Any, at: Path) -> Draft:
    """A recorded model reading its cassette by its default path reads it by name from
    the output folder's place (the file written there reads the original cassette)."""
    llm = draft.scenario.get("llm")
    if not isinstance(llm, dict) or llm.get("provider") not in RECORDED_PROVIDERS:
        return draft
    if "cassette" in llm:
        return draft
    cassette = original.scenario.cassette_path()
    relative = Path(os.path.relpath(cassette, at.parent)).as_posix()
    return draft.set(("scenario", "llm", "cassette"), relative)


def _schedule(variant: Variant, run: VariantRun, order: int) -> Schedule:
    """A schedule's entry in the results."""
    verdict, failure = run.verdict, run.failure
    return Schedule(
        faults=[(site.label, kind) for site, kind in variant.faults],
        order=order,
        outcome=verdict.outcome,
        broken=list(verdict.broken),
        termination=failure.termination if failure else None,
        cause=(run.where or failure.cause) if failure else None,
        divergence=run.divergence or None,
        message=verdict.message or None,
    )


def _write_all(
    base: _Base, broken: list[tuple[Variant, Schedule]], options: ExploreOptions, workers: Any
) -> None:
    """Write each broken schedule as a file, on the workers: a finding's first file is
    shrunk and rerun fully, its others rerun once (a finding is one bug: its first file
    shows it)."""
    reruns = options.reruns or (3 if base.target else 10)
    jobs, written = [], set()
    for variant, schedule in broken:
        key = (tuple(schedule.broken), schedule.termination, schedule.divergence)
        first = key not in written
        written.add(key)
        data = dict(variant.data)
        data["expect"] = failure_expect(base.invariants, schedule.broken)
        cause = schedule.cause if schedule.cause != schedule.termination else None
        got = f"got {schedule.termination}" + (f", {cause}" if cause else "")
        lines = header(base.shown, variant.faults, schedule.broken, got)
        path = options.output / file_name(base.stem, variant.faults)
        times, shrink = (reruns, options.shrink) if first else (1, False)
        jobs.append((path, base.text, base.draft, data, variant.faults, lines, times, shrink))
    for (_, schedule), done in zip(broken, workers.map(write_failure, jobs), strict=True):
        schedule.file = display_path(done.path)
        schedule.reproduced = done.reproduced
        schedule.reruns = done.reruns
        schedule.shrunk = done.shrunk
