"""`.ci/run`: what CI runs on a clean clone. A suite that collects nothing must not pass."""

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
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\naddopts = "-p no:cacheprovider"\n'
    )
    (tmp_path / "tests").mkdir()
    if test_text is not None:
        (tmp_path / "tests" / "test_one.py").write_text(test_text)
    # `python -m pip install ...` does nothing here; everything else is the real thing.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "python"
    shim.write_text(
        f'#!/bin/sh\nif [ "$1" = "-m" ] && [ "$2" = "pip" ]; then exit 0; fi\n'
        f'exec {sys.executable} "$@"\n'
    )
    shim.chmod(0o755)
    return bin_dir


def _ci(tmp_path: Path, bin_dir: Path) -> subprocess.CompletedProcess:
    scripts = Path(sys.executable).parent  # where this environment's pytest lives
    env = {**os.environ, "PATH": f"{bin_dir}:{scripts}:{os.environ.get('PATH', '')}"}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        ["bash", str(tmp_path / ".ci" / "run")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_ci_fails_when_no_test_is_collected(tmp_path):
    bin_dir = _tree(tmp_path, None)
    result = _ci(tmp_path, bin_dir)
    assert result.returncode == 5, result.stdout + result.stderr
    assert "no tests ran" in result.stdout


def test_ci_passes_when_the_tests_pass(tmp_path):
    bin_dir = _tree(tmp_path, "def test_ok():\n    assert True\n")
    result = _ci(tmp_path, bin_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
