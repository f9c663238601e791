"""The GitHub Actions example in docs/running.md#shards: valid YAML, a matrix of shard jobs
then a merge job, and its harness commands, run as written against a small suite, give
the results a serial run gives."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml
from scenario_texts import PASSING

from harness import cli

DOC = Path(__file__).resolve().parent.parent / "docs" / "running.md"
SHELL_OK_ON_FAILURE = "test $? -eq 1"  # a failed scenario must not fail the shard job


def workflow() -> dict[str, Any]:
    """The YAML block that follows "A CI example (GitHub Actions)" in docs/running.md."""
    text = DOC.read_text(encoding="utf-8")
    after = text[text.index("A CI example (GitHub Actions)") :]
    block = re.search(r"```yaml\n(.*?)```", after, re.S)
    assert block is not None
    return yaml.safe_load(block.group(1))


def commands(job: dict[str, Any]) -> list[str]:
    """The job's `run:` steps that call harness, as one line each."""
    runs = [" ".join(step["run"].split()) for step in job["steps"] if "run" in step]
    return [run for run in runs if run.startswith("harness ")]


def harness_args(line: str, shard: int) -> list[str]:
    """A `run:` line's harness arguments, ``${{ matrix.shard }}`` filled in."""
    line = line.replace("${{ matrix.shard }}", str(shard))
    command, _, otherwise = line.partition("||")
    assert otherwise.strip() in ("", SHELL_OK_ON_FAILURE), line
    args = shlex.split(command)
    assert args[0] == "harness"
    return args[1:]


def test_the_example_is_a_matrix_of_shard_jobs_then_a_merge_job() -> None:
    jobs = workflow()["jobs"]
    shards = jobs["scenarios"]["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1))
    assert jobs["report"]["needs"] == "scenarios"
    assert jobs["report"]["if"] == "always()"  # the report is made when a shard failed
    (run,) = commands(jobs["scenarios"])
    assert f"--shard ${{{{ matrix.shard }}}}/{len(shards)}" in run
    (merge,) = commands(jobs["report"])
    assert merge.split()[:2] == ["harness", "merge"]
    assert len(merge.split()[2:]) == len(shards)


def _results_outside_meta(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    data.pop("meta")
    for entry in data["scenarios"]:
        entry.pop("wall_time")
    return data


@pytest.mark.usefixtures("fresh_plugins")
def test_the_examples_commands_merge_into_the_serial_results(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    folder = pytester.path / "scenarios"
    folder.mkdir()
    for i in range(9):
        text = PASSING.replace("name: greet", f"name: greet{i}")
        if i == 5:
            text = text.replace("contains: 72F", "contains: rain")  # one fails
        (folder / f"greet{i}.scenario.yaml").write_text(text)
    monkeypatch.chdir(pytester.path)
    # The committed durations: an earlier serial run's results.
    assert cli.main(["run", "--json", "reports/durations.json", "--html", "serial.html"]) == 1
    jobs = workflow()["jobs"]
    (run,) = commands(jobs["scenarios"])
    for shard in jobs["scenarios"]["strategy"]["matrix"]["shard"]:
        assert cli.main(harness_args(run, shard)) in (0, 1)  # 1: the failing one, allowed
    (merge,) = commands(jobs["report"])
    assert cli.main(harness_args(merge, 0)) == 1
    merged = _results_outside_meta(pytester.path / "reports" / "results.json")
    serial = _results_outside_meta(pytester.path / "reports" / "durations.json")
    assert merged == serial
    assert (pytester.path / "reports" / "report.html").is_file()
