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
from harness.messages import Conversation, UserMessage
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
    from harness import plugins

    plugins.reset()
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "a.scenario.yaml").write_text(GOOD.format(name="a"))
    monkeypatch.chdir(pytester.path)
    yield pytester.path
    plugins.reset()


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
