"""What does serving each model wire cost beside Chat Completions? (docs/wires.md: one
script, every wire)

One script of N tool-call rounds (one call a round, new arguments each time) and a final
answer is served by ``harness serve`` (its app on uvicorn, in a thread, on 127.0.0.1, as
``running_server`` starts it) to a client that sends the same conversation on every wire:

- **openai-chat**: ``POST /v1/chat/completions``, messages with ``tool_calls`` and ``tool``
  results (``stream: true`` when streamed);
- **openai-responses**: ``POST /v1/responses``, ``input`` items ``function_call`` and
  ``function_call_output`` (the whole history each time, ``store: false``);
- **anthropic**: ``POST /v1/messages``, content blocks ``tool_use`` and ``tool_result``;
- **gemini**: ``POST /v1beta/models/m:generateContent`` (``:streamGenerateContent?alt=sse``
  when streamed), contents with ``functionCall`` and ``functionResponse`` parts.

Each request carries the whole history, as an agent's does, so the server parses,
fit-checks and matches a growing body. The client is plain httpx sending bodies encoded
before the clock starts, the same work on every wire, so the difference is the server's.
Every answer is checked after the clock stops (read with the wire's own reader: the
round's call and its arguments, then the final text). Each time covers the whole run,
server start and stop included. Wires and modes take turns within each repetition (the
order of the wires rotating from one repetition to the next), so a burst of load from
other processes hits them alike; a wire's ratio is the median over repetitions of its
time divided by Chat Completions' time in the same repetition. The process's CPU time
(client and server threads) is shown beside the wall clock: other jobs on a shared
machine disturb it less.

Target: every wire at most 1.2x the Chat Completions path, whole and streamed.

    python benchmarks/wire_serving.py [--runs 7] [--rounds 100]
    python -m benchmarks wire_serving

Exits 1 when a target is missed. Not a test: timing goals live here.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import time
from collections.abc import Callable
from importlib import metadata
from typing import Any

TARGET = 1.2
BASE = "openai-chat"
SCHEMA = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}
QUESTION = "Look up every key."
ANSWER = "All keys looked up."

Requests = list[tuple[str, dict[str, Any]]]


def script(rounds: int) -> list[dict[str, Any]]:
    """N rounds of one call each (other arguments every time), then the answer."""
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"id": f"call_{i}", "name": "lookup", "arguments": {"key": f"k{i}"}}]}
        for i in range(rounds)
    ]
    return [*steps, {"content": ANSWER}]


def chat_requests(rounds: int, stream: bool) -> Requests:
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


def responses_requests(rounds: int, stream: bool) -> Requests:
    """(path, body) of each Responses API request of the run (no server-side chain)."""
    tools = [{"type": "function", "name": "lookup", "parameters": SCHEMA}]
    items: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    out = []
    for i in range(rounds + 1):
        body = {"model": "m", "input": list(items), "tools": tools, "stream": stream}
        out.append(("/v1/responses", {**body, "store": False}))
        arguments = json.dumps({"key": f"k{i}"})
        call = {"type": "function_call", "call_id": f"call_{i}", "name": "lookup"}
        items.append({**call, "arguments": arguments})
        output = {"type": "function_call_output", "call_id": f"call_{i}"}
        items.append({**output, "output": f"value {i}"})
    return out


def anthropic_requests(rounds: int, stream: bool) -> Requests:
    """(path, body) of each Anthropic Messages request of the run."""
    tools = [{"name": "lookup", "input_schema": SCHEMA}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    out = []
    for i in range(rounds + 1):
        body = {"model": "m", "max_tokens": 1024, "messages": list(messages), "tools": tools}
        out.append(("/v1/messages", {**body, "stream": stream}))
        use = {"type": "tool_use", "id": f"call_{i}", "name": "lookup", "input": {"key": f"k{i}"}}
        messages.append({"role": "assistant", "content": [use]})
        result = {"type": "tool_result", "tool_use_id": f"call_{i}", "content": f"value {i}"}
        messages.append({"role": "user", "content": [result]})
    return out


def gemini_requests(rounds: int, stream: bool) -> Requests:
    """(path, body) of each Gemini request of the run."""
    tools = [{"functionDeclarations": [{"name": "lookup", "parametersJsonSchema": SCHEMA}]}]
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": QUESTION}]}]
    method = ":streamGenerateContent?alt=sse" if stream else ":generateContent"
    out = []
    for i in range(rounds + 1):
        out.append((f"/v1beta/models/m{method}", {"contents": list(contents), "tools": tools}))
        call = {"id": f"call_{i}", "name": "lookup", "args": {"key": f"k{i}"}}
        contents.append({"role": "model", "parts": [{"functionCall": call}]})
        answer = {"id": f"call_{i}", "name": "lookup", "response": {"result": f"value {i}"}}
        contents.append({"role": "user", "parts": [{"functionResponse": answer}]})
    return out


WIRES: dict[str, Callable[[int, bool], Requests]] = {
    "openai-chat": chat_requests,
    "openai-responses": responses_requests,
    "anthropic": anthropic_requests,
    "gemini": gemini_requests,
}
# Every SDK's key header, on every request: the server ignores them alike.
HEADERS = {
    "content-type": "application/json",
    "authorization": "Bearer x",
    "x-api-key": "x",
    "anthropic-version": "2023-06-01",
    "x-goog-api-key": "x",
}


def check(wire: str, rounds: int, answers: list[tuple[int, bytes]]) -> None:
    """Each answer holds its round's call (or, last, the final text), read by the wire."""
    from harness.wires import WIRES as READERS
    from harness.wires import read_answer

    reader = next(w for w in READERS if w.name == wire)
    for i, (status, raw) in enumerate(answers):
        reply = read_answer(reader, raw) if status == 200 else None
        if reply is None:
            raise SystemExit(f"{wire} request {i + 1}: HTTP {status}: {raw[:300]!r}")
        if i < rounds:
            calls = [(name, json.loads(args or "{}")) for _, name, args in reply.tool_calls]
            ok = calls == [("lookup", {"key": f"k{i}"})]
        else:
            ok = reply.content == ANSWER and not reply.tool_calls
        if not ok:
            raise SystemExit(f"{wire} request {i + 1}: unexpected answer {raw[:300]!r}")


def time_run(wire: str, rounds: int, stream: bool) -> tuple[float, float]:
    """Seconds to serve one whole run on ``wire``, server start and stop included: wall
    clock, and the CPU time of this process (client and server threads)."""
    import httpx

    from harness.serve import running_server

    # Bodies are encoded before the clock starts: the client's share is only sending them.
    requests = [(p, json.dumps(b).encode()) for p, b in WIRES[wire](rounds, stream)]
    answers: list[tuple[int, bytes]] = []
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    with running_server(script(rounds)) as url, httpx.Client(timeout=60) as client:
        root = url.removesuffix("/v1")
        for path, body in requests:
            answer = client.post(root + path, content=body, headers=HEADERS)
            answers.append((answer.status_code, answer.content))
    took = time.perf_counter() - start, time.process_time() - cpu
    check(wire, rounds, answers)
    return took


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def measure(rounds: int, runs: int) -> dict[tuple[str, bool], list[tuple[float, float]]]:
    """``runs`` times of every wire and mode, taking turns (the wires' order rotating)."""
    names = list(WIRES)
    samples: dict[tuple[str, bool], list[tuple[float, float]]] = {}
    for run in range(runs):
        order = names[run % len(names) :] + names[: run % len(names)]
        for stream in (False, True):
            for wire in order:
                samples.setdefault((wire, stream), []).append(time_run(wire, rounds, stream))
    return samples


def _paired(times: list[float], base: list[float]) -> float:
    return statistics.median(t / b for t, b in zip(times, base, strict=True))


def report(rounds: int, samples: dict[tuple[str, bool], list[tuple[float, float]]]) -> float:
    """Print one size's table; the worst paired wall-clock ratio of a wire to Chat
    Completions. CPU time, which other jobs on a shared machine disturb less, is shown
    beside it."""
    worst = 0.0
    for stream in (False, True):
        base = [wall for wall, _ in samples[(BASE, stream)]]
        base_cpu = [cpu for _, cpu in samples[(BASE, stream)]]
        for wire in WIRES:
            times = [wall for wall, _ in samples[(wire, stream)]]
            cpu = [cpu for _, cpu in samples[(wire, stream)]]
            paired = _paired(times, base)
            if wire != BASE:
                worst = max(worst, paired)
            print(
                f"| {rounds} | {'streamed' if stream else 'whole'} | {wire} "
                f"| {_ms(statistics.median(times))} / {_ms(min(times))} "
                f"| {statistics.median(times) / statistics.median(base):.2f}x "
                f"| **{paired:.2f}x** | {_ms(statistics.median(cpu))} "
                f"| {_paired(cpu, base_cpu):.2f}x |"
            )
    return worst


def main() -> int:
    """Time every wire, whole and streamed, print the table; 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="repetitions of every cell")
    parser.add_argument("--rounds", type=int, nargs="+", default=[100], help="rounds per run")
    args = parser.parse_args()
    for wire in WIRES:  # imports and first-request costs out of the figures
        time_run(wire, 3, False)
        time_run(wire, 3, True)
    print(
        "| rounds | answers | wire | time (median / min) | / Chat (medians) "
        "| / Chat (paired, median) | CPU (median) | CPU / Chat (paired) |"
    )
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    worst = 0.0
    for rounds in args.rounds:
        worst = max(worst, report(rounds, measure(rounds, args.runs)))
    versions = ", ".join(f"{d} {metadata.version(d)}" for d in ("httpx", "uvicorn", "starlette"))
    print(f"\nCPython {platform.python_version()}, {versions}; {args.runs} runs a cell")
    met = worst <= TARGET
    verdict = "met" if met else "MISSED"
    print(f"target: every wire at most {TARGET}x Chat Completions: {verdict} ({worst:.2f}x)")
    return 0 if met else 1


if __name__ == "__main__":
    raise SystemExit(main())
