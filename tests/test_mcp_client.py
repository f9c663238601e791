"""A real MCP server's tools in harness's own loop (docs/mcp.md): real stdio servers (the
mcp SDK's ``MCPServer``, run as subprocesses) recorded at the JSON-RPC level, replayed with
the server gone, and servers that crash, answer garbage or hang ending the run in
``tool_error`` with one line."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.scenario import load_scenario, run_scenario

ROOT = Path(__file__).resolve().parents[1]
NOTES_SERVER = ROOT / "scenarios" / "mcp" / "servers" / "notes_server.py"

SCRIPT = """\
llm:
  script:
    - tool_calls: [{add_note: {text: buy milk}}]
    - tool_calls: [{add_note: {text: "  "}}]
    - tool_calls: [{list_notes: {}}]
    - content: "Noted."
"""


@pytest.fixture
def project(tmp_path, monkeypatch, fresh_plugins):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / "scenarios").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def scenario(project: Path, server: str, script: str = SCRIPT, extra: str = "") -> Path:
    """A scenario whose tools are those of the stdio server ``server`` (a file in the
    project), with ``script`` as its model."""
    path = project / "scenarios" / "notes.scenario.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            input: Keep a note to buy milk.
            tools:
              notes:
                mcp:
                  command: [python, {server}]
            {extra}
            """
        )
        + script
    )
    return path


def entry(result) -> dict:
    """The scenario's entry of results.json, without its wall-clock field."""
    data = json.loads(result.model_dump_json())
    data.pop("wall_time", None)
    return data


def test_recorded_then_replayed_with_the_server_gone_gives_the_same_results(project):
    shutil.copy(NOTES_SERVER, project / "notes_server.py")
    path = scenario(project, "notes_server.py")
    recorded = run_scenario(path, "once")
    assert recorded.termination == "completed"
    assert [(c.name, c.result, c.status) for c in recorded.tool_calls] == [
        ("add_note", "note 1 kept", "ok"),
        ("add_note", "Error executing tool add_note: a note needs some text", "error"),
        ("list_notes", "1. buy milk", "ok"),
    ]
    recording = project / "cassettes" / "notes.mcp.yaml"
    assert "tools/call" in recording.read_text()

    (project / "notes_server.py").unlink()  # the server is gone: replayed only
    replayed = run_scenario(path, "none")
    assert entry(replayed) == entry(recorded)


def test_a_replayed_call_the_recording_does_not_hold_is_explained(project):
    shutil.copy(NOTES_SERVER, project / "notes_server.py")
    path = scenario(project, "notes_server.py")
    run_scenario(path, "once")
    changed = SCRIPT.replace("buy milk", "buy bread")
    path = scenario(project, "notes_server.py", changed)
    result = run_scenario(path, "none")
    assert result.termination == "tool_error"
    message = result.final.error.message
    assert "MCP recording miss: tools/call add_note to server notes" in message
    assert "cassettes/notes.mcp.yaml" in message
    print(message)
    assert "Nearest recorded call: 2" in message  # call 1 listed the tools
    assert '-    "text": "buy milk"' in message and '+    "text": "buy bread"' in message
    assert result.final.error.server == "notes"


def test_record_mode_once_with_a_recording_replays_and_never_goes_live_on_a_miss(project):
    shutil.copy(NOTES_SERVER, project / "notes_server.py")
    path = scenario(project, "notes_server.py")
    run_scenario(path, "once")
    recording = project / "cassettes" / "notes.mcp.yaml"
    before = recording.read_bytes()
    # The server is there: going live would answer the new call, and record it.
    path = scenario(project, "notes_server.py", SCRIPT.replace("buy milk", "buy bread"))
    result = run_scenario(path, "once")
    assert result.termination == "tool_error"
    assert "MCP recording miss: tools/call add_note to server notes" in result.final.error.message
    assert recording.read_bytes() == before


def test_disable_recording_talks_to_the_server_and_writes_nothing(project):
    shutil.copy(NOTES_SERVER, project / "notes_server.py")
    path = scenario(project, "notes_server.py")
    live = run_scenario(path, "once", disable_recording=True)
    assert live.termination == "completed"
    assert [c.result for c in live.tool_calls][-1] == "1. buy milk"
    assert not (project / "cassettes").exists()
    # With a recording there: still live (a new note), and the recording is left as it was.
    run_scenario(path, "once")
    recording = project / "cassettes" / "notes.mcp.yaml"
    before = recording.read_bytes()
    changed = scenario(project, "notes_server.py", SCRIPT.replace("buy milk", "buy bread"))
    again = run_scenario(changed, "once", disable_recording=True)
    assert [c.result for c in again.tool_calls][-1] == "1. buy bread"
    assert recording.read_bytes() == before


def test_a_missed_call_of_no_tool_is_named_without_a_gap(project):
    shutil.copy(NOTES_SERVER, project / "notes_server.py")
    path = scenario(project, "notes_server.py")
    run_scenario(path, "once")
    recording = project / "cassettes" / "notes.mcp.yaml"
    data = yaml.safe_load(recording.read_text())
    calls = data["servers"]["notes"]
    data["servers"]["notes"] = [c for c in calls if c["method"] != "tools/list"]
    recording.write_text(yaml.safe_dump(data))

    result = run_scenario(path, "none")

    message = result.final.error.message
    assert "MCP recording miss: tools/list to server notes has no unplayed match" in message


def test_a_scripted_model_runs_its_servers_live_until_they_are_recorded(project):
    shutil.copy(NOTES_SERVER, project / "notes_server.py")
    path = scenario(project, "notes_server.py")

    result = run_scenario(path, "none")  # nothing recorded yet, the model scripted

    assert result.termination == "completed", result.final
    assert result.tool_calls[0].result == "note 1 kept"
    assert not (project / "cassettes").exists()  # replay-only: nothing written
    run_scenario(path, "once")  # recorded, then replayed only, the server gone
    (project / "notes_server.py").unlink()
    assert run_scenario(path, "none").termination == "completed"


def test_replaying_a_recording_without_the_servers_calls_says_how_to_record(project):
    shutil.copy(NOTES_SERVER, project / "notes_server.py")
    path = scenario(project, "notes_server.py")
    (project / "cassettes").mkdir()
    (project / "cassettes" / "notes.mcp.yaml").write_text("version: 1\nservers: {}\n")
    result = run_scenario(path, "none")
    assert result.termination == "tool_error"
    assert "The recording has no call of this server" in result.final.error.message


def test_the_example_replays_offline_under_harness_run(tmp_path):
    # scenarios/mcp/own-loop-notes.scenario.yaml with its committed recording.
    out = tmp_path / "results.json"
    example = ROOT / "scenarios" / "mcp" / "own-loop-notes.scenario.yaml"
    status = main(["run", str(example), "--json", str(out), "--html", str(tmp_path / "r.html")])
    data = json.loads(out.read_text())
    assert status == 0
    (only,) = data["scenarios"]
    assert only["status"] == "passed"
    assert [c["status"] for c in only["tool_calls"]] == ["ok", "error", "ok"]


# -- servers that fail -----------------------------------------------------------------------

CRASHES_AT_START = """\
import sys
print("notes: cannot open the database", file=sys.stderr)
sys.exit(3)
"""

GARBAGE = """\
import sys
print("hello, I am not JSON-RPC", flush=True)
for line in sys.stdin:
    print("still not JSON-RPC", flush=True)
"""

CRASHING_TOOL = """\
import os, sys
from mcp.server.mcpserver import MCPServer

app = MCPServer("notes")


@app.tool()
def add_note(text: str) -> str:
    \"\"\"Keep a note.\"\"\"
    print("notes: out of memory", file=sys.stderr, flush=True)
    os._exit(9)


app.run()
"""

# A server written by hand, without the SDK (which keeps a tool's prints off stdout): it
# answers the handshake and the listing, then writes a traceback where its answer to the
# call should be (or, given "hang", never answers it).
RAW_SERVER = """\
import json, os, sys, time

TOOL = {"name": "add_note", "inputSchema": {"type": "object"}}
for line in sys.stdin:
    message = json.loads(line)
    method, id_ = message.get("method"), message.get("id")
    if id_ is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"],
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        if sys.argv[1:] == ["garbage"]:
            print("Traceback (most recent call last): oops", flush=True)
        with open("server.pid", "w") as pid:
            pid.write(str(os.getpid()))
        time.sleep(3600)  # never answers, never reads its stdin again
        continue
    else:
        answer = {"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": "no"}}
        print(json.dumps(answer), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}), flush=True)
"""


def failing(project: Path, code: str, how: str = "", timeout: str = "") -> object:
    (project / "server.py").write_text(code)
    server = f"server.py, {how}" if how else "server.py"
    extra = f"      timeout: {timeout}" if timeout else ""
    path = scenario(
        project,
        server,
        "llm:\n  script:\n    - tool_calls: [{add_note: {text: a}}]\n    - content: done\n",
        extra=extra,
    )
    return run_scenario(path, "once")


def one_line(result) -> str:
    assert result.termination == "tool_error"
    message = result.final.error.message
    assert "\n" not in message and "Traceback" not in message.split(":")[0]
    return message


def test_a_server_that_exits_at_start_ends_the_run_in_tool_error(project):
    result = failing(project, CRASHES_AT_START)
    message = one_line(result)
    assert message.startswith("MCP server notes (")
    assert "closed the connection" in message
    assert "notes: cannot open the database" in message
    assert result.llm_calls == 0


def test_a_server_that_dies_during_a_call_ends_the_run_in_tool_error(project):
    result = failing(project, CRASHING_TOOL)
    message = one_line(result)
    assert "closed the connection" in message and "notes: out of memory" in message
    assert result.final.error.server == "notes"
    (call,) = result.tool_calls
    assert call.name == "add_note"


@pytest.mark.timeout(120)
def test_a_server_that_answers_garbage_at_start_ends_the_run_in_tool_error(project):
    # An hour's timeout: the run ends at once (the handshake cancelled when the garbage
    # came), not once the server's timeout ran out; a run that waited fails this test.
    message = one_line(failing(project, GARBAGE, timeout="3600"))
    assert "answered what is not MCP: 'hello, I am not JSON-RPC' on its stdout" in message


def test_a_server_that_writes_garbage_during_a_call_ends_the_run_in_tool_error(project):
    message = one_line(failing(project, RAW_SERVER, "garbage", timeout="30"))
    assert "answered what is not MCP" in message and "oops" in message


def test_a_server_that_hangs_ends_the_run_at_its_timeout(project):
    message = one_line(failing(project, RAW_SERVER, "hang", timeout="5"))
    assert "did not answer tools/call within 5 s (its mcp: timeout)" in message
    # The run ended with its server stopped (SIGTERM once its stdin closed did not end
    # it), not when the server ended on its own.
    pid = int((project / "server.pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_failed_run_records_nothing(project):
    failing(project, CRASHES_AT_START)
    assert not (project / "cassettes").exists()


# -- the scenario file ------------------------------------------------------------------------


SUB_AGENT = """\
input: Keep a note to buy milk.
agents:
  keeper:
    description: Keeps notes.
    tools:
      notes: {mcp: {command: [python, notes_server.py]}}
    llm:
      script:
        - tool_calls: [{add_note: {text: buy milk}}]
        - tool_calls: [{list_notes: {}}]
        - content: "Kept: 1. buy milk"
tools:
  keep: {agent: keeper}
  notes: {mcp: {command: [python, notes_server.py]}}
llm:
  script:
    - tool_calls: [{keep: {task: buy milk}}]
    - tool_calls: [{list_notes: {}}]
    - content: Done.
"""


def test_a_sub_agents_tools_come_from_its_own_mcp_server_recorded_and_replayed(project):
    shutil.copy(NOTES_SERVER, project / "notes_server.py")
    path = project / "scenarios" / "sub.scenario.yaml"
    path.write_text(SUB_AGENT)
    recorded = run_scenario(path, "once")
    assert recorded.termination == "completed", recorded.final
    (keep, listed) = recorded.tool_calls
    assert (keep.name, keep.result) == ("keep", "Kept: 1. buy milk")
    # The scenario's own entry of the same name is a server of its own (a process of its
    # own, which holds no note): each agent talks to the server its entry names.
    assert (listed.name, listed.result) == ("list_notes", "no notes")
    assert [(c.name, c.result) for c in keep.sub_run.tool_calls] == [
        ("add_note", "note 1 kept"),
        ("list_notes", "1. buy milk"),
    ]
    servers = yaml.safe_load((project / "cassettes" / "sub.mcp.yaml").read_text())
    assert "keeper/notes" in json.dumps(servers) and '"notes"' in json.dumps(servers)

    (project / "notes_server.py").unlink()  # replayed only: the servers are gone
    assert entry(run_scenario(path, "none")) == entry(recorded)


# -- harness freeze ---------------------------------------------------------------------------


def test_freeze_turns_the_recorded_mcp_results_into_per_call_stub_results(project, monkeypatch):
    from harness.serve import running_server

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    shutil.copy(NOTES_SERVER, project / "notes_server.py")
    steps = yaml.safe_load(SCRIPT)["llm"]["script"]
    with running_server(steps) as url:
        model = f"llm: {{provider: openai, model: gpt-4o-mini, base_url: '{url}'}}\n"
        path = scenario(project, "notes_server.py", model)
        recorded = run_scenario(path, "once")
    assert recorded.termination == "completed"
    out = project / "frozen.scenario.yaml"
    assert main(["freeze", "--scenario", str(path), "-o", str(out)]) == 0
    frozen = yaml.safe_load(out.read_text())
    assert "notes" not in frozen["tools"]  # the server is gone: its tools are stubs
    assert frozen["tools"]["add_note"]["results"] == [
        {"on_call": 1, "returns": "note 1 kept"},
        {
            "on_call": 2,
            "returns": "Error executing tool add_note: a note needs some text",
            "is_error": True,
        },
    ]
    result = run_scenario(out)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    statuses = [(c.name, c.result, c.status) for c in result.tool_calls]
    assert statuses == [(c.name, c.result, c.status) for c in recorded.tool_calls]


def test_a_streamable_http_server_is_recorded_and_replayed_once_stopped(project):
    # The server: another scenario's stubs, served over MCP by harness itself.
    from harness.mcp._hosting import serving_http
    from harness.scenario._loader import build_tools
    from harness.scenario._mcp_tools import served_tools

    served = project / "scenarios" / "weather.scenario.yaml"
    served.write_text(
        "input: unused\ntools:\n  get_weather:\n    description: Current weather.\n"
        "    parameters: {city: str}\n    returns: '18C in {{ args.city }}'\n"
        "    errors: [{on_call: 2, raise: service down}]\nllm: {script: [{content: x}]}\n"
    )
    weather = load_scenario(served)
    script = (
        "llm:\n  script:\n    - tool_calls: [{get_weather: {city: Paris}}]\n"
        "    - tool_calls: [{get_weather: {city: Rome}}]\n    - content: done\n"
    )
    path = project / "scenarios" / "own.scenario.yaml"
    with serving_http(served_tools(weather, build_tools(weather))) as url:
        path.write_text(f"input: Weather?\ntools:\n  weather: {{mcp: {{url: '{url}'}}}}\n{script}")
        recorded = run_scenario(path, "once")
    assert [(c.result, c.status) for c in recorded.tool_calls] == [
        ("18C in Paris", "ok"),
        ("ToolError: service down", "error"),
    ]
    replayed = run_scenario(path, "none")  # the server has stopped
    assert entry(replayed) == entry(recorded)


def test_a_server_command_that_does_not_exist_ends_the_run_in_tool_error(project):
    path = scenario(project, "x").with_name("missing.scenario.yaml")
    path.write_text(
        "input: hi\ntools:\n  notes: {mcp: {command: [no-such-mcp-server-here]}}\n"
        "llm: {script: [{content: hi}]}\n"
    )
    message = one_line(run_scenario(path, "once"))
    assert message.startswith("MCP server notes (no-such-mcp-server-here) could not be started:")


def test_a_url_servers_password_is_not_in_the_line_that_ends_the_run(project):
    import socket

    # A port that is bound but not listening: the connection is refused at once.
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        port = held.getsockname()[1]
        path = project / "scenarios" / "url.scenario.yaml"
        url = f"http://me:s3cret-pass@127.0.0.1:{port}/mcp"
        path.write_text(
            f"input: hi\ntools:\n  notes: {{mcp: {{url: '{url}', timeout: 20}}}}\n"
            "llm: {script: [{content: hi}]}\n"
        )
        result = run_scenario(path, "once")
    message = one_line(result)
    assert message.startswith(f"MCP server notes (http://127.0.0.1:{port}/mcp) ")
    assert "s3cret" not in result.model_dump_json()


@pytest.mark.parametrize("where", ["scenario", "sub-agent"])
def test_a_served_agent_refuses_mcp_entries_it_would_not_bring_in(project, where):
    from harness._errors import HarnessError
    from harness.scenario._serving import scenario_agent

    path = project / "scenarios" / "sub.scenario.yaml"
    text = SUB_AGENT
    if where == "sub-agent":  # only the sub-agent's entry is left
        text = text.replace("  notes: {mcp: {command: [python, notes_server.py]}}\nllm:", "llm:")
        text = text.replace(
            "    - tool_calls: [{list_notes: {}}]\n    - content: Done.", "    - content: Done."
        )
    assert text.count("mcp:") == (1 if where == "sub-agent" else 2)
    path.write_text(text)
    with pytest.raises(HarnessError, match=r"MCP server \(mcp:\) are brought in for a run") as e:
        scenario_agent(load_scenario(path))
    named = "agents.keeper.tools.notes" if where == "sub-agent" else "tools.notes"
    assert f"({named})" in str(e.value)


CHANGING_SERVER = '''
from mcp import types
from mcp.server.mcpserver import Context, MCPServer

app = MCPServer("vault")


def secret() -> str:
    """The vault's secret."""
    return "42"


@app.tool()
async def unlock(ctx: Context) -> str:
    """Unlock the vault: a new tool appears."""
    app.add_tool(secret)
    await ctx.session.send_notification(
        types.ToolListChangedNotification(), related_request_id=ctx.request_id
    )
    return "unlocked"


if __name__ == "__main__":
    app.run()
'''

CHANGING = """\
llm:
  script:
    - tool_calls: [{unlock: {}}]
    - tool_calls: [{secret: {}}]
    - content: The secret is 42.
expect:
  termination: completed
  mcp: {list_changed_seen: true}
  tool_calls: {sequence: [unlock, secret], exact: true}
"""


def test_a_servers_tool_list_change_is_seen_and_replayed(project):
    (project / "vault_server.py").write_text(CHANGING_SERVER)
    path = scenario(project, "vault_server.py", CHANGING)

    recorded = run_scenario(path, "once")

    assert recorded.status == "passed", (recorded.final, recorded.failed_expectations)
    assert [(c.name, c.result, c.status) for c in recorded.tool_calls] == [
        ("unlock", "unlocked", "ok"),
        ("secret", "42", "ok"),
    ]
    (changed,) = [e for e in recorded.events if e.event == "mcp_list_changed"]
    assert (changed.server, changed.tools) == ("notes", ["secret", "unlock"])
    recording = (project / "cassettes" / "notes.mcp.yaml").read_text()
    assert "notifications/tools/list_changed" in recording
    (project / "vault_server.py").unlink()  # replayed with the server gone
    replayed = run_scenario(path, "none")
    assert entry(replayed) == entry(recorded)
