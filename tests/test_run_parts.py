"""A run in parts: `harness run --chunk-size N` (docs/running.md#large-suites).

The suite runs as several pytest sessions, one after another, each collecting one part of
the scenario files; what a user gets must be what one session gives: the same
results.json, report, baseline diff, traces and exit status, every scenario run once.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter

import pytest
from scenario_texts import PASSING, SESSION_TESTS
from test_shards import (  # the same suite and fixtures as the shards' tests
    ERRORING,
    FAILING,
    _outside_meta_and_wall_times,
    _report,
    _suite,
    add,
    project,
    run,
)

from harness._results import load_results
from harness._shards import part_of

pytestmark = SESSION_TESTS

__all__ = ["project", "run"]  # fixtures, used by name

_ITEM = re.compile(r"^(?:PASSED|FAILED|ERROR) (scenarios/\S+::\S+)", re.M)


def _ran(out: str) -> Counter[str]:
    """How many times each item ran, from pytest's -rA lines (one per item per session)."""
    return Counter(m.group(1) for m in _ITEM.finditer(out))


def _parts_of_suite(project, total: int) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for path in sorted((project.path / "scenarios").glob("*.scenario.yaml")):
        found.setdefault(part_of(f"scenarios/{path.name}", total), []).append(path.name)
    return found


def test_a_run_in_parts_writes_what_one_session_writes(project, run):
    _suite(project)
    assert run("run", "--json", "base.json", "--html", "base.html")[0] == 1
    (project.path / "scenarios/gone.scenario.yaml").unlink()
    add(project, "greet3", FAILING)
    add(project, "added", PASSING)
    status, one, _ = run(
        "run", "--baseline", "base.json", "--json", "one.json", "--html", "one.html", "--", "-rA"
    )
    assert status == 1
    # 13 files over 4 parts: each part has files to run (the split is by path).
    assert len(_parts_of_suite(project, 4)) == 4
    status, out, _ = run(
        "run",
        "--chunk-size",
        "4",
        "--baseline",
        "base.json",
        "--json",
        "parts.json",
        "--html",
        "parts.html",
        "--",
        "-rA",
    )
    assert status == 1, out
    # Four sessions, each saying which part it is, each item in one of them, once.
    assert out.count("test session starts") == 4
    assert all(f"harness: part {k} of 4 of the run (--chunk-size)" in out for k in (1, 2, 3, 4))
    assert out.count("rootdir:") == 1  # the first part's header says it for all
    assert _ran(out) == _ran(one)
    assert set(_ran(out).values()) == {1}
    assert len(_ran(out)) == 15  # 13 files, one of them run 3 times
    serial = _outside_meta_and_wall_times(project.path / "one.json")
    parts = _outside_meta_and_wall_times(project.path / "parts.json")
    assert parts == serial
    assert parts["baseline"]["removed"][0]["id"] == "scenarios/gone.scenario.yaml::gone"
    assert _report(project.path / "parts.html") == _report(project.path / "one.html")
    # One harness summary, of the whole run, after the last part.
    assert out.count("harness summary") == 1

    def summary(text: str) -> list[str]:
        """The harness summary's lines, but those naming the files written."""
        lines = text[text.index("harness summary") :].splitlines()[1:]
        # (One session's is followed by pytest's line; a run in parts' ends the output.)
        end = next((i for i, line in enumerate(lines) if line.startswith("=")), len(lines))
        lines = lines[:end]
        # (Which scenarios are slowest is wall clock.)
        lines = [line for line in lines if not re.match(r"slowest:|\s+[0-9.]+s  ", line)]
        return [line for line in lines if not line.strip().startswith(("results:", "details:"))]

    assert summary(out) == summary(one)
    assert "baseline base.json: 1 regression, 0 fixed, 1 changed, 1 added, 1 removed" in out


def test_a_run_in_parts_updates_the_baseline_as_one_session_does(project, run):
    _suite(project)
    assert run("run", "--update-baseline", "--json", "one.json")[0] == 1
    one = (project.path / "reports/baseline.json").read_text()
    (project.path / "reports/baseline.json").unlink()
    status, out, _ = run("run", "--chunk-size", "4", "--update-baseline", "--json", "p.json")
    assert status == 1, out
    assert (project.path / "reports/baseline.json").read_text() == one


def test_files_named_on_the_command_line_run_once_in_their_part(project, run):
    names = [f"greet{i}" for i in range(6)]
    for name in names:
        add(project, name, PASSING)
    paths = [f"scenarios/{n}.scenario.yaml" for n in names]
    status, out, _ = run("run", *paths, "--chunk-size", "2", "--json", "parts.json", "--", "-rA")
    assert status == 0, out
    assert out.count("test session starts") == len(_parts_of_suite(project, 3))
    assert sorted(_ran(out)) == sorted(f"{p}::{n}" for p, n in zip(paths, names, strict=True))
    assert set(_ran(out).values()) == {1}
    assert len(load_results(project.path / "parts.json").scenarios) == 6


def test_shards_of_a_run_in_parts_hold_what_shards_of_one_session_hold(project, run):
    _suite(project)
    for k in (1, 2, 3):
        args = ("--shard", f"{k}/3", "-k", "not greet1")
        assert run("run", *args, "--json", f"one{k}.json")[0] in (0, 1)
        status, out, _ = run("run", *args, "--chunk-size", "5", "--json", f"parts{k}.json")
        assert status in (0, 1), out
        one = json.loads((project.path / f"one{k}.json").read_text())
        parts = json.loads((project.path / f"parts{k}.json").read_text())
        # The same plan, the same share of it, the same ids not run.
        assert parts["meta"]["shard"] == one["meta"]["shard"]
        assert [s["id"] for s in parts["scenarios"]] == [s["id"] for s in one["scenarios"]]
    assert run("run", "-k", "not greet1", "--json", "serial.json")[0] == 1
    status, _, err = run("merge", "parts1.json", "parts2.json", "parts3.json", "--json", "m.json")
    assert status == 1, err
    merged = _outside_meta_and_wall_times(project.path / "m.json")
    assert merged == _outside_meta_and_wall_times(project.path / "serial.json")


def test_maxfail_counts_the_failures_of_every_part(project, run):
    for i in range(8):
        add(project, f"wrong{i}", FAILING)
    # Each of the 4 parts has a failure to give: a count per session would let 4 through.
    assert len(_parts_of_suite(project, 4)) == 4
    status, out, _ = run("run", "--chunk-size", "2", "--json", "parts.json", "--", "--maxfail=3")
    assert status == 1
    results = load_results(project.path / "parts.json")
    assert [s.status for s in results.scenarios] == ["failed"] * 3
    assert out.count("harness summary") == 1
    # What is left of the limit is passed on from part to part, not the limit again.
    status, _, _ = run("run", "--chunk-size", "2", "--json", "six.json", "--", "--maxfail=6")
    assert status == 1
    assert len(load_results(project.path / "six.json").scenarios) == 6
    status, out, _ = run("run", "--chunk-size", "2", "--json", "first.json", "--", "-x")
    assert status == 1
    assert len(load_results(project.path / "first.json").scenarios) == 1
    assert "stopping after 1 failures" in out


def test_a_part_that_stops_a_budgeted_run_ends_it_with_the_earlier_parts_results(project, run):
    # Under a budget a part reads what the parts before it spent; the part that then
    # stops the run (-x) read them again to end it, from files already read and closed:
    # a traceback, exit 3 and no results.json.
    for i in range(6):
        add(project, f"greet{i}", PASSING)
    parts = _parts_of_suite(project, 3)
    last = max(parts)
    assert last > 1
    add(project, parts[last][0].removesuffix(".scenario.yaml"), FAILING)
    budget = ["--live", "--max-requests", "100"]
    status, out, err = run("run", *budget, "--chunk-size", "2", "--json", "r.json", "--", "-x")
    assert status == 1, out + err
    assert "Traceback" not in out + err
    assert "stopping after 1 failures" in out
    results = load_results(project.path / "r.json")
    earlier = sum(len(files) for k, files in parts.items() if k < last)
    assert [s.status for s in results.scenarios].count("passed") >= earlier
    assert [s.status for s in results.scenarios].count("failed") == 1
    assert results.budget is not None and results.budget.max_requests == 100


SKIPS = """\
import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if item.name == "{name}":
            item.add_marker(pytest.mark.skip(reason="not today"))
"""


def test_the_whole_run_is_judged_when_its_last_part_finds_nothing(project, run):
    candidates = (f"greet{i}" for i in range(100))
    names = [n for n in candidates if part_of(f"scenarios/{n}.scenario.yaml", 3) != 3][:3]
    for name in names:
        add(project, name, PASSING)
    (project.path / "conftest.py").write_text(SKIPS.format(name=names[0]))
    # Three parts, the last with no file: as in one session, a skip fails --fail-on-skip.
    status, out, _ = run("run", "--chunk-size", "1", "--fail-on-skip")
    assert status == 1, out
    assert "harness: part 3 of 3" in out
    assert run("run", "--fail-on-skip")[0] == 1
    assert run("run", "--chunk-size", "1")[0] == 0


def test_a_file_that_does_not_load_stops_the_run_as_in_one_session(project, run):
    for i in range(6):
        add(project, f"greet{i}", PASSING)
    (project.path / "scenarios/bad.scenario.yaml").write_text("name: [unclosed\n")
    status, _, _ = run("run", "--json", "one.json")
    status_parts, out, _ = run("run", "--chunk-size", "2", "--json", "parts.json")
    assert status_parts == status == 2
    assert "1 scenario file(s) did not load; reports not written" in out
    assert not (project.path / "parts.json").exists()
    assert out.count("harness summary") == 1


def test_traces_of_a_run_in_parts_are_those_of_one_session(project, run):
    _suite(project)
    assert run("run", "--otel", "one.otlp.json")[0] == 1
    assert run("run", "--chunk-size", "3", "--otel", "parts.otlp.json")[0] == 1
    one = (project.path / "one.otlp.json").read_bytes()
    assert (project.path / "parts.otlp.json").read_bytes() == one
    assert one.count(b'"traceId"') > 14


def test_a_run_in_parts_under_xdist_writes_what_one_session_writes(project, run):
    _suite(project)
    assert run("run", "--json", "one.json")[0] == 1
    status, out, _ = run("run", "--chunk-size", "7", "-n", "2", "--json", "parts.json")
    assert status == 1, out
    assert out.count("harness summary") == 1
    # The controller collects nothing: it names its part once its workers have collected.
    said = re.findall(r"harness: part (\d) of 2 of the run", out)
    assert said == [str(k) for k in sorted(_parts_of_suite(project, 2))]
    parts = _outside_meta_and_wall_times(project.path / "parts.json")
    assert parts == _outside_meta_and_wall_times(project.path / "one.json")


COUNTS_ITEMS = """\
import gc


def pytest_sessionstart(session):
    gc.collect()
    alive = sum(type(o).__name__ == "ScenarioItem" for o in gc.get_objects())
    print(f"items alive as a session starts: {alive}")
"""


def test_a_part_starts_without_the_items_of_the_parts_before_it(project):
    # Each part is a process forked from harness's, which runs no part itself: in one
    # process, the modules a session imports first kept pytest's import hook as their
    # loader, and it held the first part's session (every item) to the end of the run.
    for i in range(6):
        add(project, f"greet{i}", PASSING)
    (project.path / "conftest.py").write_text(COUNTS_ITEMS)
    result = project.run(sys.executable, "-m", "harness.cli", "run", "--chunk-size", "2")
    assert result.ret == 0, result.stdout.str()
    alive = re.findall(r"items alive as a session starts: (\d+)", result.stdout.str())
    assert alive == ["0", "0", "0", "0"]  # three parts, and the run's end


def test_a_suite_within_one_chunk_runs_as_one_session(project, run):
    add(project, "greet", PASSING)
    add(project, "broken", ERRORING)
    status, out, _ = run("run", "--chunk-size", "2")
    assert status == 1
    assert out.count("test session starts") == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--chunk-size", "-1"], "--chunk-size -1: expected a number of scenario files"),
        (["--chunk-size", "2", "--", "--lf"], "pytest's --lf works within one"),
        (["--chunk-size", "2", "--", "--junitxml=out.xml"], "pytest's --junitxml works"),
    ],
)
def test_what_a_run_in_parts_cannot_do_is_refused_in_one_line(project, run, args, message):
    add(project, "greet", PASSING)
    status, _, err = run("run", *args)
    assert status == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1


def _chunked(project, value: str) -> None:
    (project.path / "pyproject.toml").write_text(
        f"[project]\nname = 'demo'\n\n[tool.harness]\nchunk_size = {value}\n"
    )


def test_the_projects_chunk_size_splits_every_run_unless_told_otherwise(project, run):
    for i in range(5):
        add(project, f"greet{i}", PASSING)
    _chunked(project, "2")
    status, out, _ = run("run")
    assert status == 0
    assert out.count("test session starts") == len(_parts_of_suite(project, 3)) + 1
    # --chunk-size 0 (one session) and pytest's options that work within one session
    # (which a given --chunk-size refuses) run the suite as one session.
    for args in (["--chunk-size", "0"], ["--", "--lf"]):
        status, out, _ = run("run", *args)
        assert status == 0
        assert out.count("test session starts") == 1, args


@pytest.mark.parametrize("value", ["'big'", "-2", "true"])
def test_a_chunk_size_in_the_project_that_is_no_count_is_one_line(project, run, value):
    add(project, "greet", PASSING)
    _chunked(project, value)
    status, _, err = run("run")
    assert status == 2
    assert "pyproject.toml: [tool.harness] chunk_size must be a number of scenario files" in err
    assert len(err.strip().splitlines()) == 1


KILLED_IN_PART_2 = """\
import os
import signal


def pytest_sessionstart(session):
    part = session.config.getoption("harness_part", None)
    if part is not None and part.index == 2:
        os.kill(os.getpid(), signal.SIGKILL)  # as the kernel's out-of-memory killer would
"""


def test_a_part_killed_from_outside_fails_the_run_and_says_so(project, run):
    for i in range(6):
        add(project, f"greet{i}", PASSING)
    (project.path / "conftest.py").write_text(KILLED_IN_PART_2)
    status, out, err = run("run", "--chunk-size", "2")
    assert status == 3, out + err
    assert "harness run: a part of the run ended with signal 9, without its results" in err
    assert not (project.path / "reports" / "results.json").exists()


def test_a_plain_run_of_a_suite_past_the_default_size_runs_in_parts(project, run, monkeypatch):
    # Runs in parts are the default where the platform forks: a suite of more files than
    # harness's part size needs no flag (the size made small here, as 1,000 files would be).
    for i in range(5):
        add(project, f"greet{i}", PASSING)
    status, one, _ = run("run", "--json", "one.json")
    assert status == 0
    assert one.count("test session starts") == 1  # within the size: one session, as ever
    monkeypatch.setattr("harness.cli._run.DEFAULT_CHUNK_SIZE", 2)
    status, out, _ = run("run", "--json", "parts.json")
    assert status == 0
    assert out.count("test session starts") == len(_parts_of_suite(project, 3)) + 1
    same = _outside_meta_and_wall_times(project.path / "parts.json")
    assert same == _outside_meta_and_wall_times(project.path / "one.json")
    # Where parts cannot apply (pytest's options that work within one session, or
    # --chunk-size 0), the run is one session, refused by nothing.
    for args in (["--chunk-size", "0"], ["--", "--lf"], ["--", "--junitxml=out.xml"]):
        status, out, _ = run("run", *args)
        assert status == 0, args
        assert out.count("test session starts") == 1, args
    # A project turns the default off for every run with chunk_size = 0.
    _chunked(project, "0")
    status, out, _ = run("run")
    assert status == 0
    assert out.count("test session starts") == 1


SLOW_PART_1 = """\
import os
import time
from pathlib import Path


def pytest_sessionstart(session):
    part = session.config.getoption("harness_part", None)
    if part is not None and part.index == 1 and not session.config.option.collectonly:
        Path("part.pid").write_text(str(os.getpid()))
        time.sleep(60)
"""


def test_a_killed_run_in_parts_leaves_no_part_running_and_no_file(project, tmp_path):
    # kill -9 of harness: its parts went on (7 s) and left their files behind.
    import os
    import subprocess
    import time

    from test_forked import _gone, _wait

    for i in range(6):
        add(project, f"greet{i}", PASSING)
    (project.path / "conftest.py").write_text(SLOW_PART_1)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    harness = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", "--chunk-size", "2", "--shard", "1/1"],
        cwd=project.path,
        env={**os.environ, "TMPDIR": str(temporary)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        started = project.path / "part.pid"
        assert _wait(lambda: started.exists() and started.read_text(), 120), "part 1 never started"
        part = int(started.read_text())
        harness.kill()
        harness.wait(30)
        assert _wait(lambda: _gone(part)), "a part outlived its killed run"
    finally:
        harness.kill()
    time.sleep(0.1)
    assert list(temporary.iterdir()) == []


def test_shards_of_a_run_in_parts_under_xdist_read_their_ids(project, run):
    # Every xdist worker of a part reads the shard's ids by the path it is given.
    _suite(project)
    assert run("run", "--shard", "1/2", "--json", "one.json")[0] in (0, 1)
    args = ("--shard", "1/2", "--chunk-size", "5", "-n", "2", "--json", "parts.json")
    status, out, err = run("run", *args)
    assert status in (0, 1), out + err
    one = json.loads((project.path / "one.json").read_text())
    parts = json.loads((project.path / "parts.json").read_text())
    assert [s["id"] for s in parts["scenarios"]] == [s["id"] for s in one["scenarios"]]
