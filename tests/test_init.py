"""`harness init [DIR]`: a new project that passes `harness validate` and `harness run` at
once, that pip installs (its pyproject names its package), whose README and workflow install
harness the way the running one was installed, with a .gitignore; it never overwrites a
file. (scripts/walkthrough.py does the same from a fresh machine: a built wheel in a fresh
virtual environment, the workflow's steps on a fresh clone.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from scenario_texts import SESSION_TESTS

from harness import cli
from harness._results import load_results
from harness.cli._requirement import Installed, from_direct_url

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
        ".gitignore",
        "README.md",
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


# Offline: the build backend the project names, as installed here (the test extra's).
_PIP_WHEEL = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation"]


def test_pip_builds_the_project_with_its_package_alone(folder, tmp_path):
    """setuptools found two top-level packages (the agent's and scenarios/) and refused to
    build: the pyproject names the package, and the wheel holds it and nothing else."""
    assert cli.main(["init", "shop"]) == 0
    out = tmp_path / "built"
    done = subprocess.run(
        [*_PIP_WHEEL, "-w", str(out), str(folder / "shop")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    [wheel] = out.glob("shop-0.1.0-*.whl")
    with zipfile.ZipFile(wheel) as built:
        tops = {name.split("/")[0] for name in built.namelist()}
    assert tops == {"shop", "shop-0.1.0.dist-info"}


def _steps(project: Path) -> list[str]:
    workflow = yaml.safe_load((project / ".github/workflows/harness.yml").read_text())
    [job] = workflow["jobs"].values()
    return [step["run"].replace("\n", " ").strip() for step in job["steps"] if "run" in step]


def _readme_commands(project: Path) -> list[str]:
    readme = (project / "README.md").read_text()
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", readme, re.S):
        commands += [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]
    return commands


def test_the_workflow_installs_harness_as_the_readme_says_and_its_run_passes(
    folder, monkeypatch, capsys
):
    assert cli.main(["init", "shop"]) == 0
    project = folder / "shop"
    installs = [step for step in _steps(project) if step.startswith("pip install")]
    readme = _readme_commands(project)
    # The same two installs, in the same order: harness first, then the project.
    assert installs == [c for c in readme if c.startswith("pip install")]
    assert installs[-1] == "pip install -e ."
    # The run step, as the runner's shell runs it (the baseline is not committed yet).
    [step] = [s for s in _steps(project) if s.startswith("harness run")]
    monkeypatch.chdir(project)
    done = subprocess.run(
        ["bash", "-c", step.replace("harness run", "harness_run", 1)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PATH": _harness_on_path(project)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        (project / "reports/summary.md")
        .read_text()
        .startswith("## harness: 1 scenario run(s), all passed")
    )


def _harness_on_path(project: Path) -> str:
    """A PATH whose `harness_run` is this harness's `harness run` (this checkout's code)."""
    shim = project.parent / "bin"
    shim.mkdir(exist_ok=True)
    script = shim / "harness_run"
    root = Path(__file__).resolve().parents[1]
    script.write_text(
        f'#!/bin/sh\nPYTHONPATH={root} exec {sys.executable} -m harness.cli run "$@"\n'
    )
    script.chmod(0o755)
    return f"{shim}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.mark.parametrize(
    ("direct", "requirement"),
    [
        (
            {
                "url": "https://github.com/o/harness.git",
                "vcs_info": {"vcs": "git", "commit_id": "abc123"},
            },
            "loop-harness @ git+https://github.com/o/harness.git@abc123",
        ),
        (
            {"url": "https://example.org/loop_harness-0.1.0-py3-none-any.whl", "archive_info": {}},
            "loop-harness @ https://example.org/loop_harness-0.1.0-py3-none-any.whl",
        ),
    ],
)
def test_a_project_installs_harness_from_where_the_running_one_came(direct, requirement):
    assert from_direct_url(direct) == Installed(requirement)


def test_a_harness_installed_from_a_wheel_puts_the_wheel_in_the_project(tmp_path):
    wheel = tmp_path / "loop_harness-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"a wheel")
    installed = from_direct_url({"url": wheel.as_uri(), "archive_info": {}})
    assert installed == Installed(
        "./wheels/loop_harness-0.1.0-py3-none-any.whl",
        copies={wheel: "wheels/loop_harness-0.1.0-py3-none-any.whl"},
    )
    # From a folder, nothing a runner can reach: said.
    folder = from_direct_url({"url": tmp_path.as_uri(), "dir_info": {"editable": True}})
    assert folder.note is not None and "a CI runner cannot reach" in folder.note


def test_the_gitignore_keeps_the_baseline_and_leaves_out_the_rest_of_reports(
    folder, capsys, monkeypatch
):
    assert cli.main(["init", "shop"]) == 0
    project = folder / "shop"
    monkeypatch.chdir(project)
    assert cli.main(["run", "--update-baseline"]) == 0, capsys.readouterr().out
    (project / "reports" / "baseline.json.lock").write_text("")
    (project / "cassettes").mkdir()
    (project / "cassettes" / ".weather.yaml.1.abc.harness-tmp").write_text("")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    listed = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "reports/baseline.json\n" in listed
    for made in ("report.html", "results.json", "baseline.json.lock", "harness-tmp"):
        assert made not in listed


def test_init_keeps_a_readme_and_gitignore_of_your_own(folder, capsys):
    (folder / "README.md").write_text("# mine\n")
    (folder / ".gitignore").write_text("*.log\n")
    assert cli.main(["init"]) == 0
    out = capsys.readouterr().out
    assert "kept README.md: yours" in out and "kept .gitignore: yours" in out
    assert (folder / "README.md").read_text() == "# mine\n"
    assert (folder / "pyproject.toml").is_file()
