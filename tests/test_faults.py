"""Faults around the files harness writes: a write cut short (a full disk, a size limit, a
kill -9), two runs updating one baseline at once, a run started from another folder.

Each test reproduces the fault as it happens to a user: a real process, a real limit.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from harness.cli import main

GOOD = "name: {name}\ninput: hi\nllm:\n  script:\n    - content: done\n"


def python(code: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


# A process whose files may not grow past 2,000 bytes: a write past it fails with EFBIG,
# as a full disk fails with ENOSPC, part way through.
LIMITED = """\
import resource, signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000))
"""


def test_conversation_save_never_leaves_half_a_file(tmp_path):
    path = tmp_path / "chat.json"
    done = python(
        LIMITED
        + """
import sys
from harness._messages import Conversation, UserMessage
Conversation(messages=[UserMessage(content="hi")]).save(sys.argv[1])
try:
    Conversation(messages=[UserMessage(content="x" * 5000)]).save(sys.argv[1])
except OSError as exc:
    print("refused:", exc.strerror)
""",
        str(path),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "refused: File too large"
    # The earlier save is whole, and no temporary file is left beside it.
    assert json.loads(path.read_text())["messages"][0]["content"] == "hi"
    assert [p.name for p in tmp_path.iterdir()] == ["chat.json"]


@pytest.fixture
def project(pytester, monkeypatch):
    from harness import _plugins as plugins

    plugins.discovery.reset()
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "a.scenario.yaml").write_text(GOOD.format(name="a"))
    monkeypatch.chdir(pytester.path)
    yield pytester.path
    plugins.discovery.reset()


@pytest.mark.filterwarnings("ignore:Benchmarks are automatically disabled")
def test_the_baseline_path_in_results_does_not_depend_on_where_the_run_started(
    project, tmp_path_factory, monkeypatch
):
    assert main(["run", "--update-baseline"]) == 0
    assert main(["run"]) == 0
    here = json.loads((project / "reports" / "results.json").read_text())["baseline"]
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(elsewhere)
    assert main(["run", str(project / "scenarios")]) == 0
    there = json.loads((project / "reports" / "results.json").read_text())["baseline"]
    assert here["source"] == there["source"] == "reports/baseline.json"


@pytest.fixture
def full_cassettes(project):
    """The project's cassettes/ on a tmpfs of 4 KiB, already full (root mounts it, as CI
    runs; elsewhere the test skips)."""
    import os

    cassettes = project / "cassettes"
    cassettes.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs (a full disk) needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(cassettes)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        (cassettes / "filler").write_bytes(b"x" * 4096)
        yield cassettes
    finally:
        subprocess.run(["umount", str(cassettes)], check=True)


def test_a_full_disk_while_saving_a_cassette_is_one_line_and_exit_3(project, full_cassettes):
    from harness.llm._script import ScriptStep
    from harness.serve import create_app, running_app

    (project / "scenarios" / "rec.scenario.yaml").write_text(
        "input: Weather?\nllm: {provider: openai, model: gpt-4o-mini, base_url: BASE}\n"
    )
    app = create_app([ScriptStep(content="It is sunny.")])
    with running_app(app) as url:
        text = (project / "scenarios" / "rec.scenario.yaml").read_text()
        (project / "scenarios" / "rec.scenario.yaml").write_text(text.replace("BASE", url))
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", "record"],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=project,
            env={**__import__("os").environ, "OPENAI_API_KEY": "sk-test"},
        )
    printed = done.stdout + done.stderr
    assert done.returncode == 3, printed
    assert "Traceback" not in printed and "harness crashed" not in printed
    line = (
        "scenarios/rec.scenario.yaml::rec: cassette cassettes/rec.yaml not written: "
        "No space left on device"
    )
    assert f"report error: {line}" in done.stdout
    results = json.loads((project / "reports" / "results.json").read_text())
    by_id = {s["id"]: s for s in results["scenarios"]}
    assert by_id["scenarios/a.scenario.yaml::a"]["status"] == "passed"
    assert by_id["scenarios/rec.scenario.yaml::rec"]["status"] == "error"
    # No hidden temporary file is left on the full disk either.
    assert sorted(p.name for p in full_cassettes.iterdir()) == ["filler"]


BARRIER = """\
import os
import pathlib
import time


def wait(name: str) -> str:
    # Returns once every run of the test is here: each has read the baseline by then.
    folder = os.environ.get("BARRIER_DIR")
    if folder:
        (pathlib.Path(folder) / name).touch()
        deadline = time.monotonic() + 120
        while len(list(pathlib.Path(folder).iterdir())) < 2:
            assert time.monotonic() < deadline, "the other run never came"
            time.sleep(0.02)
    return "ok"
"""

RACER = """\
name: {name}
input: hi
tools:
  barrier: {{use: "barrier:wait"}}
llm:
  script:
    - tool_calls: [{{barrier: {{name: {name}}}}}]
    - content: {answer}
"""


def test_two_runs_updating_one_baseline_at_once_lose_no_update(project, tmp_path_factory):
    import os

    (project / "barrier.py").write_text(BARRIER)
    (project / "scenarios" / "a.scenario.yaml").unlink()
    for name in ("alpha", "beta"):
        (project / "scenarios" / f"{name}.scenario.yaml").write_text(
            RACER.format(name=name, answer="old")
        )
    first = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", "--update-baseline"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=project,
    )
    assert first.returncode == 0, first.stdout + first.stderr
    for name in ("alpha", "beta"):
        (project / "scenarios" / f"{name}.scenario.yaml").write_text(
            RACER.format(name=name, answer="new")
        )
    env = {**os.environ, "BARRIER_DIR": str(tmp_path_factory.mktemp("barrier"))}
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "harness.cli", "run", "-k", name, "--update-baseline"],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for name in ("alpha", "beta")
    ]
    outputs = [run.communicate(timeout=300)[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    baseline = json.loads((project / "reports" / "baseline.json").read_text())
    finals = {s["name"]: s["final"]["content"] for s in baseline["scenarios"]}
    assert finals == {"alpha": "new", "beta": "new"}


KILLED_MID_WRITE = """\
import os, sys
from harness import _files as files

# kill -9 between the write and the rename: what a killed CI job leaves.
os.replace = lambda *args: os.kill(os.getpid(), 9)
files.atomic_write(sys.argv[1], "interactions: []\\n" * 1000)
"""


def hidden_leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_write_killed_midway_leaves_nothing_for_git_after_the_next_run(tmp_path):
    from harness._files import atomic_write

    cassette = tmp_path / "cassettes" / "weather.yaml"
    killed = python(KILLED_MID_WRITE, str(cassette))
    assert killed.returncode == -9
    left = hidden_leftovers(cassette.parent)
    assert len(left) == 1 and left[0].startswith(".weather.yaml.")
    # The pattern harness's .gitignore (and docs/recording.md's advice) names.
    root = Path(__file__).resolve().parent.parent
    ignored = subprocess.run(
        ["git", "check-ignore", "--no-index", "-q", f"cassettes/{left[0]}"], cwd=root
    )
    assert ignored.returncode == 0, f"{left[0]} is not git-ignored"
    atomic_write(cassette, "interactions: []\n")  # the next run's save
    assert hidden_leftovers(cassette.parent) == []
    assert cassette.read_text() == "interactions: []\n"


def test_a_replay_clears_what_a_killed_recording_left(tmp_path):
    from harness import Agent
    from harness.llm._config import LLMConfig, LLMContext
    from harness.providers.openai import OpenAILLM

    cassette = tmp_path / "weather.yaml"
    cassette.write_text("interactions: []\n")
    assert python(KILLED_MID_WRITE, str(cassette)).returncode == -9
    assert len(hidden_leftovers(tmp_path)) == 1
    config = LLMConfig(provider="openai", model="gpt-4o-mini", cassette=str(cassette))
    context = LLMContext(scenario_id="s.scenario.yaml::s", record_mode="none")
    Agent(llm=OpenAILLM(config.with_context(context))).run("hi")  # a replay: writes nothing
    assert hidden_leftovers(tmp_path) == []
