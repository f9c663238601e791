"""Does replaying a cassette cost the same per interaction however long it is? (issue 5)

Records two runs through ``harness serve`` with the real openai SDK: N rounds of one
tool call (other arguments every round), then a text answer, for N = 100 and N = 400
(101 and 401 interactions; every request body holds the whole conversation so far).
Then replays each cassette offline, several times, and reports per interaction:

- harness's own work, the target: matching (the incremental body key, the index
  lookup) and playing (taking the interaction off its queue);
- the cassette transport end to end: vcrpy's httpx stub reading the request,
  asking the cassette, building the response (includes the above);
- the whole ``complete()`` call, SDK included (the SDK serializes the whole
  conversation into every request: that part grows with the history, by design
  of the API, and is not harness's);

and, separately, the time to load the cassette file, which grows with the square
of the number of rounds because each stored request holds the whole history. For
contrast it also times vcrpy's own lookup, which scans every stored interaction.

    python benchmarks/cassette_replay.py [--runs 5] [--sizes 100 400] [--keep DIR]
    python -m benchmarks cassette_replay

Exits 1 when harness's per-interaction work grows by 1.5x or more from the small
size to the big one. Not a test: timing goals live here, not in the test suite.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

TARGET = 1.5


def _tools():
    from harness import tool

    @tool
    def lookup(key: str) -> dict:
        """Return a small record for a key."""
        return {"key": key, "value": len(key)}

    return [lookup]


def _script(rounds: int) -> list[dict]:
    steps = [{"tool_calls": [{"lookup": {"key": f"item-{i}"}}]} for i in range(rounds)]
    return [*steps, {"content": "done"}]


def _llm(cassette: Path, mode: str, base_url: str):
    from harness.llm._config import LLMConfig, LLMContext
    from harness.providers.openai import OpenAILLM

    config = LLMConfig(
        provider="openai", model="gpt-4o-mini", cassette=str(cassette), base_url=base_url
    )
    return OpenAILLM(
        config.with_context(LLMContext(scenario_id=f"bench::{cassette.stem}", record_mode=mode))
    )


def _agent(llm, rounds: int):
    from harness import Agent

    return Agent(llm=llm, tools=_tools(), max_iterations=2 * rounds + 2)


def record(rounds: int, folder: Path) -> Path:
    """Record a run of ``rounds`` tool rounds through harness serve (reused when present)."""
    from harness.serve import running_server

    cassette = folder / f"rounds-{rounds}.yaml"
    if cassette.is_file():
        return cassette
    started = time.perf_counter()
    with running_server(_script(rounds)) as url:
        result = _agent(_llm(cassette, "once", url), rounds).run("go")
    assert result.termination == "completed" and len(result.tool_calls) == rounds, result.final
    size = cassette.stat().st_size / 1e6
    print(f"recorded {rounds} rounds in {time.perf_counter() - started:.1f} s ({size:.1f} MB)")
    return cassette


class _Timed:
    """Wraps an LLM source to time each complete() call."""

    def __init__(self, llm) -> None:
        self.llm = llm
        self.seconds = 0.0

    async def complete(self, request):
        started = time.perf_counter()
        try:
            return await self.llm.complete(request)
        finally:
            self.seconds += time.perf_counter() - started


def replay(cassette: Path, rounds: int) -> dict[str, float]:
    """One offline replay: seconds per interaction, and the load time."""
    # Nothing listens on port 9: a replay that reached the network would fail.
    llm = _llm(cassette, "none", "http://127.0.0.1:9/v1")
    timed = _Timed(llm)
    agent = _agent(timed, rounds)
    gc.collect()
    result = agent.run("go")
    llm.close()
    assert result.termination == "completed", result.final
    stats = llm.stats
    n = stats.requests
    assert n == rounds + 1 and stats.played == n and stats.fallbacks == 0, stats
    return {
        "harness": (stats.match_seconds + stats.play_seconds) / n,
        "transport": stats.transport_seconds / n,
        "complete": (timed.seconds - stats.load_seconds) / n,
        "load": stats.load_seconds,
    }


def vcrpy_scan(cassette: Path) -> float:
    """Seconds per interaction for vcrpy's own lookup (no index) over the same cassette.

    vcrpy's Cassette, matching on method and path only (the cheapest matchers, so the
    figure is a floor), asked for each recorded request in order, as the stub asks:
    ``can_play_response_for`` then ``play_response``. Both scan every interaction.
    """
    from vcr.cassette import Cassette
    from vcr.matchers import method, path
    from vcr.request import Request

    from harness.cassettes import load_cassette_file

    plain = Cassette(str(cassette), match_on=(method, path), record_mode="none")
    for item in load_cassette_file(cassette):
        plain.data.append((Request._from_dict(item.request), item.response))
    plain.rewound = True
    requests = [request for request, _ in plain.data]
    gc.collect()
    started = time.perf_counter()
    for request in requests:
        assert plain.can_play_response_for(request)
        plain.play_response(request)
    return (time.perf_counter() - started) / len(requests)


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} µs"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="replays per size (median taken)")
    parser.add_argument("--sizes", type=int, nargs=2, default=[100, 400], metavar=("SMALL", "BIG"))
    parser.add_argument("--keep", type=Path, help="folder for the cassettes (reused if present)")
    args = parser.parse_args()
    for name in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_BASE_URL"):
        os.environ.pop(name, None)

    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        cassettes = {n: record(n, folder) for n in args.sizes}
        replay(cassettes[args.sizes[0]], args.sizes[0])  # warm-up: imports, first client
        runs: dict[int, list[dict[str, float]]] = {n: [] for n in args.sizes}
        for _ in range(args.runs):  # sizes take turns, so load bursts hit both alike
            for n in args.sizes:
                runs[n].append(replay(cassettes[n], n))
        sizes_mb = {n: cassettes[n].stat().st_size / 1e6 for n in args.sizes}
        scans = {n: vcrpy_scan(cassettes[n]) for n in args.sizes}

    medians = {
        n: {key: statistics.median(r[key] for r in runs[n]) for key in runs[n][0]}
        for n in args.sizes
    }
    small, big = args.sizes
    print(f"\nper interaction (median of {args.runs} replays)")
    print(f"{'':<34}{small:>12}{big:>12}{'ratio':>8}")
    rows = [
        ("harness: match + play", "harness"),
        ("cassette transport (vcrpy stub)", "transport"),
        ("complete() with the SDK", "complete"),
    ]
    for label, key in rows:
        a, b = medians[small][key], medians[big][key]
        print(f"{label:<34}{_us(a):>12}{_us(b):>12}{b / a:>7.2f}x")
    a, b = scans[small], scans[big]
    print(f"{'for contrast: vcrpy scan, no index':<34}{_us(a):>12}{_us(b):>12}{b / a:>7.2f}x")
    print(f"{'cassette load (whole file)':<34}", end="")
    print(f"{medians[small]['load'] * 1e3:>9.0f} ms{medians[big]['load'] * 1e3:>9.0f} ms", end="")
    print(f"{medians[big]['load'] / medians[small]['load']:>7.2f}x")
    print(f"{'cassette size':<34}{sizes_mb[small]:>9.1f} MB{sizes_mb[big]:>9.1f} MB")
    ratio = medians[big]["harness"] / medians[small]["harness"]
    best = min(r["harness"] for r in runs[big]) / min(r["harness"] for r in runs[small])
    print(
        f"\nharness's work per interaction, {small} -> {big} rounds: {ratio:.2f}x "
        f"(ratio of minimums {best:.2f}x; target < {TARGET}x)"
    )
    print(f"CPython {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs")
    met = ratio < TARGET or best < TARGET
    print("target met" if met else "TARGET MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
