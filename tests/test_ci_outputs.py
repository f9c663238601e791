"""What a team reads in CI: the terminal's baseline diff with the values that changed,
``--markdown FILE`` (and ``$GITHUB_STEP_SUMMARY``) for a pull-request comment or a job
summary, checked against a committed example, skipped scenarios with their reasons and
``--fail-on-skip``, and a run that executed nothing leaving the last reports alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scenario_texts import PASSING, SESSION_TESTS

from harness import cli
from harness._results import load_results

pytestmark = SESSION_TESTS

EXAMPLE = Path(__file__).parent / "fixtures" / "ci" / "summary.md"

# Skips the scenarios whose name says staging, as a team's conftest.py might.
CONFTEST = """\
import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if "staging" in item.name:
            item.add_marker(pytest.mark.skip(reason="needs the staging API"))
"""


@pytest.fixture
def project(pytester, monkeypatch):
    """A project with three passing scenarios and one the conftest skips, as the cwd."""
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    monkeypatch.chdir(pytester.path)
    monkeypatch.syspath_prepend(str(pytester.path))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    for name in ("greet", "route", "steady", "staging"):
        _add(pytester, name, PASSING.replace("name: greet", f"name: {name}"))
    (pytester.path / "conftest.py").write_text(CONFTEST)
    return pytester


def _add(project, name: str, text: str, suffix: str = ".scenario.yaml") -> None:
    path = project.path / "scenarios" / f"{name}{suffix}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _run(capsys, *args: str) -> tuple[int, str]:
    status = cli.main(["run", *args])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def _change_the_suite(project) -> None:
    """An answer that changed words, a tool call with other arguments, a regression."""
    greet = PASSING.replace("It is 72F in SF.", "It is 72F and sunny in SF today.")
    _add(project, "greet", greet)
    route = PASSING.replace("name: greet", "name: route").replace("city: SF", "city: LA")
    _add(project, "route", route.replace("It is 72F in SF.", "It is 72F in LA."))
    steady = PASSING.replace("name: greet", "name: steady")
    _add(project, "steady", steady.replace("contains: 72F", "contains: rain"))


def test_the_terminal_diff_shows_what_changed_not_only_which_fields(project, capsys):
    assert _run(capsys, "--update-baseline")[0] == 0
    _change_the_suite(project)
    status, out = _run(capsys)
    assert status == 1, out  # steady regressed
    lines = out.splitlines()
    start = lines.index(
        "baseline reports/baseline.json: 1 regression, 0 fixed, 3 changed, 0 added, 0 removed"
    )
    assert lines[start + 1 : start + 10] == [
        "  regression: scenarios/steady.scenario.yaml::steady (passed -> failed; "
        "unmet: final.contains)",
        "  changed: scenarios/greet.scenario.yaml::greet",
        "    answer: It is 72F {+and sunny+} in [-SF.-]{+SF today.+}",
        "  changed: scenarios/route.scenario.yaml::route",
        '    trajectory: plan 1: get_weather {"city":"SF"} -> get_weather {"city":"LA"}',
        "    answer: It is 72F in [-SF.-]{+LA.+}",
        "  changed: scenarios/steady.scenario.yaml::steady",
        "    status: passed -> failed",
        "  details: reports/report.html",
    ]


def test_markdown_summary_matches_the_committed_example(project, capsys, monkeypatch):
    assert _run(capsys, "--update-baseline")[0] == 0
    _change_the_suite(project)
    step_summary = project.path / "step-summary.md"
    step_summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    status, out = _run(capsys, "--markdown", "reports/summary.md")
    assert status == 1, out
    written = (project.path / "reports/summary.md").read_text()
    assert written == EXAMPLE.read_text(), (
        f"the Markdown summary changed: if intended, copy it to {EXAMPLE}:\n{written}"
    )
    # GitHub's job summary gets the same text, after what earlier steps wrote.
    assert step_summary.read_text() == "earlier step\n" + written
    assert "results: reports/results.json, reports/report.html, reports/summary.md" in out


def test_skipped_scenarios_are_named_with_their_reason_and_fail_on_skip_fails(project, capsys):
    status, out = _run(capsys)
    assert status == 0, out
    assert "skipped: 1 (not run, so not in results.json)" in out
    assert "  scenarios/staging.scenario.yaml::staging: needs the staging API" in out
    results = load_results(project.path / "reports/results.json")
    assert [(s.id, s.reason) for s in results.skipped] == [
        ("scenarios/staging.scenario.yaml::staging", "needs the staging API")
    ]
    assert "needs the staging API" in (project.path / "reports/report.html").read_text()
    status, out = _run(capsys, "--fail-on-skip")
    assert status == 1, out


def test_a_run_where_everything_was_skipped_writes_nothing_and_fails_on_skip(project, capsys):
    assert _run(capsys)[0] == 0
    before = (project.path / "reports/results.json").read_text()
    status, out = _run(capsys, "-k", "staging", "--fail-on-skip")
    assert status == 1, out
    assert "no scenario ran: nothing was written" in out
    assert (project.path / "reports/results.json").read_text() == before


def test_collect_only_leaves_the_last_results_and_report_as_they_were(project, capsys):
    assert _run(capsys)[0] == 0
    results = project.path / "reports/results.json"
    report = project.path / "reports/report.html"
    before = (results.read_text(), report.read_text())
    status, out = _run(capsys, "--", "--co")
    assert status == 0, out
    assert (results.read_text(), report.read_text()) == before


def test_a_scenario_yml_file_runs_in_a_folder_and_when_named(project, capsys):
    _add(project, "short", PASSING.replace("name: greet", "name: short"), suffix=".scenario.yml")
    status, out = _run(capsys, "-k", "short")
    assert status == 0, out
    ids = [s.id for s in load_results(project.path / "reports/results.json").scenarios]
    assert ids == ["scenarios/short.scenario.yml::short"]
    status, out = _run(capsys, "scenarios/short.scenario.yml")
    assert status == 0, out
    assert cli.main(["validate", "scenarios/short.scenario.yml"]) == 0


def test_a_changed_error_shows_which_of_its_keys_changed_and_how():
    from harness._actions import FinalResponse, RunError
    from harness._results import ScenarioResult, build_results
    from harness.report._changes import change_details
    from harness.report._diff import diff_results

    def entry(message: str) -> ScenarioResult:
        error = RunError(type="max_iterations", message=message, max_iterations=3)
        return ScenarioResult(
            id="scenarios/a.scenario.yaml::a",
            name="a",
            file="scenarios/a.scenario.yaml",
            status="passed",
            termination="max_iterations",
            final=FinalResponse(error=error),
        )

    long = "Max iterations reached (3): under planner react a tool round takes 1 iteration"
    diff = diff_results(
        build_results([entry("Max iterations reached")]), build_results([entry(long)])
    )
    [change] = diff.changed
    # Not two values cut to the same first 50 characters: the key, and the words it gained.
    assert change_details(change) == [
        "error.message: Max iterations reached {+(3): under planner react a tool round takes 1 "
        "iteration+}"
    ]
