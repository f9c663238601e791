"""The committed reports/baseline.json describes scenarios/ as they run today."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness._results import build_results
from harness.report import diff_results, load_results
from harness.scenario import expand_matrix, load_scenario, run_scenario

# The example suite uses this repository's own plugins.
pytestmark = pytest.mark.repo_plugins

ROOT = Path(__file__).resolve().parent.parent


def test_committed_baseline_matches_the_example_suite():
    baseline = load_results(ROOT / "reports" / "baseline.json", what="baseline")
    # A matrix scenario runs as its combinations, each a scenario of its own; one whose
    # framework is not installed is skipped and not in results.json, as `harness run` does.
    files = sorted((ROOT / "scenarios").rglob("*.scenario.yaml"))
    scenarios = [each for path in files for each in expand_matrix(load_scenario(path))]
    current = build_results([run_scenario(s) for s in scenarios if s.skip_reason is None])
    diff = diff_results(baseline, current)
    assert diff.is_empty, (
        f"{diff.counts()}: after an intended change run "
        "`harness run scenarios/ --update-baseline` and commit reports/baseline.json"
    )


def test_a_version_1_results_file_still_loads_with_its_agent_settings():
    # Version 1 kept planner, stagnation_window and parallel_tools flat in each entry (this
    # repository's baseline was such a file): they are read into `agent`, the limit of a
    # run that reached it from its error, and the rest of the run's settings default.
    old = load_results(ROOT / "tests" / "fixtures" / "results-v1.json")
    by_name = {s.name: s for s in old.scenarios}
    assert by_name["max-iterations"].agent.planner == "react"
    assert by_name["max-iterations"].agent.max_iterations == 3
    assert by_name["sequential-tools"].agent.parallel_tools is False
    assert by_name["stagnation-same-call"].agent.stagnation_window == 3
    assert by_name["stagnation-same-call"].agent.planner == "agentbuilder"
    # Compared with today's run of the same files: nothing changed.
    new = build_results([run_scenario(ROOT / s.file) for s in old.scenarios])
    diff = diff_results(old, new)
    assert diff.compared == 3
    # But for the iteration limit's message, which says more since (docs/loop.md).
    [change] = diff.changed
    assert change.name == "max-iterations" and change.fields == ["final"]
    assert change.final.new["error"]["message"].startswith("Max iterations reached (3): ")
    assert not (diff.regressions or diff.fixed or diff.added or diff.removed)
    assert [s.agent for s in old.scenarios] == [s.agent for s in new.scenarios]
