"""The project: its root folder, its ``[tool.harness]`` table, and paths relative to it.

A scenario's id, a baseline's source and a cassette name are written relative to the
project root so that results do not depend on where the checkout lies or where a run
started; messages show paths relative to the current directory, as a person typed them.
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

from harness._errors import HarnessError

__all__ = [
    "ProjectConfigError",
    "display_path",
    "project_config",
    "project_relative",
    "project_root",
]


class ProjectConfigError(HarnessError):
    """The project's pyproject.toml cannot be read."""


def project_root(start: str | Path | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: cwd) holding a pyproject.toml."""
    here = Path(start or Path.cwd()).resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file():
            return folder
    return Path.cwd().resolve()


def project_config(root: Path | None = None) -> dict[str, Any]:
    """The ``[tool.harness]`` table of the project's pyproject.toml ({} when absent)."""
    path = (root or project_root()) / "pyproject.toml"
    try:
        stat = path.stat()
    except OSError:
        return {}
    if not path.is_file():
        return {}
    # Read once while the file is unchanged: a run asks for it several times, and harness
    # explore runs thousands of variants of one project.
    key = (stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size, stat.st_ino)
    cached = _CONFIGS.get(path)
    if cached is None or cached[0] != key:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ProjectConfigError(f"{path}: not valid TOML: {exc}") from None
        table = data.get("tool", {}).get("harness", {})
        cached = _CONFIGS[path] = (key, table if isinstance(table, dict) else {})
    return copy.deepcopy(cached[1])


_CONFIGS: dict[Path, tuple[tuple[int, int, int, int], dict[str, Any]]] = {}


def project_relative(path: str | Path, root: str | Path | None = None) -> str:
    """``path`` as a POSIX path relative to ``root`` (default: the project root of the
    current directory), or its absolute POSIX path when it lies outside."""
    resolved = Path(path).resolve()
    base = Path(root).resolve() if root is not None else project_root()
    try:
        return resolved.relative_to(base).as_posix()
    except ValueError:
        return resolved.as_posix()


def display_path(path: str | Path) -> str:
    """The path as a person wants to read it: relative to cwd when it is below it."""
    path = Path(path)
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()
