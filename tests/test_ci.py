"""`.ci/run`: what CI runs on a clean clone. A suite that collects nothing must not pass, nor
one that passes with a type error or a lint finding."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tree(tmp_path: Path, test_text: str | None) -> Path:
    """A copy of .ci/run in a project whose tests/ holds ``test_text`` (or nothing)."""
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "empty"\nversion = "0"\n\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\naddopts = "-p no:cacheprovider"\n\n'
        '[tool.mypy]\nfiles = ["tests"]\n'
    )
    (tmp_path / "tests").mkdir()
    if test_text is not None:
        (tmp_path / "tests" / "test_one.py").write_text(test_text)
    # The venv .ci/run makes is given (HARNESS_CI_VENV): its `python -m pip install ...`
    # does nothing here; everything else is the real thing.
    venv = tmp_path / "venv"
    bin_dir = venv / "bin"
    bin_dir.mkdir(parents=True)
    shim = bin_dir / "python"
    shim.write_text(
        f'#!/bin/sh\nif [ "$1" = "-m" ] && [ "$2" = "pip" ]; then exit 0; fi\n'
        f'exec {sys.executable} "$@"\n'
    )
    shim.chmod(0o755)
    return venv


def _ci(tmp_path: Path, venv: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HARNESS_CI_VENV": str(venv)}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        ["bash", str(tmp_path / ".ci" / "run")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,  # pytest -n auto, ruff and mypy on a busy two-core machine
    )


def test_ci_fails_when_no_test_is_collected(tmp_path):
    venv = _tree(tmp_path, None)
    result = _ci(tmp_path, venv)
    assert result.returncode == 5, result.stdout + result.stderr
    assert "no tests ran" in result.stdout


def test_ci_passes_when_the_tests_pass(tmp_path):
    venv = _tree(tmp_path, "def test_ok():\n    assert True\n")
    result = _ci(tmp_path, venv)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_ci_fails_when_mypy_finds_a_type_error_though_the_tests_pass(tmp_path):
    venv = _tree(tmp_path, 'def test_ok() -> None:\n    count: int = "one"\n    assert count\n')
    result = _ci(tmp_path, venv)
    assert "1 passed" in result.stdout
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'Incompatible types in assignment (expression has type "str"' in result.stdout


def test_ci_fails_when_ruff_finds_a_lint_error_though_the_tests_pass(tmp_path):
    venv = _tree(tmp_path, "import os\n\n\ndef test_ok():\n    assert True\n")
    result = _ci(tmp_path, venv)
    assert "1 passed" in result.stdout
    assert result.returncode == 1, result.stdout + result.stderr
    assert "F401" in result.stdout  # `os` imported but unused


def test_ci_fails_when_a_file_is_not_formatted(tmp_path):
    venv = _tree(tmp_path, "def test_ok():\n    assert 'single quotes'\n")
    result = _ci(tmp_path, venv)
    assert "1 passed" in result.stdout
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 file would be reformatted" in result.stdout


def test_ci_needs_no_python_on_path_but_python3(tmp_path):
    # A stock Debian has python3 and no `python`: .ci/run uses python3 and its own venv.
    venv = _tree(tmp_path, "def test_ok():\n    assert True\n")
    only = tmp_path / "only-python3"
    only.mkdir()
    (only / "python3").symlink_to(sys.executable)
    path = f"{only}:/usr/bin:/bin"
    assert shutil.which("python", path=path) is None
    env = {**os.environ, "HARNESS_CI_VENV": str(venv), "PATH": path}
    env.pop("PYTEST_ADDOPTS", None)
    result = subprocess.run(
        ["bash", str(tmp_path / ".ci" / "run")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,  # pytest -n auto, ruff and mypy on a busy two-core machine
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def _suite(tmp_path: Path) -> Path:
    """A project with harness's tests/conftest.py and one test saying where it ran."""
    (tmp_path / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "conftest.py", tmp_path / "tests" / "conftest.py")
    (tmp_path / "tests" / "test_one.py").write_text(
        "import os\n\n\ndef test_where():\n"
        "    print('ran in', os.environ.get('PYTEST_XDIST_WORKER', 'the main process'))\n"
    )
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\naddopts = "-p no:cacheprovider"\n\n'
        "[tool.harness]\nplugins = []\n"
    )
    return tmp_path


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess:
    # Not this run's xdist worker's variables: the inner test reads its own.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTEST_XDIST_AUTO_NUM_WORKERS"] = "2"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-s", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_readmes_pytest_runs_the_suite_on_every_core(tmp_path):
    """A plain `pytest` is `-n auto` (the README's command, and CI's); a file named, `-n 0`
    and `-p no:xdist` run in one process."""
    project = _suite(tmp_path)
    whole = _pytest(project)
    assert whole.returncode == 0, whole.stdout + whole.stderr
    assert "2 workers [1 item]" in whole.stdout
    for args in (["tests/test_one.py"], ["-n", "0"], ["-p", "no:xdist"]):
        one = _pytest(project, *args)
        assert one.returncode == 0, one.stdout + one.stderr
        assert "ran in the main process" in one.stdout, args
