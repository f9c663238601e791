"""From a fresh machine to a green local run of a `harness init` project's CI steps.

What docs/tutorial.md's first step and the generated project's README say, done in a
folder of its own, with nothing of this machine's environment:

1. build harness's wheel from this checkout (`pip wheel --no-deps`), as the tutorial says
   to until harness is on a package index;
2. make a fresh virtual environment and install the wheel into it;
3. `harness init weather` there, and commit the project to a git repository;
4. clone that repository (a CI runner's checkout), make another fresh virtual environment
   (the runner's `setup-python`), and run every `run:` step of the project's
   `.github/workflows/harness.yml` in order, in the clone.

Each step is printed with its time; any failure stops the walk with its output and exit
status 1. pip resolves harness's dependencies from the index pip is configured with.

    python scripts/walkthrough.py [--keep]   # --keep: leave the folder for a look
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def run(argv: list[str] | str, cwd: Path, env: dict[str, str] | None = None) -> None:
    """One command, shown with its time; its output only when it fails."""
    shown = argv if isinstance(argv, str) else " ".join(argv)
    started = time.monotonic()
    done = subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        shell=isinstance(argv, str),
        executable="/bin/bash" if isinstance(argv, str) else None,
        capture_output=True,
        text=True,
    )
    print(f"  {time.monotonic() - started:6.1f}s  {shown}", flush=True)
    if done.returncode != 0:
        print(done.stdout[-6000:], done.stderr[-6000:], sep="\n", file=sys.stderr)
        raise SystemExit(f"walkthrough: `{shown}` exited with {done.returncode}")


def fresh_env(folder: Path) -> dict[str, str]:
    """A new virtual environment, and the environment variables of a shell inside it."""
    venv.create(folder, with_pip=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["VIRTUAL_ENV"] = str(folder)
    env["PATH"] = f"{folder / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env.pop("GITHUB_STEP_SUMMARY", None)
    return env


def workflow_steps(project: Path) -> list[str]:
    """The `run:` steps of the project's workflow, in order."""
    workflow = yaml.safe_load((project / ".github/workflows/harness.yml").read_text())
    [job] = workflow["jobs"].values()
    return [step["run"] for step in job["steps"] if "run" in step]


# What a checkout holds that a wheel is not built from.
_NOT_SOURCE = (
    ".git",
    ".venv",
    "venv",
    ".ci",
    "build",
    "dist",
    "*.egg-info",
    "__pycache__",
    "reports",
)


def walk(where: Path) -> None:
    print("harness's wheel, installed in a fresh environment:")
    wheels = where / "wheels"
    # Built from a copy: a build in the checkout leaves build/ and an .egg-info there.
    source = where / "harness-src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*_NOT_SOURCE))
    run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)],
        where,
    )
    [wheel] = wheels.glob("loop_harness-*.whl")
    user = fresh_env(where / "user-venv")
    run(["pip", "install", "-q", str(wheel)], where, user)

    print("a project, as harness init makes it, committed:")
    run(["harness", "init", "weather"], where, user)
    project = where / "weather"
    git = ["git", "-c", "user.name=walk", "-c", "user.email=walk@localhost"]
    run([*git, "init", "-q"], project, user)
    run([*git, "add", "-A"], project, user)
    run([*git, "commit", "-q", "-m", "harness init"], project, user)

    print("its CI steps, on a fresh clone in a fresh environment:")
    runner = where / "runner"
    run(["git", "clone", "-q", str(project), str(runner)], where, user)
    ci = fresh_env(where / "runner-venv")
    for step in workflow_steps(runner):
        run(step.replace("\n", " "), runner, ci)
    print("walkthrough: every step passed")


def main() -> None:
    keep = "--keep" in sys.argv[1:]
    where = Path(tempfile.mkdtemp(prefix="harness-walkthrough-"))
    try:
        walk(where)
    finally:
        if keep:
            print(f"left in {where}")
        else:
            shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
