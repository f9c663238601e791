"""The committed reports/baseline.json describes scenarios/ as they run today."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.report import diff_results, load_results
from harness.results import build_results
from harness.scenario import run_scenario

# The example suite uses this repository's own plugins.
pytestmark = pytest.mark.repo_plugins

ROOT = Path(__file__).resolve().parent.parent


def test_committed_baseline_matches_the_example_suite():
    baseline = load_results(ROOT / "reports" / "baseline.json", what="baseline")
    current = build_results(
        [run_scenario(p) for p in sorted((ROOT / "scenarios").rglob("*.scenario.yaml"))]
    )
    diff = diff_results(baseline, current)
    assert diff.is_empty, (
        f"{diff.counts()}: after an intended change run "
        "`harness run scenarios/ --update-baseline` and commit reports/baseline.json"
    )
