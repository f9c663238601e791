"""Harness against its peers (issue 7): one scripted tool loop in three frameworks.

The loop: N rounds of one tool call (``lookup(i=k)``, a distinct argument each round so
no stagnation check fires), then a text answer. It runs in

- harness: ``Agent(planner="react")`` driven by ``ScriptedLLM``;
- pydantic-ai: ``Agent`` driven by ``FunctionModel`` (a ``ToolCallPart`` each round, then text);
- the OpenAI Agents SDK: ``Agent`` driven by ``agents.testing.ScriptedModel``.

Each timed run builds the tool, the scripted model and the agent, then runs to the answer:
what a test of an agent pays. After every run the tool's own log of the arguments it received
must be exactly ``0..N-1`` and the framework must report N tool calls and the answer "done",
so no framework is timed on a shorter loop than the others. Figures are medians of several
runs after one warm-up run per framework.

The peers are not dependencies of the package. They live in their own virtualenv
(``python -m benchmarks.peers --setup`` makes it); when they cannot be imported here and
that virtualenv exists, the whole comparison runs there, so every framework is timed by the
same interpreter with the same pydantic. A peer that cannot be imported anywhere is skipped
with a message.

    python -m benchmarks peers                      # all sizes, 5 runs each
    python -m benchmarks peers --sizes 50 200 --repeats 3
    python -m benchmarks peers --clock cpu          # CPU time: steadier on a busy machine
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "benchmarks" / ".venv-peers"
REQUIREMENTS = ROOT / "benchmarks" / "requirements-peers.txt"
SIZES = (50, 200, 400)
REPEATS = 5
TARGET_N = 200
TARGET_SPEEDUP = 20.0
PEERS = ("pydantic-ai", "openai-agents")
# Distributions whose versions the report names.
DISTRIBUTIONS = (
    "loop-harness",
    "pydantic",
    "pydantic-core",
    "pydantic-ai-slim",
    "openai-agents",
    "openai",
)


class LoopMismatch(AssertionError):
    """A framework did not run the loop it was asked to run."""


def _check(framework: str, n: int, seen: list[int], tool_calls: int, answer: Any) -> None:
    if seen != list(range(n)) or tool_calls != n or answer != "done":
        raise LoopMismatch(
            f"{framework} at N={n}: the tool received {len(seen)} call(s) "
            f"({'in order' if seen == list(range(len(seen))) else 'out of order'}), the framework "
            f"reported {tool_calls} tool call(s) and the answer {answer!r}; expected {n} calls "
            "with i = 0..N-1 and the answer 'done'"
        )


# -- the loop in each framework --------------------------------------------------------


def run_harness(n: int) -> None:
    """harness: react planner, ScriptedLLM."""
    from harness import Agent, tool
    from harness.llm import ScriptedLLM

    seen: list[int] = []

    @tool
    def lookup(i: int) -> str:
        """Look something up."""
        seen.append(i)
        return f"value {i}"

    steps = [{"tool_calls": [{"lookup": {"i": k}}]} for k in range(n)] + [{"content": "done"}]
    agent = Agent(llm=ScriptedLLM(steps), tools=[lookup], planner="react", max_iterations=n + 5)
    result = agent.run("go")
    ran = sum(1 for record in result.tool_calls if record.status == "ok")
    if result.termination.value != "completed" or result.llm_calls != n + 1:
        raise LoopMismatch(
            f"harness at N={n}: {result.termination.value}, {result.llm_calls} LLM calls"
        )
    _check("harness", n, seen, ran, result.final.content)


def run_pydantic_ai(n: int) -> None:
    """pydantic-ai: FunctionModel returning a ToolCallPart each round, then text."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.usage import UsageLimits

    seen: list[int] = []
    rounds = 0

    def respond(messages: list[Any], info: Any) -> ModelResponse:
        nonlocal rounds
        if rounds < n:
            rounds += 1
            call = ToolCallPart("lookup", {"i": rounds - 1}, tool_call_id=f"call_{rounds - 1}")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(respond))

    @agent.tool_plain
    def lookup(i: int) -> str:
        """Look something up."""
        seen.append(i)
        return f"value {i}"

    # The default limit is 50 requests; the loop needs N + 1.
    result = agent.run_sync("go", usage_limits=UsageLimits(request_limit=n + 5))
    usage = result.usage  # a property since pydantic-ai 2
    if usage.requests != n + 1:
        raise LoopMismatch(f"pydantic-ai at N={n}: {usage.requests} requests")
    _check("pydantic-ai", n, seen, usage.tool_calls, result.output)


def run_openai_agents(n: int) -> None:
    """OpenAI Agents SDK: agents.testing.ScriptedModel, tracing off (no network)."""
    from agents import Agent, RunConfig, Runner, function_tool
    from agents.items import ToolCallOutputItem
    from agents.testing import ScriptedModel, assistant_message, function_call

    seen: list[int] = []

    @function_tool
    def lookup(i: int) -> str:
        """Look something up."""
        seen.append(i)
        return f"value {i}"

    script = [[function_call("lookup", {"i": k}, call_id=f"call_{k}")] for k in range(n)]
    model = ScriptedModel([*script, [assistant_message("done")]])
    agent = Agent(name="bench", model=model, tools=[lookup])
    result = Runner.run_sync(
        agent, "go", max_turns=n + 5, run_config=RunConfig(tracing_disabled=True)
    )
    outputs = sum(1 for item in result.new_items if isinstance(item, ToolCallOutputItem))
    if model.remaining_steps:
        raise LoopMismatch(f"openai-agents at N={n}: {model.remaining_steps} scripted steps left")
    _check("openai-agents", n, seen, outputs, result.final_output)


RUNNERS: dict[str, Callable[[int], None]] = {
    "harness": run_harness,
    "pydantic-ai": run_pydantic_ai,
    "openai-agents": run_openai_agents,
}
MODULES = {"harness": "harness", "pydantic-ai": "pydantic_ai", "openai-agents": "agents.testing"}


# -- measuring ----------------------------------------------------------------------------


def _importable(framework: str) -> str | None:
    """None when the framework imports here, else why not."""
    try:
        __import__(MODULES[framework])
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


# Wall-clock time is what a user waits for. CPU time of the process (all its threads) is
# steadier on a machine shared with other jobs, where waiting for a CPU inflates wall time.
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def measure(
    runner: Callable[[int], None], n: int, repeats: int, clock: str = "wall"
) -> list[float]:
    """Seconds of ``repeats`` runs (garbage collected before each, left on during)."""
    now = CLOCKS[clock]
    times = []
    for _ in range(repeats):
        gc.collect()
        start = now()
        runner(n)
        times.append(now() - start)
    return times


def machine() -> dict[str, Any]:
    """What the figures ran on."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = {}
    for dist in DISTRIBUTIONS:
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "interpreter": sys.executable,
        "packages": versions,
    }


def compare(sizes: list[int], repeats: int, clock: str = "wall") -> dict[str, Any]:
    """Time every importable framework at every size, here in this interpreter."""
    results: dict[str, Any] = {
        "sizes": sizes,
        "repeats": repeats,
        "clock": clock,
        "machine": machine(),
    }
    skipped: dict[str, str] = {}
    timings: dict[str, dict[int, float]] = {}
    for framework, runner in RUNNERS.items():
        reason = _importable(framework)
        if reason is not None:
            skipped[framework] = reason
            print(f"  {framework}: skipped, not importable ({reason})", flush=True)
            continue
        runner(min(sizes))  # warm-up: imports, schema caches, first-call paths
        timings[framework] = {}
        for n in sizes:
            runs = measure(runner, n, repeats, clock)
            median = statistics.median(runs)
            timings[framework][n] = median
            each = ", ".join(f"{t * 1e3:.1f}" for t in runs)
            print(
                f"  {framework:<14} N={n:<4} median {median * 1e3:9.1f} ms  "
                f"({median / n * 1e6:7.1f} us/round; runs {each} ms)",
                flush=True,
            )
    results["timings"] = {f: {str(n): t for n, t in ts.items()} for f, ts in timings.items()}
    results["skipped"] = skipped
    return results


# -- running where the peers are installed ----------------------------------------------


def _venv_python() -> Path | None:
    for candidate in (VENV / "bin" / "python", VENV / "Scripts" / "python.exe"):
        if candidate.exists():
            return candidate
    return None


def setup() -> int:
    """Make the peers' virtualenv and install harness and the peers into it."""
    if _venv_python() is None:
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    python = _venv_python()
    assert python is not None
    command = [str(python), "-m", "pip", "install", "-e", str(ROOT), "-r", str(REQUIREMENTS)]
    print("$", " ".join(command), flush=True)
    return subprocess.run(command, cwd=ROOT).returncode


def _in_venv(sizes: list[int], repeats: int, clock: str) -> dict[str, Any] | None:
    """Run the comparison in the peers' virtualenv; None when there is none to run in."""
    python = _venv_python()
    if python is None or Path(sys.prefix).resolve() == VENV.resolve():
        return None
    print(f"peers are not importable here: running the comparison with {python}", flush=True)
    out = ROOT / "benchmarks" / ".venv-peers" / "last-peers.json"
    command = [
        str(python),
        "-m",
        "benchmarks.peers",
        "--here",
        "--json",
        str(out),
        "--repeats",
        str(repeats),
        "--clock",
        clock,
        "--sizes",
        *map(str, sizes),
    ]
    env = {**os.environ, "OPENAI_AGENTS_DISABLE_TRACING": "1"}
    done = subprocess.run(command, cwd=ROOT, env=env)
    if done.returncode not in (0, 1):  # 1 is a missed target: the figures are still good
        raise SystemExit(f"the comparison failed in {VENV} (exit status {done.returncode})")
    return json.loads(out.read_text())


# -- the report --------------------------------------------------------------------------


def table(results: dict[str, Any]) -> str:
    """The figures as a Markdown table: medians in ms, speedup against the faster peer."""
    timings = results["timings"]
    peers = [p for p in PEERS if p in timings]
    head = ["N", "harness", *peers, "speedup vs faster peer"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for n in results["sizes"]:
        harness = timings.get("harness", {}).get(str(n))
        cells = [str(n)]
        for framework in ("harness", *peers):
            t = timings[framework].get(str(n)) if framework in timings else None
            cells.append(f"{t * 1e3:.1f} ms" if t is not None else "-")
        peer_times = [timings[p][str(n)] for p in peers if str(n) in timings[p]]
        speedup = min(peer_times) / harness if harness and peer_times else None
        cells.append(f"{speedup:.1f}x" if speedup is not None else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdict(results: dict[str, Any]) -> tuple[bool | None, str]:
    """Issue 7's target: harness at least 20x faster than the faster peer at N=200."""
    timings = results["timings"]
    key = str(TARGET_N)
    peer_times = {p: timings[p][key] for p in PEERS if key in timings.get(p, {})}
    harness = timings.get("harness", {}).get(key)
    if harness is None or not peer_times:
        return None, f"target not checked: needs harness and a peer at N={TARGET_N}"
    fastest = min(peer_times, key=peer_times.__getitem__)
    speedup = peer_times[fastest] / harness
    ok = speedup >= TARGET_SPEEDUP
    return ok, (
        f"target {'met' if ok else 'MISSED'}: at N={TARGET_N} harness is {speedup:.1f}x "
        f"faster than the faster peer ({fastest}); the target is {TARGET_SPEEDUP:.0f}x"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the comparison, print the table; exit status 1 when issue 7's target is missed."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks peers", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="rounds N")
    parser.add_argument("--repeats", type=int, default=REPEATS, help="timed runs per size")
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="wall: elapsed time (default); cpu: process CPU time, steadier on a busy machine",
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--here", action="store_true", help="never move to the peers' virtualenv")
    parser.add_argument(
        "--setup",
        action="store_true",
        help=f"create {VENV.relative_to(ROOT)} and install the peers",
    )
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.setup:
        return setup()

    print(
        f"peers: N rounds of one tool call then an answer; median of {args.repeats} runs "
        f"({args.clock} clock)",
        flush=True,
    )
    missing = [p for p in PEERS if _importable(p) is not None]
    results = None
    if missing and not args.here:
        results = _in_venv(args.sizes, args.repeats, args.clock)
        if results is None:
            print(
                f"  {', '.join(missing)} not importable and no {VENV.relative_to(ROOT)}: "
                "`python -m benchmarks.peers --setup` installs the peers there",
                flush=True,
            )
    if results is None:
        results = compare(args.sizes, args.repeats, args.clock)
        info = results["machine"]
        print(f"\nmachine: {info['nproc']} CPU(s), {info['cpu']}, Python {info['python']}")
        print("packages: " + ", ".join(f"{k} {v}" for k, v in info["packages"].items()))
        print()
        print(table(results))
        ok, message = verdict(results)
        print(message, flush=True)
        results["target_met"] = ok
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 1 if results.get("target_met") is False else 0


if __name__ == "__main__":
    sys.exit(main())
