"""``target.requires:``: the modules and programs a target needs (docs/external.md).

A requirement that is neither importable nor on PATH skips the scenario, with the reason:
a framework not installed is not the suite's fault. A misspelt one would skip it forever,
in silence, so a missing requirement that is close to what *is* installed (``opneai``
beside ``openai``), or that names an installed distribution instead of the module it
imports (``google-genai`` for ``google.genai``), is an error with the right name instead.
"""

from __future__ import annotations

import difflib
import importlib.metadata
import importlib.util
import os
import pkgutil
import shutil

__all__ = ["available", "misspelt"]

_CUTOFF = 0.8


def available(requirement: str) -> bool:
    """A Python module that imports or a program on PATH."""
    if shutil.which(requirement) is not None:
        return True
    try:
        return importlib.util.find_spec(requirement) is not None
    except (ImportError, ValueError):
        return False


def misspelt(requirement: str) -> str | None:
    """What is wrong with a requirement that is not available, when it looks like a
    mistake rather than something not installed; None otherwise."""
    module = _module_of_distribution(requirement)
    if module is not None and module != requirement:
        return (
            f"{requirement!r} is an installed distribution, not a module: requires: names "
            f"the module it imports ({module!r}) or a program on PATH"
        )
    hint = difflib.get_close_matches(requirement, _candidates(requirement), n=1, cutoff=_CUTOFF)
    if not hint:
        return None
    return (
        f"{requirement!r} is neither an importable module nor a program on PATH (did you "
        f"mean {hint[0]!r}, which is installed?); a requirement that is missing skips the "
        "scenario, so a misspelt one would skip it forever"
    )


def _module_of_distribution(name: str) -> str | None:
    """The top-level module an installed distribution ``name`` provides, if any."""
    try:
        distribution = importlib.metadata.distribution(name)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return None
    # The shallowest package it installs (google-genai's google/genai/__init__.py: a
    # namespace package's top level is not the module people import).
    packages = sorted(
        (p.parts[:-1] for p in distribution.files or () if p.name == "__init__.py"),
        key=len,
    )
    if packages and all(part.isidentifier() for part in packages[0]):
        return ".".join(packages[0])
    top = (distribution.read_text("top_level.txt") or "").split()
    return top[0] if top else None


def _candidates(requirement: str) -> list[str]:
    """What is installed near ``requirement``: the submodules of its parent package for a
    dotted name, else the top-level modules and the programs on PATH."""
    parent, dot, _ = requirement.rpartition(".")
    if dot:
        try:
            spec = importlib.util.find_spec(parent)
        except (ImportError, ValueError):
            spec = None
        locations = spec.submodule_search_locations if spec is not None else None
        if not locations:
            return []
        return [f"{parent}.{m.name}" for m in pkgutil.iter_modules(locations)]
    names = {m.name for m in pkgutil.iter_modules()}
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        try:
            names.update(os.listdir(folder or "."))
        except OSError:
            continue
    return sorted(names)
