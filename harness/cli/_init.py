"""``harness init [DIR]``: a project skeleton that passes ``harness run`` at once.

It writes a pyproject.toml with a ``[tool.harness]`` table (and what ``pip install -e .``
needs: the agent's package named, so setuptools does not take scenarios/ for one), one
plugin (a tool pack), one scenario using its tool, a README saying how to install and
run it, a .gitignore, and a GitHub Actions workflow that installs harness as the README
says and runs the suite against the committed baseline. How harness is installed comes
from how the running harness was (``harness.cli._requirement``). It never overwrites: when
any of its files exists, it writes nothing and says which; an existing README.md or
.gitignore is kept (docs/tutorial.md walks through what it made).
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
from pathlib import Path
from typing import Any

from harness._exitcodes import EXIT
from harness.cli._parsing import Parser, UsageError
from harness.cli._requirement import harness_requirement

__all__ = ["add_arguments", "handle", "skeleton"]

PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "0.1.0"
requires-python = ">=3.11"
# harness itself is installed first, as README.md says, until it is on a package index.
dependencies = ["loop-harness"]

[tool.setuptools]
# The agent's package only: scenarios/, cassettes/ and reports/ are data, not code.
packages = ["{package}"]

[tool.harness]
# Modules imported before every run (with the project root on sys.path).
plugins = ["{package}.tools"]
"""

TOOLS = '''\
"""The tools the project's agent uses, registered for scenarios (`use: get_weather`)."""

from harness.plugin import hookimpl, tool

TEMPERATURES = {"SF": 72, "Oslo": 41}


@tool
def get_weather(city: str) -> str:
    """Today's temperature in a city."""
    return f"{TEMPERATURES.get(city, 60)}F in {city}"


@hookimpl
def harness_register_tools(register):
    register(get_weather)
'''

SCENARIO = """\
# One agent run: the model's replies are scripted, the tool is the plugin's own.
name: weather
input: What's the weather in SF?
tools:
  get_weather: {use: get_weather}
llm:
  script:
    - tool_calls: [{get_weather: {city: SF}}]
    - content: It is 72F in SF.
expect:
  termination: completed
  tool_calls: {sequence: [get_weather]}
  final: {contains: 72F}
"""

WORKFLOW = """\
# Runs the scenarios on every pull request and shows the summary on the job's page.
# Commit reports/baseline.json (`harness run --update-baseline`) to compare with it.
name: harness
on: [pull_request, push]
jobs:
  scenarios:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with: {{python-version: "3.12"}}
      # harness, as README.md installs it (until it is on a package index), then the project.
      - run: pip install {requirement}
      - run: pip install -e .
      # --markdown: the summary and the baseline diff for a pull-request comment (the
      # job summary, $GITHUB_STEP_SUMMARY, gets them too).
      - run: >-
          harness run --markdown reports/summary.md
          $(test -f reports/baseline.json && echo --fail-on-change)
      - uses: actions/upload-artifact@v4
        if: always()
        with: {{name: harness-report, path: reports/}}
"""

README = """\
# {name}

Scenarios for {name}'s agent, run by harness: each file in `scenarios/` is one run of the
agent against a scripted (or recorded) model, with what the run must do.

## Install

```sh
python -m venv .venv && . .venv/bin/activate
pip install {requirement}    # harness, until it is on a package index
pip install -e .
```

## Run

```sh
harness run                     # the scenarios in scenarios/; reports in reports/
harness run --update-baseline   # accept this run: commit reports/baseline.json
```

`.github/workflows/harness.yml` runs the same on every push and pull request.
"""

GITIGNORE = """\
# Made by harness run: commit the baseline (harness run --update-baseline), not the rest.
reports/*
!reports/baseline.json
# What a write stopped before its rename leaves (harness removes it on its next write).
.*.harness-tmp
.venv/
__pycache__/
*.egg-info/
.pytest_cache/
build/
dist/
"""

# Written only when the folder has none: a project of its own keeps its own.
_OPTIONAL = ("README.md", ".gitignore")


def skeleton(name: str, requirement: str = "loop-harness") -> dict[str, str]:
    """The files of a new project named ``name``: relative path -> text. ``requirement``:
    what pip installs harness from (quoted for a shell when it needs to be)."""
    package = re.sub(r"\W", "_", name.lower()).strip("_") or "project"
    if package[0].isdigit():
        package = f"p_{package}"
    shown = shlex.quote(requirement)
    return {
        "pyproject.toml": PYPROJECT.format(name=name, package=package),
        f"{package}/__init__.py": "",
        f"{package}/tools.py": TOOLS,
        "scenarios/weather.scenario.yaml": SCENARIO,
        ".github/workflows/harness.yml": WORKFLOW.format(requirement=shown),
        "README.md": README.format(name=name, requirement=shown),
        ".gitignore": GITIGNORE,
    }


def add_arguments(parser: Parser) -> None:
    """``harness init``'s description and its one argument."""
    parser.description = (
        "Make a project skeleton: pyproject.toml with [tool.harness] (pip install -e . "
        "installs it), one plugin, one scenario, a README, a .gitignore and a CI workflow "
        "that installs harness as this one was; `harness run` passes at once. Nothing is "
        "overwritten."
    )
    parser.add_argument(
        "dir", nargs="?", default=".", metavar="DIR", help="where (default: the current folder)"
    )


def handle(options: argparse.Namespace) -> int:
    """``harness init [DIR]``: write the skeleton, or nothing when a file of it exists."""
    root = Path(options.dir)
    if root.exists() and not root.is_dir():
        raise UsageError(f"{options.dir}: not a folder")
    name = re.sub(r"[^A-Za-z0-9._-]", "-", root.resolve().name) or "project"
    installed = harness_requirement()
    files: dict[str, Any] = skeleton(name, installed.requirement)
    there = [path for path in files if (root / path).exists() and path not in _OPTIONAL]
    if there:
        raise UsageError(
            f"{options.dir}: {', '.join(there)} already there; nothing written "
            "(harness init makes a new project: give an empty or new folder)"
        )
    for source, path in installed.copies.items():
        files[path] = source  # a Path: copied as bytes below
    for path, content in files.items():
        target = root / path
        shown = (Path(options.dir) / path).as_posix()
        if path in _OPTIONAL and target.exists():
            print(f"kept {shown}: yours (harness init writes one only where there is none)")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copyfile(content, target)
        else:
            target.write_text(content, encoding="utf-8")
        print(f"wrote {shown}")
    if installed.note:
        print(f"note: {installed.note}")
    where = "" if options.dir == "." else f"cd {options.dir} && "
    print(f"next: {where}harness run")
    return EXIT["passed"]
