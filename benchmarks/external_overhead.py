"""What does observing an external agent cost? (docs/external.md's targets)

A raw-SDK agent loop (the official ``openai`` client, Chat Completions, one tool call per
round, each with other arguments) runs N rounds and a final answer twice:

- **harness**: as a scenario target (``harness.external.run_target``): harness's own
  server answers from the script, and every request and reply is observed and rebuilt
  into a RunResult (events, tool-call records, results read from the next request);
- **bare mock**: against a minimal mock server written here (Starlette on uvicorn, like
  harness's server) that returns the same replies and observes nothing.

Both times cover the whole run, server start and stop included. It prints the median per
size, the ratio harness / bare at 200 rounds (target: at most 1.5), and each side's growth
from 100 to 400 rounds, time(400) / time(100) (both grow: each request carries the whole
history); target: harness's growth at most 1.2x the bare mock's.

    python benchmarks/external_overhead.py [--runs 5] [--rounds 200] [--sizes 100 400]
                                           [--client post|create]
    python -m benchmarks external_overhead

Exits 1 when a target is missed. Not a test: timing goals live here.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EMPTY = Path(tempfile.mkdtemp(prefix="harness-bench-"))
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "parameters": {"type": "object", "properties": {"key": {"type": "string"}}},
        },
    }
]


# How the agent sends its requests: `post` (default) is the SDK's own low-level call,
# which sends the body as given; `create` is the typed method, whose parameter transform
# walks every message of every request (at 150 rounds it is 88% of the client's time),
# which hides everything on the server's side.
CLIENT = {"mode": "post"}


def agent(question: str, base_url: str) -> str:
    """The agent under test: a plain loop on the raw SDK."""
    import openai
    from openai.types.chat import ChatCompletion

    client = openai.OpenAI(base_url=base_url, api_key="x", max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    while True:
        if CLIENT["mode"] == "create":
            reply = client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        else:
            body = {"model": "m", "messages": messages, "tools": TOOLS}
            reply = client.post("/chat/completions", body=body, cast_to=ChatCompletion)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            client.close()
            return message.content or ""
        for call in message.tool_calls:
            key = json.loads(call.function.arguments)["key"]
            messages.append({"role": "tool", "tool_call_id": call.id, "content": f"value of {key}"})


def script(rounds: int) -> list[dict[str, Any]]:
    """N rounds of one call (other arguments each time: no stagnation), then an answer."""
    steps: list[dict[str, Any]] = [
        {"tool_calls": [{"lookup": {"key": f"item-{i}"}}]} for i in range(rounds)
    ]
    return [*steps, {"content": "done"}]


# -- the bare mock ------------------------------------------------------------------------------


def _reply(n: int, step: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.get("content")}
    finish = "stop"
    if "tool_calls" in step:
        ((name, args),) = step["tool_calls"][0].items()
        message["tool_calls"] = [
            {
                "id": f"call_{n}_0",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ]
        finish = "tool_calls"
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


def bare_app(steps: list[dict[str, Any]]) -> Any:
    """The minimal mock: reply k+1 to a request holding k assistant messages."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    replies = [_reply(n, step) for n, step in enumerate(steps, 1)]

    async def complete(request: Any) -> Any:
        body = await request.json()
        k = sum(1 for m in body["messages"] if m.get("role") == "assistant")
        return JSONResponse(replies[k])

    return Starlette(routes=[Route("/v1/chat/completions", complete, methods=["POST"])])


def time_bare(rounds: int) -> float:
    from harness.serve import running_app

    app = bare_app(script(rounds))
    gc.collect()
    started = time.perf_counter()
    with running_app(app) as url:
        answer = agent("go", url)
    elapsed = time.perf_counter() - started
    assert answer == "done"
    return elapsed


# -- harness ------------------------------------------------------------------------------------


def time_harness(rounds: int) -> float:
    from harness._plugins import discover
    from harness.external import TargetSpec, run_target
    from harness.llm._script import parse_step
    from harness.serve import create_app

    steps = [parse_step(i, s) for i, s in enumerate(script(rounds))]
    spec = TargetSpec("python", "benchmarks.external_overhead:agent", timeout=600)
    # Built-in plugins only: this repository's own (a JSONL trace observer among them)
    # are not harness's cost.
    plugins = discover(EMPTY)
    gc.collect()
    started = time.perf_counter()
    result = asyncio.run(
        run_target(spec, create_app(steps), input="go", plugins=plugins, root=ROOT)
    )
    elapsed = time.perf_counter() - started
    assert result.termination == "completed", result.final
    assert result.llm_calls == rounds + 1 and len(result.tool_calls) == rounds
    assert all(c.status == "ok" for c in result.tool_calls)
    return elapsed


def _median(samples: list[float]) -> float:
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per size and side (median)")
    parser.add_argument("--rounds", type=int, default=200, help="rounds of the ratio run")
    parser.add_argument("--sizes", type=int, nargs=2, default=[100, 400], metavar=("SMALL", "BIG"))
    parser.add_argument(
        "--client",
        choices=["post", "create"],
        default="post",
        help="the SDK call the agent makes (see CLIENT above)",
    )
    args = parser.parse_args()
    CLIENT["mode"] = args.client

    time_bare(10)  # warm up imports (openai, uvicorn, starlette) and the plugin manager
    time_harness(10)
    sizes = sorted({args.rounds, *args.sizes})
    samples: dict[tuple[str, int], list[float]] = {}
    # Sides and sizes take turns, so a burst of load from other processes hits all alike.
    for _ in range(args.runs):
        for rounds in sizes:
            for side, timer in (("bare", time_bare), ("harness", time_harness)):
                samples.setdefault((side, rounds), []).append(timer(rounds))
    medians = {key: _median(times) for key, times in samples.items()}
    for rounds in sizes:
        bare, harness = medians[("bare", rounds)], medians[("harness", rounds)]
        print(
            f"{rounds:>5} rounds: bare mock {bare * 1000:8.1f} ms, harness {harness * 1000:8.1f} ms"
            f" ({harness / bare:.2f}x; {(harness - bare) / (rounds + 1) * 1e6:6.0f} us/request "
            f"of observation and serving)"
        )
    ratio = medians[("harness", args.rounds)] / medians[("bare", args.rounds)]
    small, big = args.sizes
    bare_growth = medians[("bare", big)] / medians[("bare", small)]
    harness_growth = medians[("harness", big)] / medians[("harness", small)]
    relative = harness_growth / bare_growth
    print(f"harness / bare at {args.rounds} rounds: {ratio:.2f}x (target <= 1.5)")
    print(
        f"growth {small} -> {big} rounds: bare {bare_growth:.2f}x, harness {harness_growth:.2f}x;"
        f" harness's growth / bare's = {relative:.2f} (target <= 1.2)"
    )
    print(f"{args.runs} runs per cell; Python {platform.python_version()}, {platform.machine()}")
    return 0 if ratio <= 1.5 and relative <= 1.2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
