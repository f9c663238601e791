"""What does serving a scenario's tools over MCP cost? (docs/mcp.md)

One client (the ``mcp`` SDK's own ``Client`` over streamable HTTP) makes N calls of one
tool, ``lookup(key)`` with a new key each call, against two servers, side by side:

- **harness**: a scenario's stub (``returns: "value of {{ args.key }}"``) served by
  harness's MCP server (``harness.mcp``: the SDK's low-level ``Server``), each call run as
  the own loop runs one (arguments validated, simulated clock, the template rendered) and
  observed into a run (``harness.external.Observation``: the tool-call record, the
  ``mcp_call`` and ``action_executed`` events, the hooks) with the built-in plugins;
- **bare**: the SDK's own high-level ``MCPServer`` (formerly FastMCP) with the same tool as
  a Python function, observing nothing.

Both on uvicorn on 127.0.0.1; each time covers server start, the client's session, the N
calls and the stop. Medians of several runs, the sides taking turns. Target: harness at
most 1.3x the bare server at 200 calls.

    python benchmarks/mcp_overhead.py [--runs 5] [--calls 200]
    python -m benchmarks mcp_overhead

Exits 1 when the target is missed. Not a test: timing goals live here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import platform
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

TARGET = 1.3
EMPTY = Path(tempfile.mkdtemp(prefix="harness-bench-"))
SCENARIO = {
    "input": "go",
    "tools": {"lookup": {"parameters": {"key": "str"}, "returns": "value of {{ args.key }}"}},
}


async def client_calls(url: str, calls: int) -> None:
    """The client: one session, ``calls`` calls, each answer checked."""
    from mcp import Client

    async with Client(url) as client:
        for k in range(calls):
            result = await client.call_tool("lookup", {"key": f"k{k}"})
            assert getattr(result.content[0], "text", None) == f"value of k{k}", result


@contextlib.contextmanager
def bare_server() -> Iterator[str]:
    """The SDK's MCPServer with the same tool, on uvicorn in a thread; its URL."""
    import uvicorn
    from mcp.server.mcpserver import MCPServer

    from harness._asgi import listening_sockets

    server = MCPServer("bare", log_level="WARNING")

    @server.tool()
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"

    sockets = listening_sockets("127.0.0.1", 0)
    port = sockets[0].getsockname()[1]
    app = server.streamable_http_app(host="127.0.0.1")
    # "critical": the forced stop cancels the lifespan, which uvicorn logs as an error.
    config = uvicorn.Config(app, log_level="critical", lifespan="on", access_log=False)
    userver = uvicorn.Server(config)
    thread = threading.Thread(target=userver.run, kwargs={"sockets": sockets}, daemon=True)
    thread.start()
    while not userver.started:
        thread.join(0.01)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        userver.should_exit = True
        userver.force_exit = True
        thread.join(15)


@contextlib.contextmanager
def harness_server() -> Iterator[tuple[str, Any]]:
    """The scenario's stub on harness's MCP server, observed; its URL and the run."""
    from harness._config import AgentConfig
    from harness._plugins import discover
    from harness.external._observe import Observation
    from harness.mcp._hosting import serving_http
    from harness.scenario._loader import build_tools
    from harness.scenario._mcp_tools import served_tools
    from harness.scenario._schema import Scenario

    scenario = Scenario.model_validate(SCENARIO)
    server = served_tools(scenario, build_tools(scenario))
    observation = Observation(discover(EMPTY), AgentConfig())
    server.observer = observation
    observation.begin()
    with serving_http(server) as url:
        yield url, observation.run


def timed(side: str, calls: int) -> float:
    """One run of ``side``: seconds, server start to stop."""
    gc.collect()
    start = time.perf_counter()
    if side == "bare":
        with bare_server() as url:
            asyncio.run(client_calls(url, calls))
    else:
        with harness_server() as (url, run):
            asyncio.run(client_calls(url, calls))
        records = run.records
        assert len(records) == calls and all(r.status == "ok" for r in records)
    return time.perf_counter() - start


def main() -> bool:
    """Measure both sides; True when the target is met."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()

    timed("bare", 5), timed("harness", 5)  # warm-up: imports, first connections
    times: dict[str, list[float]] = {"bare": [], "harness": []}
    for _ in range(args.runs):
        for side in times:
            times[side].append(timed(side, args.calls))
    bare, ours = (statistics.median(times[s]) for s in ("bare", "harness"))
    ratio = ours / bare
    print(f"{args.calls} calls, median of {args.runs} runs (min in brackets):")
    for side, median in (("bare MCPServer", bare), ("harness", ours)):
        low = min(times["bare" if side.startswith("bare") else "harness"])
        print(f"  {side:15} {median * 1000:8.0f} ms  ({low * 1000:.0f} ms)")
    met = ratio <= TARGET
    print(
        f"  harness / bare  {ratio:8.2f}x  (target at most {TARGET}x: {'met' if met else 'MISSED'})"
    )
    versions = ", ".join(f"{d} {metadata.version(d)}" for d in ("mcp", "uvicorn", "starlette"))
    print(f"  CPython {platform.python_version()}, {versions}")
    return met


if __name__ == "__main__":
    raise SystemExit(0 if main() else 1)
