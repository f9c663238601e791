"""How fast is harness's A2A agent server, against a2a-sdk's own minimal echo agent?

Both are served the same way (a FastAPI app on uvicorn, ``harness.a2a.serve_app``, in a
process of their own on 127.0.0.1). The echo agent is a2a-sdk alone: an AgentExecutor
that answers each message with one Message. harness's is ``create_app`` around a
scripted Agent (a fresh LLM source per session; one reply per turn). The same client
sends 100 concurrent sessions of 5 turns each (SendMessage over JSON-RPC, raw httpx so
that client-side work weighs the same on both) and times every turn.

Targets: harness's per-turn latency at most 2x the echo agent's at p50 and at p99; and
its memory flat after the sessions expire: the server's RSS after each round's sessions
expired does not grow from round to round (sessions and their tasks are dropped).

    python -m benchmarks agent_server [--sessions 100] [--turns 5] [--rounds 3]

Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import platform
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx

TTL = 1.0  # seconds: sessions expire quickly so that the memory rounds are short

_SERVER = """\
import sys
from harness.a2a._running import serve_app
kind, ttl = sys.argv[1], float(sys.argv[2])

def started(port):
    print(port, flush=True)

if kind == "harness":
    from harness import Agent
    from harness.a2a import create_app

    def make():
        return Agent([{"content": f"reply {n}"} for n in range(1, 6)])

    app = create_app(make, session_ttl=ttl, max_sessions=100_000)
else:
    from a2a.helpers import new_text_message
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore
    from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
    from fastapi import FastAPI

    class Echo(AgentExecutor):
        async def execute(self, context, event_queue):
            await event_queue.enqueue_event(
                new_text_message("echo: " + context.get_user_input(), context_id=context.context_id)
            )

        async def cancel(self, context, event_queue):
            pass

    card = AgentCard(
        name="echo", description="echo", version="1.0",
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC",
                                             url="http://127.0.0.1/", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="echo", tags=["echo"])],
    )
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(),
                                    agent_card=card)
    app = FastAPI()
    for route in [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]:
        app.router.routes.append(route)
serve_app(app, "127.0.0.1", 0, log_level="warning", on_started=started)
"""


def rss_mb(pid: int) -> float:
    """A process's resident memory, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Server:
    """One agent server in a process of its own."""

    def __init__(self, kind: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        self.process = subprocess.Popen(
            [sys.executable, "-c", _SERVER, kind, str(TTL)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        port = self.process.stdout.readline().strip()
        if not port.isdigit():
            self.stop()
            raise RuntimeError(f"the {kind} server did not start")
        self.url = f"http://127.0.0.1:{port}/"

    def rss_mb(self) -> float:
        """The server's resident memory, in MiB."""
        return rss_mb(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def _request(text: str, context_id: str) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_USER",
                "parts": [{"text": text}],
                "contextId": context_id,
            }
        },
    }


async def load(url: str, sessions: int, turns: int) -> list[float]:
    """Seconds of each turn of ``sessions`` concurrent sessions of ``turns`` turns."""
    times: list[float] = []
    # Idle connections are dropped by the client well before the server's keep-alive
    # timeout closes them: reusing one the server is closing fails with a ReadError.
    limits = httpx.Limits(
        max_connections=sessions, max_keepalive_connections=sessions, keepalive_expiry=2.0
    )
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:

        async def session() -> None:
            context = str(uuid.uuid4())
            headers = {"A2A-Version": "1.0"}
            for turn in range(turns):
                started = time.perf_counter()
                response = await http.post(
                    url, json=_request(f"turn {turn}", context), headers=headers
                )
                times.append(time.perf_counter() - started)
                body = response.json()
                assert "result" in body, body

        await asyncio.gather(*(session() for _ in range(sessions)))
    return times


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100), nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def measure(kind: str, sessions: int, turns: int, rounds: int) -> tuple[list[float], list[float]]:
    """(per-turn seconds of every round after a warm-up, RSS after each round expired)."""
    server = Server(kind)
    try:
        asyncio.run(load(server.url, 10, turns))  # warm-up: imports, first sessions
        times: list[float] = []
        memory: list[float] = []
        for _ in range(rounds):
            times += asyncio.run(load(server.url, sessions, turns))
            time.sleep(TTL + 0.2)  # real idle time: the sessions' TTL runs out
            httpx.get(server.url + ".well-known/agent-card.json")  # a request sweeps them
            memory.append(server.rss_mb())
        return times, memory
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(
        f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs; "
        f"{args.sessions} concurrent sessions x {args.turns} turns, {args.rounds} rounds"
    )
    figures = {}
    for kind in ("echo", "harness"):
        times, memory = measure(kind, args.sessions, args.turns, args.rounds)
        p50, p99 = percentile(times, 50) * 1000, percentile(times, 99) * 1000
        figures[kind] = (p50, p99, memory)
        rss = ", ".join(f"{m:.1f}" for m in memory)
        print(
            f"{kind:>8}: per turn p50 {p50:.1f} ms, p99 {p99:.1f} ms, mean "
            f"{statistics.mean(times) * 1000:.1f} ms ({len(times)} turns); RSS after each "
            f"round expired: {rss} MiB"
        )
    echo, ours = figures["echo"], figures["harness"]
    ratio50, ratio99 = ours[0] / echo[0], ours[1] / echo[1]
    memory = ours[2]
    # Flat: after the first round (allocator pools, caches warm), no round adds more
    # than 5% to the one before it.
    growth = max((b - a) / a for a, b in itertools.pairwise(memory[1:])) if len(memory) > 2 else 0.0
    ok_latency = ratio50 <= 2 and ratio99 <= 2
    ok_memory = growth <= 0.05
    print(
        f"harness / echo: p50 {ratio50:.2f}x, p99 {ratio99:.2f}x (target <= 2x) "
        f"{'met' if ok_latency else 'MISSED'}; memory growth per round after the first "
        f"{growth * 100:+.1f}% (target <= 5%) {'met' if ok_memory else 'MISSED'}"
    )
    return 0 if ok_latency and ok_memory else 1


if __name__ == "__main__":
    raise SystemExit(main())
