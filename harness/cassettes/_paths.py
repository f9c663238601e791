"""Where a scenario's cassette lives."""

from __future__ import annotations

from pathlib import Path

from harness._errors import HarnessError
from harness._project import project_config
from harness.llm._config import LLMConfig

__all__ = ["DEFAULT_CASSETTE_DIR", "default_cassette_path", "resolve_cassette_path"]

DEFAULT_CASSETTE_DIR = "cassettes"
_SCENARIO_SUFFIXES = (".scenario.yaml", ".scenario.yml")


def default_cassette_path(scenario_file: Path, project_root: Path) -> Path:
    """``<cassette_dir>/<scenario path under scenarios/ (or the root)>`` ending in ``.yaml``."""
    root = project_root.resolve()
    scenario = scenario_file.resolve()
    cassette_dir = project_config(root).get("cassette_dir", DEFAULT_CASSETTE_DIR)
    if not isinstance(cassette_dir, str) or not cassette_dir:
        raise HarnessError(
            f"{root / 'pyproject.toml'}: [tool.harness] cassette_dir must be a folder name, "
            f"not {cassette_dir!r}"
        )
    for base in (root / "scenarios", root):
        try:
            relative = scenario.relative_to(base)
            break
        except ValueError:
            continue
    else:  # outside the project: keep the file name only
        relative = Path(scenario.name)
    name = relative.name
    for suffix in _SCENARIO_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)] + ".yaml"
            break
    else:
        name = Path(name).stem + ".yaml"
    return root / cassette_dir / relative.parent / name


def resolve_cassette_path(config: LLMConfig) -> Path:
    """The cassette of an ``llm:`` section: ``cassette:`` (relative to the scenario's folder)
    or the default path derived from the scenario file.

    A matrix combination has a cassette of its own: ``<that path without .yaml>/<the
    combination, as in its id>.yaml`` (``weather/model=gpt-4o-mini,planner=react.yaml``).
    """
    path = _cassette_path(config)
    variant = config.context.variant
    if variant:
        # A value may hold a slash (`openai/gpt-4o`): the file name must not.
        return path.with_suffix("") / f"{variant.replace('/', '_')}.yaml"
    return path


def _cassette_path(config: LLMConfig) -> Path:
    context = config.context
    if config.cassette:
        path = Path(config.cassette).expanduser()
        if not path.is_absolute():
            base = context.scenario_file.parent if context.scenario_file else context.project_root
            path = base / path
        return path
    if context.scenario_file is None:
        raise HarnessError(
            "provider openai needs a cassette: set llm.cassette, or run it from a scenario file "
            "(the cassette path is derived from the file's path)"
        )
    return default_cassette_path(context.scenario_file, context.project_root)
