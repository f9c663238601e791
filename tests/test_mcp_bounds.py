"""MCP under attack, both ways, over real connections on 127.0.0.1 (docs/mcp.md#limits):
`harness mcp-serve` (and the MCP server of a target's run) holds its clients to harness's
server limits and its sessions to a number and an idle time, a held stream included; as
a client, harness bounds a server's `tools/list` pages and its stderr, and prints the
names a server gives harmlessly."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from harness.asgi import ServerLimits

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
    from harness.mcp.hosting import serving_http
    from test_mcp import served

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


