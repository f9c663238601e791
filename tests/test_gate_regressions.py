"""Pass-rate regressions across a suite, corrected for the number of scenarios compared
(``--regression-correction holm|bh|none``, Holm by default; docs/gate.md): stochastic
scripted scenarios stand in for a live model, and a significant drop is a regression
wherever a regression is read (results.json's ``baseline.regressions``, the summary, the
report, ``--fail-on-change``).
"""

from __future__ import annotations

import json

import pytest

# numpy loads once per process, and pytester drops the modules a test imported when the
# test ends: imported here, before any test, scipy.stats stays loaded for every test
# (while the Fisher test still comes from scipy).
import scipy.stats  # noqa: F401
from scenario_texts import SESSION_TESTS

from harness._results import ScenarioResult
from harness.report._passrates import adjust, compare_pass_rates

pytestmark = SESSION_TESTS

RUNS = 30
RATES = (0.9, 0.8, 0.7, 0.6, 0.5)

SCENARIO = """\
name: s{n}
input: What's the weather in SF?
repeat: {{runs: {runs}, min_pass_rate: 0.1}}
llm:
  script:
    - one_of:
        - {{weight: {good}, content: It is 72F in SF.}}
        - {{weight: {bad}, content: It is 60F in SF.}}
expect:
  final: {{contains: 72F}}
"""


@pytest.fixture
def project(cli_project):
    """An empty project as the current directory; ``project.run_harness(*args)``."""
    return cli_project


def _suite(project, count: int, rate_of=lambda n: RATES[n % len(RATES)]) -> None:
    for n in range(count):
        rate = rate_of(n)
        good, bad = round(rate * 100), round((1 - rate) * 100)
        text = SCENARIO.format(n=n, runs=RUNS, good=good, bad=bad)
        (project.path / "scenarios" / f"s{n}.scenario.yaml").write_text(text)


def _baseline_section(project) -> dict:
    return json.loads((project.path / "reports/results.json").read_text())["baseline"]


def test_an_unchanged_suite_gives_no_regression_and_a_real_drop_is_the_one(project):
    _suite(project, 20)
    status, out = project.run_harness("run", "--seed", "1", "--update-baseline", "--", "-q")
    assert (project.path / "reports/baseline.json").is_file(), out
    # The same agents, other draws: their pass rates move by chance only.
    status, out = project.run_harness("run", "--seed", "2", "--fail-on-change", "--", "-q")
    assert status == 0, out
    diff = _baseline_section(project)
    assert diff["regressions"] == []
    assert diff["rate_test"] == {
        "test": "fisher_exact_one_sided",
        "correction": "holm",
        "compared": 20,
        "significance": 0.05,
    }
    assert "0 regressions" in out
    assert "20 scenario(s) compared by pass rate: one-sided Fisher exact tests, p-values " in out
    assert "adjusted by Holm's correction for the 20 compared (--regression-correction holm)" in out
    # One agent got worse: 80% to 20%.
    _suite(project, 20, lambda n: 0.2 if n == 1 else RATES[n % len(RATES)])
    status, out = project.run_harness("run", "--seed", "3", "--fail-on-change", "--", "-q")
    assert status == 1, out
    diff = _baseline_section(project)
    [regression] = diff["regressions"]
    assert regression["id"] == "scenarios/s1.scenario.yaml::s1"
    assert regression["verdict"] == "regression"
    # The smallest p-value of the 20: Holm multiplies it by 20.
    assert regression["adjusted_p_value"] == round(min(1, 20 * regression["p_value"]), 6)
    assert regression in diff["pass_rates"]  # the details, where every moved rate is
    assert "1 regression," in out
    assert "regression: scenarios/s1.scenario.yaml::s1: pass rate fell" in out
    assert "adjusted for the 20 scenarios compared (Holm's correction), p = " in out
    assert "--fail-on-change: 1 regression(s)" in out
    html = (project.path / "reports/report.html").read_text()
    assert "adjusted by Holm&#39;s correction for the 20 compared" in html


def _results(key: str, passed: int, runs: int) -> list[ScenarioResult]:
    return [
        ScenarioResult(
            id=f"{key}[{k}]",
            name=key,
            file="f",
            status="passed" if k <= passed else "failed",
            run=k,
            termination="completed",
        )
        for k in range(1, runs + 1)
    ]


def test_the_correction_decides_what_is_a_regression():
    # One drop that alone is significant (p = 0.012), among nine unchanged scenarios.
    groups = {"drop": (_results("drop", 8, 10), _results("drop", 2, 10))}
    groups |= {f"same{i}": (_results("s", 5, 10), _results("s", 5, 10)) for i in range(9)}
    verdicts = {}
    for correction in ("none", "holm", "bh"):
        changes, unchanged, test = compare_pass_rates(groups, correction)
        [change] = changes
        verdicts[correction] = (change.verdict, change.p_value, change.adjusted_p_value)
        assert (unchanged, test.compared, test.correction) == (9, 10, correction)
    assert verdicts["none"] == ("regression", 0.011507, None)  # nothing adjusted
    # Ten scenarios compared: 0.0115 x 10 is more than 0.05.
    assert verdicts["holm"] == ("within_noise", 0.011507, 0.11507)
    assert verdicts["bh"] == ("within_noise", 0.011507, 0.11507)


def test_holm_and_benjamini_hochberg_adjusted_p_values():
    p = [0.01, 0.04, 0.03, 0.005]
    assert adjust(p, "holm") == [0.03, 0.06, 0.06, 0.02]
    assert adjust(p, "bh") == [0.02, 0.04, 0.04, 0.02]
    assert adjust(p, "none") == p
    assert adjust([0.2], "holm") == [0.2]


def test_a_bad_correction_is_refused_in_one_line(project):
    status, out = project.run_harness("run", "--regression-correction", "bonferroni")
    assert status == 2
    assert "--regression-correction" in out and "holm" in out
