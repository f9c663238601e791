"""MCP under attack, both ways, over real connections on 127.0.0.1 (docs/mcp.md#limits):
`harness mcp-serve` (and the MCP server of a target's run) holds its clients to harness's
server limits and its sessions to a number and an idle time, a held stream included; as
a client, harness bounds a server's `tools/list` pages and its stderr, and prints the
names a server gives harmlessly."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from harness._asgi import ServerLimits

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[1]
WEATHER = ROOT / "scenarios" / "mcp" / "mcp-sdk-client.scenario.yaml"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "attacker", "version": "1"},
    },
}
ACCEPT = {"accept": "application/json, text/event-stream"}


class McpServe:
    """`harness mcp-serve` over HTTP, in a process of its own."""

    def __init__(self, *extra: str) -> None:
        argv = [sys.executable, "-m", "harness.cli", "mcp-serve", str(WEATHER), "--port", "0"]
        self.process = subprocess.Popen(
            [*argv, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        line = self.process.stdout.readline()
        if " at http://" not in line:
            self.process.kill()
            raise AssertionError(f"no URL: {line!r} {self.process.stderr.read()}")
        self.url = line.split(" at ")[1].split()[0]

    def stop(self) -> str:
        self.process.terminate()
        out, err = self.process.communicate(timeout=30)
        return out + err


def _open_session(url: str) -> httpx.Response:
    return httpx.post(url, json=INITIALIZE, headers=ACCEPT, timeout=30)


def _alive(url: str, session: str) -> int:
    """The status a request of ``session`` gets (404 once the session is gone)."""
    ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
    headers = {**ACCEPT, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
    return httpx.post(url, json=ping, headers=headers, timeout=30).status_code


def _ends(url: str, session: str, ttl: float, seconds: float = 30.0) -> bool:
    """Whether ``session`` ends within ``seconds``: asked every two ttls (a question is a
    request of the session, which starts its idle time again)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(2.5 * ttl)
        if _alive(url, session) == 404:
            return True
    return False


def test_mcp_serve_bounds_its_sessions_and_ends_the_idle_ones():
    server = McpServe("--max-sessions", "3", "--session-ttl", "1")
    try:
        opened = [_open_session(server.url) for _ in range(4)]
        statuses = [answer.status_code for answer in opened]
        first = opened[0].headers["mcp-session-id"]
        expired = _ends(server.url, first, 1)
        again = _open_session(server.url).status_code  # room again, once they ended
    finally:
        said = server.stop()
    assert statuses == [200, 200, 200, 503], statuses
    assert expired
    assert again == 200
    assert "Traceback" not in said


def test_a_stream_held_open_without_requests_does_not_keep_its_session_for_ever():
    # An open GET stream holds its session: a client gone quiet that keeps one would
    # keep its session (and its server task) for good.
    server = McpServe("--session-ttl", "1")
    try:
        session = _open_session(server.url).headers["mcp-session-id"]
        host, port = server.url.removeprefix("http://").split("/")[0].split(":")
        sock = socket.create_connection((host, int(port)), timeout=20)
        sock.sendall(
            f"GET /mcp HTTP/1.1\r\nhost: {host}:{port}\r\naccept: text/event-stream\r\n"
            f"mcp-session-id: {session}\r\nmcp-protocol-version: 2025-06-18\r\n\r\n".encode()
        )
        started = time.monotonic()
        stream = b""
        try:  # the client holds the stream open and sends nothing more
            while time.monotonic() - started < 20:
                sock.settimeout(max(0.1, 20 - (time.monotonic() - started)))
                piece = sock.recv(65536)
                stream += piece
                if not piece or stream.endswith(b"0\r\n\r\n"):  # closed, or its last chunk
                    break
        except TimeoutError:
            pass
        finally:
            sock.close()
        held = time.monotonic() - started
        expired = _ends(server.url, session, 1)
    finally:
        said = server.stop()
    assert stream.startswith(b"HTTP/1.1 200 "), stream[:200]
    assert held < 19, held  # ended by the server, after about the ttl
    assert expired
    assert "Traceback" not in said and "ASGI callable returned" not in said, said


def test_the_mcp_server_cuts_off_slow_clients_as_every_server_of_harness():
    from test_mcp import served

    from harness.mcp._hosting import serving_http

    server, _ = served(parameters={"q": "str"}, returns="found")
    with serving_http(server, limits=ServerLimits(request_timeout=0.5, max_connections=50)) as url:
        host, port = url.removeprefix("http://").split("/")[0].split(":")
        clients = []
        for _ in range(80):  # past the connections it takes, each sending half a head
            sock = socket.create_connection((host, int(port)), timeout=30)
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: app")
            clients.append(sock)
        closed = []
        deadline = time.monotonic() + 20  # all of them, far past the 0.5 s they are given
        for sock in clients:
            sock.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                while sock.recv(4096):
                    pass
                closed.append(True)
            except ConnectionResetError:
                closed.append(True)
            except TimeoutError:
                closed.append(False)
            finally:
                sock.close()
        answer = _open_session(url)
    assert all(closed), f"{closed.count(False)} slow connections were held open"
    assert answer.status_code == 200


def test_mcp_serve_refuses_bad_session_limits_in_one_line():
    for option in (["--max-sessions", "0"], ["--session-ttl", "0"], ["--session-ttl", "nan"]):
        argv = [sys.executable, "-m", "harness.cli", "mcp-serve", str(WEATHER), "--port", "0"]
        done = subprocess.run([*argv, *option], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.splitlines()) == 1 and option[0] in done.stderr


# -- harness as an MCP client -------------------------------------------------------------------

# A server written by hand: the handshake, then tools/list pages as PAGES says (a list of
# (tool names, nextCursor) for the cursors it is asked, by the cursor asked), tools/call
# answered with the tool's name; STDERR written first.
PAGING_SERVER = """\
import json, sys

PAGES = {pages}
sys.stderr.write({stderr})
sys.stderr.flush()
for line in sys.stdin:
    message = json.loads(line)
    method, id_ = message.get("method"), message.get("id")
    if id_ is None:
        continue
    if method == "initialize":
        result = {{"protocolVersion": message["params"]["protocolVersion"],
                  "capabilities": {{"tools": {{}}}}, "serverInfo": {{"name": "raw", "version": "1"}}}}
    elif method == "tools/list":
        cursor = (message.get("params") or {{}}).get("cursor")
        names, after = PAGES(cursor) if callable(PAGES) else PAGES[cursor or ""]
        result = {{"tools": [{{"name": n, "inputSchema": {{"type": "object"}}}} for n in names]}}
        if after:
            result["nextCursor"] = after
    elif method == "tools/call":
        name = message["params"]["name"]
        result = {{"content": [{{"type": "text", "text": "called " + name}}]}}
    else:
        print(json.dumps({{"jsonrpc": "2.0", "id": id_, "error": {{"code": -32601, "message": "no"}}}}), flush=True)
        continue
    print(json.dumps({{"jsonrpc": "2.0", "id": id_, "result": result}}), flush=True)
"""


def paging_server(
    project: Path, pages: str, stderr: str = '""', only: str = "", call: str = "c"
) -> Path:
    """A scenario whose model calls ``call`` of a hand-written server listing ``pages``."""
    (project / "server.py").write_text(PAGING_SERVER.format(pages=pages, stderr=stderr))
    path = project / "scenarios" / "paged.scenario.yaml"
    path.write_text(
        "input: go\n"
        "tools:\n"
        "  paged:\n"
        "    mcp:\n"
        "      command: [python, server.py]\n"
        "      timeout: 60\n"
        + (f"      only: {only}\n" if only else "")
        + f"llm:\n  script:\n    - tool_calls: [{{{call}: {{}}}}]\n    - content: done\n"
    )
    return path


@pytest.fixture
def project(tmp_path, monkeypatch, fresh_plugins):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / "scenarios").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_pages_of_tools_list_are_all_listed_recorded_and_replayed(project):
    from harness.scenario import run_scenario

    pages = '{"": (["a"], "p2"), "p2": (["b"], "p3"), "p3": (["c"], None)}'
    path = paging_server(project, pages)
    recorded = run_scenario(path, "once")
    assert recorded.termination == "completed", recorded.final
    assert [(c.name, c.result) for c in recorded.tool_calls] == [("c", "called c")]
    calls = (project / "cassettes" / "paged.mcp.yaml").read_text()
    assert calls.count("tools/list") == 3 and "cursor: p3" in calls
    (project / "server.py").unlink()  # replayed, every page, with the server gone
    replayed = run_scenario(path, "none")
    assert [(c.name, c.result) for c in replayed.tool_calls] == [("c", "called c")]


@pytest.mark.parametrize(
    ("pages", "said"),
    [
        # A new cursor each time, for ever (16,344 pages in 15 s before).
        (
            "lambda cursor: ([f'tool{int(cursor or 0)}'], str(int(cursor or 0) + 1))",
            "more than 100 pages",
        ),
        ('lambda cursor: (["a"], "again")', "a nextCursor it gave before ('again')"),
    ],
    ids=["new cursor each time", "same cursor again"],
)
def test_tools_list_pages_that_never_end_end_the_run_in_one_line(project, pages, said):
    from harness.scenario import run_scenario

    result = run_scenario(paging_server(project, pages), "once")
    assert result.termination == "tool_error", result.final
    message = result.final.error.message
    assert said in message and "\n" not in message, message
    recorded = (project / "cassettes" / "paged.mcp.yaml").read_text()
    assert recorded.count("method: tools/list") <= 100 and len(recorded) < 100_000


def test_a_tool_only_names_that_the_server_lacks_ends_the_run_in_one_line(project):
    from harness.scenario import run_scenario

    path = paging_server(project, '{"": (["a", "b"], None)}', only="[a, nope]", call="a")
    result = run_scenario(path, "once")
    assert result.termination == "tool_error", result.final
    assert result.final.error.message.endswith(
        "has no tool nope (tools: paged: mcp: only:); it has a, b"
    )
    assert result.llm_calls == 0


def test_a_tool_name_with_escape_codes_is_printed_harmlessly(project):
    # A hostile server's tool name that clears the screen and turns it red.
    pages = '{"": (["\\x1b[2J\\x1b[31mpwned", "fine"], None)}'
    path = paging_server(project, pages, call="fine")
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", str(path), "--record-mode", "once"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=project,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "\x1b" not in said, said
    assert "lists a tool named '\\x1b[2J\\x1b[31mpwned'" in said, said
    assert "leave it out with only: (tools: paged: mcp: only:)" in said
    results = json.loads((project / "reports" / "results.json").read_text())
    assert "\\x1b[2J" in results["scenarios"][0]["final"]["error"]["message"]
    from harness.scenario import run_scenario

    # Named in a line that lists the server's tools: escaped there too.
    text = path.read_text()
    named = text.replace("      timeout: 60\n", "      only: [nope]\n").replace("fine:", "nope:")
    path.write_text(named)
    (project / "cassettes" / "paged.mcp.yaml").unlink(missing_ok=True)
    message = run_scenario(path, "once").final.error.message
    assert message.endswith("it has \\x1b[2J\\x1b[31mpwned, fine"), message
    # Left out with only:, the server's other tools serve the run.
    path.write_text(text.replace("      timeout: 60\n", "      only: [fine]\n"))
    (project / "cassettes" / "paged.mcp.yaml").unlink(missing_ok=True)
    result = run_scenario(path, "once")
    assert [(c.name, c.result) for c in result.tool_calls] == [("fine", "called fine")]


def test_a_servers_stderr_is_kept_bounded_and_its_last_line_printed_harmlessly(project):
    # 200 MB on stderr, then a last line with an escape code, then it exits: harness
    # kept it whole (400 MB cost 925 MB) and printed the code as it came.
    flood = '("x" * 1023 + "\\n") * 200_000 + "\\x1b[31mnotes: gave up\\n"'
    (project / "server.py").write_text(f"import sys\nsys.stderr.write({flood})\nsys.exit(3)\n")
    path = project / "scenarios" / "noisy.scenario.yaml"
    path.write_text(
        "input: go\ntools:\n  noisy:\n    mcp:\n      command: [python, server.py]\n"
        "llm:\n  script:\n    - content: done\n"
    )
    # The peak of the process's own memory (VmHWM: a child's rusage counts what it
    # shared with this process before its exec), against a run of harness alone.
    peak = "[li for li in open('/proc/self/status') if li.startswith('VmHWM')][0].split()[1]"
    code = (
        "import json, sys\n"
        "from harness.scenario import run_scenario\n"
        "result = run_scenario(sys.argv[1], 'once')\n"
        f"print(json.dumps([result.final.error.message, int({peak})]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=project,
    )
    message, peak_kib = json.loads(done.stdout.splitlines()[-1])
    alone = subprocess.run(
        [sys.executable, "-c", f"import harness.scenario; print({peak})"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert message.endswith("(its last line on stderr: \\x1b[31mnotes: gave up)"), message
    assert (peak_kib - int(alone.stdout)) // 1024 < 100, (peak_kib, alone.stdout)


def test_a_called_tool_name_with_escape_codes_is_printed_harmlessly_in_a_failure(project):
    # The name a model (or a target calling harness's MCP server) gave a call is printed
    # in the failure's trajectory: escaped, never acted on by the terminal.
    path = project / "scenarios" / "odd.scenario.yaml"
    path.write_text(
        "input: go\n"
        "llm:\n"
        "  script:\n"
        '    - tool_calls: [{"\\e[2J\\e[31mpwned": {}}]\n      unknown_tools: true\n'
        "    - content: done\n"
        "expect:\n"
        "  termination: max_iterations\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=project,
    )
    said = done.stdout + done.stderr
    assert done.returncode == 1, said
    assert "\x1b" not in said, said
    assert "llm#1 -> \\x1b[2J\\x1b[31mpwned" in said, said
