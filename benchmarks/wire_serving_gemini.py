"""What does serving the Gemini API cost next to Chat Completions? (docs/wires.md)

One script of N tool-call rounds and a final answer is served by ``harness serve`` (in a
thread, on 127.0.0.1) to a client that sends the same conversation on each wire: Chat
Completions (``POST /v1/chat/completions``, messages with ``tool_calls`` and ``tool``
results) and Gemini (``POST /v1beta/models/m:generateContent``, contents with
``functionCall`` and ``functionResponse`` parts), whole and streamed
(``stream: true`` / ``:streamGenerateContent?alt=sse``). Each request carries the whole
history, as an agent's does, so the server parses, fit-checks and matches a growing body.

The client is plain httpx with prebuilt bodies, the same work on both wires, so the
difference is the server's. Each time covers the whole run, server start and stop
included; wires and modes take turns, medians of ``--runs``. Target: each wire at most
1.2x the Chat Completions path.

    python benchmarks/wire_serving_gemini.py [--runs 7] [--rounds 100]
    python -m benchmarks wire_serving_gemini

Exits 1 when a target is missed. Not a test: timing goals live here.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from typing import Any

SCHEMA = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}
QUESTION = "Look up every key."
ANSWER = "All keys looked up."


def script(rounds: int) -> list[dict[str, Any]]:
    """N rounds of one call each (other arguments every time), then the answer."""
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"id": f"call_{i}", "name": "lookup", "arguments": {"key": f"k{i}"}}]}
        for i in range(rounds)
    ]
    return [*steps, {"content": ANSWER}]


def chat_bodies(rounds: int, stream: bool) -> list[tuple[str, dict[str, Any]]]:
    """(path, body) of each Chat Completions request of the run."""
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": SCHEMA}}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    out = []
    for i in range(rounds + 1):
        body = {"model": "m", "messages": list(messages), "tools": tools, "stream": stream}
        out.append(("/v1/chat/completions", body))
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": "lookup", "arguments": json.dumps({"key": f"k{i}"})},
        }
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": f"value {i}"})
    return out


def gemini_bodies(rounds: int, stream: bool) -> list[tuple[str, dict[str, Any]]]:
    """(path, body) of each Gemini request of the run."""
    tools = [{"functionDeclarations": [{"name": "lookup", "parametersJsonSchema": SCHEMA}]}]
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": QUESTION}]}]
    path = (
        "/v1beta/models/m:streamGenerateContent?alt=sse"
        if stream
        else "/v1beta/models/m:generateContent"
    )
    out = []
    for i in range(rounds + 1):
        out.append((path, {"contents": list(contents), "tools": tools}))
        call = {"id": f"call_{i}", "name": "lookup", "args": {"key": f"k{i}"}}
        contents.append({"role": "model", "parts": [{"functionCall": call}]})
        answer = {"id": f"call_{i}", "name": "lookup", "response": {"result": f"value {i}"}}
        contents.append({"role": "user", "parts": [{"functionResponse": answer}]})
    return out


WIRES: dict[str, Callable[[int, bool], list[tuple[str, dict[str, Any]]]]] = {
    "chat": chat_bodies,
    "gemini": gemini_bodies,
}


def time_run(wire: str, rounds: int, stream: bool) -> float:
    """Seconds to serve one whole run on ``wire``, server start and stop included."""
    import httpx

    from harness.serve import running_server

    # Bodies are encoded before the clock starts: the client's share is only sending them.
    requests = [(p, json.dumps(b).encode()) for p, b in WIRES[wire](rounds, stream)]
    headers = {"content-type": "application/json", "x-goog-api-key": "x"}
    start = time.perf_counter()
    with running_server(script(rounds)) as url, httpx.Client(timeout=60) as client:
        root = url.removesuffix("/v1")
        for i, (path, body) in enumerate(requests):
            answer = client.post(root + path, content=body, headers=headers)
            expected = f"k{i}" if i < rounds else "up."
            if answer.status_code != 200 or expected not in answer.text:
                raise SystemExit(f"{wire} request {i + 1}: HTTP {answer.status_code} {answer.text}")
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per wire and mode (median)")
    parser.add_argument("--rounds", type=int, default=100, help="tool-call rounds per run")
    args = parser.parse_args()

    for wire in WIRES:  # warm up imports and the plugin manager
        time_run(wire, 5, False)
    samples: dict[tuple[str, bool], list[float]] = {}
    # Wires and modes take turns, so a burst of load from other processes hits all alike.
    for _ in range(args.runs):
        for stream in (False, True):
            for wire in WIRES:
                samples.setdefault((wire, stream), []).append(time_run(wire, args.rounds, stream))
    ok = True
    requests = args.rounds + 1
    for stream in (False, True):
        base = statistics.median(samples[("chat", stream)])
        for wire in WIRES:
            took = statistics.median(samples[(wire, stream)])
            ratio = took / base
            ok = ok and ratio <= 1.2
            print(
                f"{'streamed' if stream else 'whole':>8} {wire:>8}: {took * 1000:8.1f} ms "
                f"({took / requests * 1e6:6.0f} us/request), {ratio:.2f}x Chat Completions"
            )
    print(f"target: every wire <= 1.2x Chat Completions; {args.rounds} rounds, {args.runs} runs")
    print(f"Python {platform.python_version()}, {platform.machine()}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
