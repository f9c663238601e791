"""Commands import what they use: ``harness validate`` and ``harness serve`` of a script
load no MCP client, no cassette machinery and no vcrpy (docs/performance.md#starting-a-command),
each checked in a fresh interpreter (this test process has long imported everything)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCENARIO = """\
name: roundtrip
input: What's the weather in SF?
tools:
  get_weather:
    description: Current weather for a city
    parameters: {city: str}
    returns: "72F and sunny in {{ args.city }}"
llm:
  script:
    - tool_calls: [{get_weather: {city: SF}}]
    - content: It is 72F and sunny in SF.
expect:
  termination: completed
"""

# What neither command needs for a scripted scenario: the mcp SDK and harness's MCP
# client, recording and server; the cassettes (and vcrpy under them); the SDKs.
UNUSED = ("mcp", "vcr", "harness.mcp", "harness.cassettes", "openai", "anthropic")

LOADED = """
def unused():
    prefixes = {unused!r}
    return sorted(m for m in sys.modules if m in prefixes or m.startswith(
        tuple(p + "." for p in prefixes)))
"""

VALIDATE = (
    """
import sys
from harness.cli import main

assert main(["validate", "scenarios"]) == 0
"""
    + LOADED.format(unused=UNUSED)
    + "\nprint(unused())\n"
)

# The real command, in the main thread: a thread waits until it answers, notes what is
# loaded then, and stops it as Ctrl-C's twin (SIGTERM) would.
SERVE = (
    """
import os, signal, socket, sys, threading, time
from harness.cli import main

with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
seen = []
"""
    + LOADED.format(unused=UNUSED)
    + """
def watch():
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    seen.append(unused())
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=watch, daemon=True).start()
status = main(["serve", "scenarios/roundtrip.scenario.yaml", "--port", str(port)])
assert status == 0, status
print(seen[0])
"""
)


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'start'\n")
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "roundtrip.scenario.yaml").write_text(SCENARIO)
    return tmp_path


def _loaded(code: str, cwd: Path) -> str:
    """What ``code`` prints last, run in a fresh interpreter in ``cwd`` (this checkout's
    harness first on its path)."""
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]


def test_validate_loads_no_mcp_client_or_cassettes(tmp_path):
    assert _loaded(VALIDATE, _project(tmp_path)) == "[]"


def test_serving_a_script_loads_no_mcp_client_or_cassettes(tmp_path):
    assert _loaded(SERVE, _project(tmp_path)) == "[]"


def test_import_harness_builds_no_scenario_llm_section(tmp_path):
    # `import harness` (and the pytest plugin, loaded in every pytest session) needs no
    # `llm:` section's models nor their faults': the facade names them, lazily.
    code = "import sys, harness, harness.llm\n" + LOADED.format(
        unused=("harness.llm._config", "harness.llm._faults")
    )
    assert _loaded(code + "\nprint(unused())\n", tmp_path) == "[]"
