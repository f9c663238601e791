"""Each failure a file: a broken schedule written as an ordinary scenario (the original,
its faults as data, the broken invariants as its expectation), checked to fail the same
way on reruns, shrunk; failures grouped into findings (docs/explore.md#findings)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness._errors import HarnessError
from harness._files import atomic_write
from harness.explore._catalogue import Site, fault_slug
from harness.explore._model import Finding, Schedule
from harness.scenario._dotted import expand_dotted
from harness.scenario._expect_schema import ExpectSection
from harness.shrink._draft import Draft
from harness.shrink._failure import Failure
from harness.shrink._output import render

__all__ = ["Written", "file_name", "finding_key", "group", "write_failure"]


def file_name(stem: str, faults: Sequence[tuple[Site, str]]) -> str:
    """``refund--tool-lookup-2-raises.scenario.yaml``: the scenario, then each fault."""
    parts = [f"{site.slug}-{fault_slug(kind)}" for site, kind in faults]
    return "--".join([stem, *parts]) + ".scenario.yaml"


def finding_key(schedule: Schedule) -> tuple[tuple[str, ...], str, str]:
    """What makes failures one finding: the invariants broken, the termination, and where
    the run first parted from the run as written."""
    return tuple(schedule.broken), schedule.termination or "", schedule.divergence or ""


def group(schedules: Sequence[Schedule]) -> list[Finding]:
    """The findings of a scenario's broken schedules, numbered in the order first met."""
    found: dict[tuple[tuple[str, ...], str, str], Finding] = {}
    for schedule in schedules:
        if schedule.outcome != "broken":
            continue
        key = finding_key(schedule)
        finding = found.get(key)
        if finding is None:
            finding = found[key] = Finding(
                number=len(found) + 1,
                broken=list(key[0]),
                termination=key[1],
                divergence=key[2],
                cause=schedule.cause,
                schedules=0,
                files=[],
                shrunk=schedule.shrunk,
            )
        finding.schedules += 1
        if schedule.file is not None:
            finding.files.append(schedule.file)
            finding.reruns += schedule.reruns
            finding.reproduced += int(schedule.reproduced)
    return list(found.values())


# -- writing one failure ---------------------------------------------------------------------


@dataclass
class Written:
    """A failure written: its file, whether it failed the same way on every rerun, the
    reruns, and whether it was shrunk."""

    path: Path
    reproduced: bool
    reruns: int
    shrunk: bool


def failure_expect(invariants: dict[str, Any], broken: Sequence[str]) -> dict[str, Any]:
    """The expectation of a written failure: the invariants it broke (``final.contains``
    kept under ``final``)."""
    nested = expand_dotted(invariants, ExpectSection.sections())
    out: dict[str, Any] = {}
    for path in broken:
        head, _, sub = path.partition(".")
        if head not in nested:
            continue
        if sub and isinstance(nested[head], dict) and sub in nested[head]:
            out.setdefault(head, {})[sub] = nested[head][sub]
        else:
            out[head] = nested[head]
    return out


def _diff(draft: Draft, at: tuple[str | int, ...], was: Any, now: Any) -> Draft:
    """``draft`` with the edits that make ``was`` (under ``at``) into ``now``."""
    if isinstance(was, dict) and isinstance(now, dict):
        for key in [k for k in was if k not in now]:
            draft = draft.remove([(*at, key)])
        for key, value in now.items():
            if key in was:
                draft = _diff(draft, (*at, key), was[key], value)
            else:
                draft = draft.set((*at, key), value)
        return draft
    return draft if was == now else draft.set(at, now)


def write_failure(
    path: Path,
    original_text: str,
    base: Draft,
    variant: dict[str, Any],
    faults: Sequence[tuple[Site, str]],
    header: list[str],
    reruns: int,
    shrink: bool,
) -> Written:
    """Write ``variant`` (a scenario mapping made from ``base``, the original as it would
    be at ``path``) as the original's YAML edited, under ``header``; shrink it; rerun it."""
    draft = _diff(base, ("scenario",), base.scenario, variant)
    text = render(original_text, draft.edits, draft.scenario, header)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text)
    expected = _failure(path)
    shrunk = False
    if shrink and expected is not None:
        shrunk = _shrink(path, variant.get("expect") or {}, faults)
        if shrunk:
            expected = _failure(path)
    if expected is None:
        return Written(path, False, 1, shrunk)
    same = all(_failure(path) == expected for _ in range(reruns - 1))
    return Written(path, same and expected.status != "passed", reruns, shrunk)


def _failure(path: Path) -> Failure | None:
    """How the file's run fails (None when it does not load or run)."""
    from harness.explore._running import run_one
    from harness.scenario._yamlsource import load_yaml

    try:
        data = load_yaml(path.read_text(encoding="utf-8"), str(path)).data
        return Failure.of(run_one(data, path))
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception:
        return None


def _shrink(path: Path, expect: dict[str, Any], faults: Sequence[tuple[Site, str]]) -> bool:
    """Shrink the file in place (harness shrink, docs/shrink.md); whether it did. The
    broken invariants stay its expectation (shrink may drop one that no expect checks
    the same way: a run without expect must complete). A shrunk scenario that no longer
    holds the faults is not kept: it fails the same way by another road (an empty
    scripted answer instead of an empty_reply fault, a crash of its own)."""
    from harness.shrink import ShrinkError, shrink
    from harness.shrink._draft import Draft
    from harness.shrink._rerun import quiet

    try:
        with quiet():
            result = shrink(path, output=path)
    except (ShrinkError, HarnessError):
        return False
    if result.after.total >= result.before.total:
        return False
    text, data = result.text, result.data
    if not all(_holds(data, site, kind) for site, kind in faults):
        return False
    if expect and data.get("expect") != expect:
        # The header written above the original stays: the round trip keeps comments.
        restored = Draft({"scenario": data, "cassettes": {}}).set(("scenario", "expect"), expect)
        text = render(text, restored.edits, restored.scenario, [])
    atomic_write(path, text)
    return True


# Where each fault kind is written in a tool's entry.
_TOOL_KEYS = {
    "tool_error": "errors",
    "tool_timeout": "errors",
    "mcp_error": "errors",
    "mcp_disconnect": "errors",
    "mcp_hang": "errors",
    "tool_empty": "results",
    "tool_huge": "results",
    "tool_slow": "results",
    "tool_injection": "inject",
    "mcp_rug_pull": "rug_pull",
}


def _holds(data: dict[str, Any], site: Site, kind: str) -> bool:
    """Whether the scenario mapping still places fault ``kind`` for ``site``."""
    if site.tool:
        spec = (data.get("tools") or {}).get(site.tool)
        return isinstance(spec, dict) and spec.get(_TOOL_KEYS[kind]) is not None
    holder = data if site.kind == "model" else (data.get("agents") or {}).get(site.agent) or {}
    entries = (holder.get("llm") or {}).get("faults") or []
    return any(isinstance(e, dict) and e.get("kind") == kind for e in entries)


def header(
    original: str, faults: Sequence[tuple[Site, str]], broken: Sequence[str], got: str
) -> list[str]:
    """The comment at the top of a written failure: where it comes from (the original's
    path in its project) and what fails."""
    said = "; ".join(f"{kind} at {site.label}" for site, kind in faults)
    return [
        f"Found by `harness explore` from {original} (docs/explore.md).",
        f"Faults: {said}.",
        f"It breaks: {', '.join(broken)} ({got}).",
    ]
