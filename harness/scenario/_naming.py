"""Which files are scenario files, and the YAML files that look like scenarios but are not
named as one (``weather.yaml``): ``harness run`` and ``pytest`` would pass over them in
silence, so the commands name them, with the name to give them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from harness._files import read_bounded
from harness.scenario._loader import SUFFIX, SUFFIXES

__all__ = ["SKIP_DIRS", "is_scenario_file", "misnamed", "rename_hint", "scenario_files"]

# Keys only a scenario file has at its top level: a YAML file holding two of them is
# taken for a scenario (a workflow, a compose file or a cassette holds none).
_SCENARIO_KEYS = ("input", "llm", "expect", "tools", "target", "turns", "agent", "cases")
# What `harness run DIR` does not descend into (pytest's norecursedirs defaults).
SKIP_DIRS = frozenset({"node_modules", "venv", "build", "dist", "_darcs", "CVS", "__pycache__"})
# The most YAML files looked at for a hint: a hint must not cost a large tree's reading.
_MAX_LOOKED_AT = 200


def is_scenario_file(path: Path) -> bool:
    """A file named as scenario files are (``*.scenario.yaml`` or ``*.scenario.yml``)."""
    return path.name.endswith(SUFFIXES)


def scenario_files(paths: Iterable[str | Path]) -> list[Path]:
    """The scenario files of ``paths``: files as given, folders searched (not hidden ones,
    nor those pytest does not descend into)."""
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found = sorted(f for suffix in SUFFIXES for f in path.rglob(f"*{suffix}"))
            for file in found:
                parts = file.relative_to(path).parts[:-1]
                if not any(p.startswith(".") or p in SKIP_DIRS for p in parts):
                    files.append(file)
        elif path.is_file():
            files.append(path)
    return files


def rename_hint(path: Path) -> str:
    """How a YAML file becomes a scenario file: its name with ``.scenario.yaml``."""
    stem = path.name
    for suffix in (".yaml", ".yml"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    return f"scenario files are named *{SUFFIX}: rename {path.name} to {stem}{SUFFIX}"


def misnamed(paths: Iterable[str | Path]) -> list[Path]:
    """The YAML files under ``paths`` (files or folders) that read like scenarios but are
    not named as scenario files."""
    found = []
    for path in _yaml_files(paths):
        if _looks_like_a_scenario(path):
            found.append(path)
    return found


def _yaml_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    looked = 0
    for given in paths:
        root = Path(given)
        candidates = [root] if root.is_file() else sorted(root.rglob("*.y*ml"))
        for path in candidates:
            parts = path.relative_to(root).parts[:-1] if path != root else ()
            if any(p.startswith(".") or p in SKIP_DIRS for p in parts):
                continue
            if path.suffix not in (".yaml", ".yml") or is_scenario_file(path):
                continue
            looked += 1
            if looked > _MAX_LOOKED_AT:
                return
            yield path


def _looks_like_a_scenario(path: Path) -> bool:
    import yaml

    try:
        data = yaml.safe_load(read_bounded(path, 1 << 20).decode("utf-8"))
    except (OSError, ValueError, yaml.YAMLError):
        return False
    return isinstance(data, dict) and sum(key in data for key in _SCENARIO_KEYS) >= 2
