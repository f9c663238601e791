"""One rerun of a draft: written out as a scenario file's text (and its cassettes as
files), loaded as if it were the output file, run in this process, offline."""

from __future__ import annotations

import contextlib
import hashlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from harness._files import atomic_write
from harness._results import ScenarioResult
from harness.cassettes._format import readable_yaml
from harness.shrink._draft import Draft

__all__ = ["Rerunner", "cassette_text", "quiet", "scenario_text"]

_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def scenario_text(data: dict[str, Any]) -> str:
    """A scenario mapping as YAML text, fast (for reruns; the output keeps the file's own
    layout, harness.shrink._output)."""
    return yaml.dump(data, Dumper=_DUMPER, sort_keys=False, allow_unicode=True)


def cassette_text(cassette: dict[str, Any]) -> str:
    """A cassette's mapping as the readable YAML harness records."""
    return readable_yaml(cassette)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """What a target prints while it reruns is not the shrinker's output."""
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        yield


class Rerunner:
    """Runs drafts as if their file were ``at``; cassettes go to files in ``workdir``."""

    def __init__(self, at: Path, workdir: Path) -> None:
        self.at = at
        self.workdir = workdir
        # Cassette mappings already written (by identity: a draft shares what it did not
        # change), kept alive so that an id is never reused for another one.
        self._written: dict[int, tuple[Any, Path]] = {}
        self.crashed = 0

    def text(self, draft: Draft) -> str:
        """The draft's scenario text, its cassettes pointing at files of the workdir."""
        data = draft.scenario
        for key, cassette in draft.data.get("cassettes", {}).items():
            data = _with_cassette(data, key, str(self._cassette_file(cassette)))
        return scenario_text(data)

    def _cassette_file(self, cassette: dict[str, Any]) -> Path:
        known = self._written.get(id(cassette))
        if known is not None:
            return known[1]
        text = cassette_text(cassette)
        path = self.workdir / f"{hashlib.sha256(text.encode()).hexdigest()[:20]}.yaml"
        if not path.exists():
            atomic_write(path, text)
        self._written[id(cassette)] = (cassette, path)
        return path

    def __call__(self, draft: Draft) -> ScenarioResult | None:
        """The run's result; None when the draft does not load or its run crashes."""
        from harness._errors import HarnessError
        from harness.scenario import run_scenario
        from harness.scenario._loader import load_scenario_text

        try:
            scenario = load_scenario_text(self.text(draft), self.at)
        except HarnessError:
            return None
        try:
            with quiet():
                return run_scenario(scenario)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception:  # a skipped target, a refused recording, a plugin's crash
            self.crashed += 1
            return None


def _with_cassette(data: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    """``data`` with the llm section named ``key`` (``llm``, ``agents.NAME.llm``) reading
    its cassette from ``path``."""
    parts = key.split(".")
    root = dict(data)
    node = root
    for part in parts:
        node[part] = dict(node[part])
        node = node[part]
    node["cassette"] = path
    return root
