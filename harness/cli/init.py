"""``harness init [DIR]``: a project skeleton that passes ``harness run`` at once.

It writes a pyproject.toml with a ``[tool.harness]`` table, one plugin (a tool pack), one
scenario using its tool, and a GitHub Actions workflow running the suite against the
committed baseline. It never overwrites: when any of its files exists, it writes nothing
and says which (docs/tutorial.md walks through what it made).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from harness.cli.parsing import Parser, UsageError
from harness.exitcodes import EXIT

__all__ = ["add_arguments", "handle", "skeleton"]

PYPROJECT = """\
[project]
name = "{name}"
version = "0.1.0"
requires-python = ">=3.11"
dependencies = ["loop-harness"]

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
        with: {python-version: "3.12"}
      - run: pip install -e .
      # --markdown: the summary and the baseline diff for a pull-request comment (the
      # job summary, $GITHUB_STEP_SUMMARY, gets them too).
      - run: >-
          harness run --markdown reports/summary.md
          $(test -f reports/baseline.json && echo --fail-on-change)
      - uses: actions/upload-artifact@v4
        if: always()
        with: {name: harness-report, path: reports/}
"""


def skeleton(name: str) -> dict[str, str]:
    """The files of a new project named ``name``: relative path -> text."""
    package = re.sub(r"\W", "_", name.lower()).strip("_") or "project"
    if package[0].isdigit():
        package = f"p_{package}"
    return {
        "pyproject.toml": PYPROJECT.format(name=name, package=package),
        f"{package}/__init__.py": "",
        f"{package}/tools.py": TOOLS,
        "scenarios/weather.scenario.yaml": SCENARIO,
        ".github/workflows/harness.yml": WORKFLOW,
    }


def add_arguments(parser: Parser) -> None:
    """``harness init``'s description and its one argument."""
    parser.description = (
        "Make a project skeleton: pyproject.toml with [tool.harness], one plugin, one "
        "scenario and a CI workflow; `harness run` passes at once. Nothing is overwritten."
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
    files = skeleton(name)
    there = [path for path in files if (root / path).exists()]
    if there:
        raise UsageError(
            f"{options.dir}: {', '.join(there)} already there; nothing written "
            "(harness init makes a new project: give an empty or new folder)"
        )
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"wrote {(Path(options.dir) / path).as_posix()}")
    where = "" if options.dir == "." else f"cd {options.dir} && "
    print(f"next: {where}harness run")
    return EXIT["passed"]
