"""Does harness's A2A agent server keep its memory and its connections bounded under attack?

The server (``create_app`` around a scripted Agent, served by ``harness.a2a.serve_app``
with its default limits) runs in a process of its own on 127.0.0.1, and one client
attacks it in rounds, reading the server's RSS (and its open files) after each round:

- ``large session``: one session is sent 40 messages of 200 KB (it fills up to
  ``--max-session`` and the rest are refused), 40 messages of 3.9 MB and 40 messages
  whose contextId is 3.9 MB (all refused);
- ``many sessions``: twice ``--max-sessions`` new sessions, each sent 6 messages of 200 KB
  (the least recently used are dropped to make room);
- ``slow headers``: 400 connections that send half a request head and then nothing,
  until the server has closed them all (its request deadline); a normal request is
  answered while they are held.

Target: the server's RSS flat under each attack, within 20% of what it was after the
attack's first round; the slow connections all closed, the server's open files back to
where they were, and a line or two of log, not one per connection.

    python -m benchmarks agent_server_attack [--rounds 4] [--max-sessions 100] [--against DIR]

``--against DIR`` serves the harness of another checkout (an older commit, to measure
the attacks before a change).

Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx

from benchmarks.agent_server import rss_mb

KB, MB = 1000, 1000 * 1000

_SERVER = """\
import sys
from harness import Agent
from harness.a2a import create_app
from harness.a2a._running import serve_app

def make():
    return Agent([{"content": "noted"}] * 200)

def started(port):
    print(port, flush=True)

app = create_app(make, max_sessions=int(sys.argv[1]))
serve_app(app, "127.0.0.1", 0, log_level="warning", on_started=started)
"""


class Server:
    """The agent server in a process of its own; its stderr is its log."""

    def __init__(self, max_sessions: int, log: Path, code: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(code)}
        self.log = log.open("w")
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVER, str(max_sessions)],
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
            cwd=code,  # python -c imports from its current folder first
        )
        port = self.process.stdout.readline().strip()
        if not port.isdigit():
            self.stop()
            raise RuntimeError(f"the server did not start (see {log})")
        self.port = int(port)
        self.url = f"http://127.0.0.1:{port}/"

    def rss_mb(self) -> float:
        """The server's resident memory, in MiB."""
        return rss_mb(self.process.pid)

    def files(self) -> int:
        """Files (sockets included) the server has open."""
        return len(os.listdir(f"/proc/{self.process.pid}/fd"))

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()


def _request(text: str, context_id: str) -> dict:
    message = {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": [{"text": text}]}
    if context_id:
        message["contextId"] = context_id
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


async def _send(http: httpx.AsyncClient, url: str, text: str, context: str) -> dict:
    headers = {"A2A-Version": "1.0"}
    response = await http.post(url, json=_request(text, context), headers=headers)
    return response.json()


async def large_session(url: str, state: dict) -> tuple[int, int]:
    """One round against one session: (messages answered, refused)."""
    answered = refused = 0
    async with httpx.AsyncClient(timeout=300) as http:
        for n in range(40):
            context = state.get("context", "")
            answer = await _send(http, url, f"{n} " + "x" * (200 * KB), context)
            if "result" in answer:
                answered += 1
                state.setdefault("context", answer["result"]["task"]["contextId"])
            else:
                refused += 1
        for _ in range(40):
            answer = await _send(http, url, "y" * int(3.9 * MB), state["context"])
            refused += "error" in answer
            answer = await _send(http, url, "hello", "c" * int(3.9 * MB))
            refused += "error" in answer
    return answered, refused


async def many_sessions(url: str, sessions: int) -> tuple[int, int]:
    """One round of ``sessions`` new sessions of 6 messages each: (answered, refused)."""
    counts = [0, 0]
    limits = httpx.Limits(max_connections=20, keepalive_expiry=2.0)
    async with httpx.AsyncClient(timeout=300, limits=limits) as http:
        gate = asyncio.Semaphore(20)

        async def one() -> None:
            async with gate:
                context = ""
                for n in range(6):
                    answer = await _send(http, url, f"{n} " + "z" * (200 * KB), context)
                    counts["result" not in answer] += 1
                    if "result" in answer and not context:
                        context = answer["result"]["task"]["contextId"]

        await asyncio.gather(*(one() for _ in range(sessions)))
    return counts[0], counts[1]


def slow_headers(server: Server, count: int) -> tuple[bool, float, int]:
    """One round of ``count`` slow connections: (all closed by the server, seconds a
    normal request took meanwhile, seconds until the last was closed)."""
    started = time.perf_counter()
    held = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=60)
        sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: app")
        held.append(sock)
    asked = time.perf_counter()
    answered = httpx.get(server.url + ".well-known/agent-card.json", timeout=60).status_code
    took = time.perf_counter() - asked
    closed = 0
    # Three times the server's request deadline: what is open then is held.
    deadline = time.perf_counter() + 30
    for sock in held:
        try:
            sock.settimeout(max(0.01, deadline - time.perf_counter()))
            while sock.recv(4096):
                pass
            closed += 1
        except ConnectionResetError:
            closed += 1
        except TimeoutError:
            pass
        finally:
            sock.close()
    return closed == count and answered == 200, took, time.perf_counter() - started


def flat(rss: list[float]) -> float:
    """How far above the first round's RSS the later rounds went (0.1 = 10%)."""
    return max(rss[1:], default=rss[0]) / rss[0] - 1


def attack(name: str, rounds: int, max_sessions: int, log: Path, code: Path) -> bool:
    """Run one attack on a fresh server; print its figures; whether the target was met."""
    server = Server(max_sessions, log, code)
    try:
        idle, files = server.rss_mb(), server.files()
        rss, notes = [], []
        state: dict = {}
        for _ in range(rounds):
            if name == "large session":
                answered, refused = asyncio.run(large_session(server.url, state))
                notes.append(f"{answered} answered, {refused} refused")
            elif name == "many sessions":
                answered, refused = asyncio.run(many_sessions(server.url, 2 * max_sessions))
                notes.append(f"{answered} answered, {refused} refused")
            else:
                closed, took, seconds = slow_headers(server, 400)
                notes.append(
                    f"{'all' if closed else 'NOT all'} closed in {seconds:.1f} s, a normal "
                    f"request meanwhile {took * 1000:.0f} ms, {server.files()} files open"
                )
                if not closed:
                    state["held"] = True
            rss.append(server.rss_mb())
        after_files = server.files()
    finally:
        server.stop()
    growth = flat(rss)
    ok = growth <= 0.20 and not state.get("held")
    lines = len(log.read_text().splitlines())
    if name == "slow headers":
        ok = ok and after_files <= files + 2 and lines <= 4
    print(f"{name}: idle {idle:.1f} MiB, {files} files open")
    for n, (mib, note) in enumerate(zip(rss, notes, strict=True), 1):
        print(f"  round {n}: RSS {mib:.1f} MiB ({note})")
    print(
        f"  RSS after the first round: {growth * 100:+.1f}% at most (target <= 20%); "
        f"files open at the end {after_files}; {lines} log lines: {'met' if ok else 'MISSED'}"
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--max-sessions", type=int, default=100)
    parser.add_argument("--against", type=Path, default=Path(__file__).resolve().parents[1])
    args = parser.parse_args()
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs; "
        f"--max-sessions {args.max_sessions}, other bounds at their defaults; "
        f"{args.rounds} rounds per attack"
    )
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"agent-server-attack-{os.getpid()}.log"
    results = [
        attack(name, args.rounds, args.max_sessions, log, args.against.resolve())
        for name in ("large session", "many sessions", "slow headers")
    ]
    log.unlink(missing_ok=True)
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
