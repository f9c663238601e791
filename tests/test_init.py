"""`harness init [DIR]`: a new project that passes `harness validate` and `harness run` at
once, and never overwrites a file."""

from __future__ import annotations

import pytest
import yaml
from scenario_texts import SESSION_TESTS

from harness import cli
from harness.results import load_results

pytestmark = SESSION_TESTS


@pytest.fixture
def folder(pytester, monkeypatch):
    """An empty folder, as the current directory."""
    monkeypatch.chdir(pytester.path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return pytester.path


def test_init_makes_a_project_that_validates_and_runs(folder, capsys, monkeypatch):
    assert cli.main(["init", "shop"]) == 0
    out = capsys.readouterr().out
    assert "next: cd shop && harness run" in out
    project = folder / "shop"
    assert sorted(p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file()) == [
        ".github/workflows/harness.yml",
        "pyproject.toml",
        "scenarios/weather.scenario.yaml",
        "shop/__init__.py",
        "shop/tools.py",
    ]
    workflow = yaml.safe_load((project / ".github/workflows/harness.yml").read_text())
    assert "scenarios" in workflow["jobs"]
    monkeypatch.chdir(project)
    assert cli.main(["validate", "scenarios"]) == 0
    assert cli.main(["run"]) == 0, capsys.readouterr().out
    [weather] = load_results(project / "reports/results.json").scenarios
    assert (weather.status, [c.name for c in weather.tool_calls]) == ("passed", ["get_weather"])
    assert weather.tool_calls[0].result == "72F in SF"  # the plugin's tool ran


def test_init_writes_nothing_over_an_existing_project(folder, capsys):
    (folder / "pyproject.toml").write_text("[project]\nname = 'mine'\n")
    assert cli.main(["init"]) == 2
    err = capsys.readouterr().err
    assert "pyproject.toml already there; nothing written" in err
    assert (folder / "pyproject.toml").read_text() == "[project]\nname = 'mine'\n"
    assert not (folder / "scenarios").exists()
