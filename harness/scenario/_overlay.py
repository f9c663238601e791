"""One scenario document merged over another, each value keeping its file and line.

``extends: FILE`` starts a scenario from another file's keys, and each of a scenario's
``cases:`` is merged over the scenario. Both merge the same way (docs/scenarios.md#extends):
mappings key by key, at every depth; any other value (a list, a text, a number) replaces
the one under it whole. An error found later names the file and line the value came from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness._errors import ScenarioError
from harness._files import read_bounded
from harness._project import display_path
from harness.scenario._yamlsource import Located, Path_, load_yaml

__all__ = ["overlay", "with_extends"]

# The most files one chain of `extends:` may hold: a deeper chain is a mistake.
_MAX_CHAIN = 20


def overlay(under: Located, over: Located, *, file: str | None = None) -> Located:
    """``over``'s data merged over ``under``'s, as one document shown as ``file`` (default:
    ``under``'s); each path keeps the file and line it came from."""
    file = file or under.file
    replaced: list[Path_] = []
    data = _merged(under.data, over.data, (), replaced)

    def kept(path: Path_) -> bool:
        return not any(path[: len(r)] == r for r in replaced)

    lines = {p: n for p, n in under.lines.items() if kept(p)}
    blocks = {p: n for p, n in under.literal_blocks.items() if kept(p)}
    files = {p: under.file_of(p) for p in lines if under.file_of(p) != file}
    for path, line in over.lines.items():
        lines[path] = line
        other = over.file_of(path)
        if other != file:
            files[path] = other
        else:
            files.pop(path, None)
    blocks.update(over.literal_blocks)
    spelled = {p: t for p, t in under.spelled.items() if kept(p)} | over.spelled
    return Located(data, lines, file, blocks, files, spelled)


def _merged(under: Any, over: Any, path: Path_, replaced: list[Path_]) -> Any:
    """``over`` merged over ``under`` (mappings key by key); ``replaced`` gets the paths
    whose value under was replaced whole."""
    if isinstance(under, dict) and isinstance(over, dict):
        out = dict(under)
        for key, value in over.items():
            out[key] = _merged(under[key], value, (*path, key), replaced) if key in under else value
        return out
    replaced.append(path)
    return over


def with_extends(located: Located, path: Path, chain: tuple[Path, ...] = ()) -> Located:
    """The scenario document with the files its ``extends:`` names merged under it (each
    may extend another); ScenarioError for a file that is missing, is no mapping, or
    extends itself."""
    data = located.data
    if not isinstance(data, dict) or "extends" not in data:
        return located
    given = data["extends"]
    if not isinstance(given, str) or not given.strip():
        raise located.error(
            ("extends",), "expected a file name, relative to this file: extends: base.yaml"
        )
    base_path = (path.parent / given).resolve()
    chain = (*chain, path.resolve())
    if base_path in chain:
        shown = " -> ".join(display_path(p) for p in (*chain, base_path))
        raise located.error(("extends",), f"extends itself: {shown}; remove one extends:")
    if len(chain) >= _MAX_CHAIN:
        raise located.error(("extends",), f"more than {_MAX_CHAIN} files extend each other")
    base = _load_base(located, base_path, given)
    base = _without_own_keys(with_extends(base, base_path, chain))
    merged = overlay(base, located, file=located.file)
    merged.data.pop("extends", None)
    return merged


# Keys of a file that stay its own: a scenario extending it does not take them.
_OWN_KEYS = ("extends", "name", "cases")


def _without_own_keys(base: Located) -> Located:
    def shared(path: Path_) -> bool:
        return not path or path[0] not in _OWN_KEYS

    return Located(
        {k: v for k, v in base.data.items() if k not in _OWN_KEYS},
        {p: n for p, n in base.lines.items() if shared(p)},
        base.file,
        {p: n for p, n in base.literal_blocks.items() if shared(p)},
        {p: f for p, f in base.files.items() if shared(p)},
        {p: t for p, t in base.spelled.items() if shared(p)},
    )


def _load_base(located: Located, base_path: Path, given: str) -> Located:
    """The YAML of the file ``extends:`` names (which need not be a scenario file)."""
    shown = display_path(base_path)
    if not base_path.is_file():
        raise located.error(
            ("extends",),
            f"{given}: no such file (looked for {shown}; the path is relative to this file)",
        )
    try:
        text = read_bounded(base_path).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise located.error(("extends",), f"cannot read {shown}: {exc}") from None
    base = load_yaml(text, shown)
    if not isinstance(base.data, dict):
        raise ScenarioError.single(
            shown, base.line_of(()), "", "a file to extend is a mapping (tools:, agent:, llm: ...)"
        )
    return base
