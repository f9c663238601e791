"""A live suite you can trust: `repeat: {runs: N, min_pass_rate: R}` against `harness
serve` standing in for the API, with a server that gives a wrong answer to a chosen set of
runs. The scenario passes on its pass rate, the baseline flags a significant drop (a
one-sided Fisher exact test) and shows a drop within noise as such, and the runs that
disagree name their first divergence.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

# The reference for harness's own Fisher test (scipy stays a test dependency only). numpy
# loads once per process, and pytester drops the modules a test imported when the test
# ends: imported here, before any test, scipy.stats stays loaded for every test.
import scipy.stats
from scenario_texts import SESSION_TESTS

from harness import cli
from harness._repeats import wilson_interval
from harness._results import load_results
from harness.llm._script import parse_step
from harness.report._passrates import fisher_less
from harness.serve import create_app, running_app

pytestmark = SESSION_TESTS

RUNS = 10

SCENARIO = """\
name: weather
input: What's the weather in SF?
llm: {{provider: openai, model: gpt-4o-mini, base_url: "{url}"}}
repeat: {{runs: {runs}, min_pass_rate: {rate}}}
expect:
  final: {{contains: 72F}}
"""

RIGHT = "It is 72F in SF."
WRONG = "It is 60F in SF."


class FailingShare:
    """ASGI app answering the model requests numbered in ``wrong`` (1-based, in the order
    they came) from a script that gives the wrong temperature, the others rightly."""

    def __init__(self, wrong: set[int]) -> None:
        self.right = create_app([parse_step(0, {"content": RIGHT})])
        self.wrong_app = create_app([parse_step(0, {"content": WRONG})])
        self.wrong = wrong
        self.requests = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].endswith("/chat/completions"):
            self.requests += 1
            app = self.wrong_app if self.requests in self.wrong else self.right
            await app(scope, receive, send)
            return
        await self.right(scope, receive, send)


@pytest.fixture
def project(pytester, monkeypatch):
    """An empty project, as the current directory."""
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (pytester.path / "scenarios").mkdir()
    monkeypatch.chdir(pytester.path)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return pytester


def _live_run(project, capsys, wrong: set[int], *args: str, rate: float = 0.5) -> tuple[int, str]:
    """One live run of the scenario, RUNS times; the runs numbered in ``wrong`` fail."""
    server = FailingShare(wrong)
    with running_app(server) as url:
        text = SCENARIO.format(url=url, runs=RUNS, rate=rate)
        (project.path / "scenarios" / "weather.scenario.yaml").write_text(text)
        status = cli.main(["run", "--live", *args])
    assert server.requests == RUNS
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def _baseline(project, capsys, wrong: set[int]) -> None:
    status, out = _live_run(project, capsys, wrong, "--update-baseline")
    assert status == 0, out
    assert (project.path / "reports/baseline.json").is_file()


def test_a_live_scenario_passes_on_its_pass_rate_and_names_where_its_runs_part(project, capsys):
    status, out = _live_run(project, capsys, {3, 7}, rate=0.7)
    assert status == 0, out  # 8 of 10 runs passed: at least 70%
    results = load_results(project.path / "reports/results.json")
    assert [s.status for s in results.scenarios].count("failed") == 2
    repeats = results.scenarios[0].repeats
    assert (repeats.runs, repeats.passed, repeats.min_pass_rate, repeats.passes) == (
        10,
        8,
        0.7,
        True,
    )
    assert repeats.live
    assert repeats.interval == wilson_interval(8, 10) == [0.490162, 0.943318]
    # The runs took the same steps and gave different answers.
    divergence = repeats.divergence
    assert divergence.at == "the answer"
    assert [(v.count, v.runs) for v in divergence.variants] == [
        (8, [1, 2, 4, 5, 6, 8, 9, 10]),
        (2, [3, 7]),
    ]
    assert divergence.variants[1].step == f"the answer: {WRONG!r}"
    assert results.failing() == []
    assert (
        "  flaky: scenarios/weather.scenario.yaml::weather: 8/10 runs passed "
        "(80%, 95% CI 49%-94%); min_pass_rate 70%: passes"
    ) in out
    assert "    first divergence at step 3 (the answer):" in out
    assert f"      2 run(s) [3, 7]: the answer: {WRONG!r}" in out
    html = (project.path / "reports/report.html").read_text()
    assert "<li>first divergence at step 3 (the answer):</li>" in html
    assert "<td>70%: passes</td>" in html and '<td class="num">49%-94%</td>' in html


def test_too_few_passing_runs_fail_the_scenario(project, capsys):
    status, out = _live_run(project, capsys, {1, 2, 5, 8}, rate=0.7)
    assert status == 1, out  # 6 of 10: below 70%
    results = load_results(project.path / "reports/results.json")
    assert (
        results.failing()
        == results.below_min_pass_rate()
        == ["scenarios/weather.scenario.yaml::weather"]
    )
    assert "min_pass_rate 70%: FAILS" in out
    assert "1 below its min_pass_rate" in out


def test_a_drop_within_noise_is_shown_as_such_and_is_no_regression(project, capsys):
    _baseline(project, capsys, {3, 7})  # 8/10
    status, out = _live_run(project, capsys, {1, 4, 6, 9}, "--fail-on-change")  # 6/10
    assert status == 0, out
    diff = load_results(project.path / "reports/results.json").baseline
    assert diff.counts()["regressions"] == 0
    [rate] = diff.pass_rates
    assert (rate.verdict, rate.p_value) == ("within_noise", 0.314241)
    assert (
        "  within noise: scenarios/weather.scenario.yaml::weather: pass rate fell from 80% "
        "(8/10 runs) to 60% (6/10); a one-sided Fisher exact test gives p = 0.31: a drop "
        "this large comes by chance 31% of the time when nothing changed, more than 0.05: "
        "within noise, not a regression"
    ) in out
    assert not diff.changed  # the runs are not compared one by one
    html = (project.path / "reports/report.html").read_text()
    assert "more than 0.05: within noise, not a regression</li>" in html


def test_a_significant_drop_of_a_live_pass_rate_is_a_regression(project, capsys):
    _baseline(project, capsys, {3, 7})  # 8/10
    wrong = {1, 2, 3, 4, 5, 6, 8, 9}  # 2/10
    status, out = _live_run(project, capsys, wrong, "--fail-on-change", rate=0.1)
    assert status == 1, out
    diff = load_results(project.path / "reports/results.json").baseline
    assert diff.counts()["regressions"] == 1
    [rate] = diff.rate_regressions
    assert rate.p_value == 0.011507
    assert "regression: scenarios/weather.scenario.yaml::weather: pass rate fell" in out
    assert "p = 0.012" in out and "a significant drop, a regression" in out
    # The report's "1 regression" chip leads to the pass rate that fell (there is no
    # run-by-run regression to show).
    html = (project.path / "reports/report.html").read_text()
    [chip] = re.findall(r'<a class="chip cat-regressions" href="#([\w-]+)"', html)
    assert chip == "diff-pass-rates"
    assert f'id="{chip}"' in html


def _tables():
    """Every 2x2 table of runs up to 6 a side, and larger ones like long live runs."""
    small = range(7)
    for a in small:
        for b in small:
            for c in small:
                for d in small:
                    yield a, b, c, d
    yield from [(80, 20, 95, 5), (150, 50, 190, 10), (0, 200, 200, 0), (500, 500, 520, 480)]


def test_the_fisher_test_gives_scipys_p_values():
    """harness sums the hypergeometric tail itself (no scipy in a base install): its p-value
    of a drop is scipy.stats.fisher_exact's, table by table."""
    for a, b, c, d in _tables():
        expected = scipy.stats.fisher_exact([[a, b], [c, d]], alternative="less").pvalue
        assert fisher_less(a, b, c, d) == pytest.approx(expected, rel=1e-9, abs=1e-12), (a, b, c, d)
