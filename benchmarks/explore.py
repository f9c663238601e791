"""`harness explore`'s cost.

- depth 1 of the own-loop example suite (every scenario of scenarios/ without a target:
  the ones that run here), target at most 60 s on this machine's 2 cores (``-n 2``);
- depth 2 of one own-loop scenario of 10 model calls (made here: 3 tools, 9 tool calls),
  target at most 60 s (``-n 2``);
- depth 1 of a python target of 3 model calls (scenarios/external/raw-sync: the raw openai
  SDK), target at most 30 s (``-n 2``);
- the cost of one variant against a plain ``harness run`` of the same scenario (a pytest
  session) and against ``run_scenario`` in this process.

    python benchmarks/explore.py [--quick] [-n N]
    python -m benchmarks explore

Exits 1 when a target is missed. Not a test: timing goals live here.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.explore import ExploreOptions, explore, scenario_files  # noqa: E402

TEN_CALLS = """\
name: ten-calls
input: Plan a trip to three cities.
tools:
  weather: {parameters: {city: str}, returns: "{{ args.city }}: 20C"}
  hotels: {parameters: {city: str}, returns: ["{{ args.city }} Inn", "{{ args.city }} Grand"]}
  book: {parameters: {hotel: str}, returns: booked}
llm:
  script:
    - tool_calls: [{weather: {city: Paris}}]
    - tool_calls: [{hotels: {city: Paris}}]
    - tool_calls: [{book: {hotel: Paris Inn}}]
    - tool_calls: [{weather: {city: Rome}}]
    - tool_calls: [{hotels: {city: Rome}}]
    - tool_calls: [{book: {hotel: Rome Inn}}]
    - tool_calls: [{weather: {city: Oslo}}]
    - tool_calls: [{hotels: {city: Oslo}}]
    - tool_calls: [{book: {hotel: Oslo Grand}}]
    - content: Booked Paris Inn, Rome Inn and Oslo Grand.
expect:
  termination: completed
  llm_calls: 10
"""


def own_loop_suite() -> list[Path]:
    """The example suite's scenarios that harness's own loop runs (no target)."""
    files = scenario_files([ROOT / "scenarios"], ROOT / "explored")
    return [f for f in files if "target:" not in f.read_text(encoding="utf-8")]


def timed(paths: list[Path], jobs: int, **given: object) -> tuple[float, object]:
    # Inside the project: a variant loads as a file of the output folder, and the
    # examples' recordings and modules are found from the project's root.
    with tempfile.TemporaryDirectory(prefix=".explore-bench-", dir=ROOT) as out:
        options = ExploreOptions(output=Path(out), jobs=jobs, **given)  # type: ignore[arg-type]
        started = time.perf_counter()
        exploration = explore(paths, options)
        return time.perf_counter() - started, exploration


def report(label: str, seconds: float, exploration: object, target: float) -> bool:
    tried = exploration.schedules.tried  # type: ignore[attr-defined]
    findings = exploration.findings  # type: ignore[attr-defined]
    ok = seconds <= target
    print(
        f"{label}: {seconds:.1f} s for {tried} schedules ({seconds / max(tried, 1) * 1000:.1f} "
        f"ms each), {findings} findings; target {target:.0f} s: {'met' if ok else 'MISSED'}",
        flush=True,
    )
    return ok


def cpu_per_schedule(ten: Path) -> None:
    """CPU time a depth-2 schedule of the 10-call scenario costs in one process: the figure
    that does not depend on what else the machine runs."""
    started = time.process_time()
    _, exploration = timed([ten], 1, depth=2, max_variants=3000, write=False)
    cpu = time.process_time() - started
    tried = exploration.schedules.tried  # type: ignore[attr-defined]
    print(f"  depth 2 in one process: {cpu / tried * 1000:.2f} ms of CPU a schedule ({tried})")


def load() -> str:
    return "load average " + ", ".join(f"{n:.1f}" for n in os.getloadavg())


def per_variant(path: Path) -> None:
    """A variant's cost against ``run_scenario`` and a plain ``harness run`` of the file."""
    from harness.scenario import run_scenario

    runs = []
    for _ in range(5):
        started = time.perf_counter()
        run_scenario(path)
        runs.append(time.perf_counter() - started)
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "harness.cli", "run", str(path), "--json", f"{out}/r.json",
             "--html", f"{out}/r.html"],
            cwd=ROOT, capture_output=True, check=False,
        )  # fmt: skip
        session = time.perf_counter() - started
    seconds, exploration = timed([path], 1, write=False)
    tried = exploration.schedules.tried  # type: ignore[attr-defined]
    variant = seconds / max(tried, 1)
    print(
        f"  {path.relative_to(ROOT)}: a variant {variant * 1000:.1f} ms; run_scenario "
        f"{statistics.median(runs) * 1000:.1f} ms ({variant / statistics.median(runs):.2f}x); "
        f"`harness run FILE` {session:.2f} s ({session / variant:.0f}x a variant)",
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one scenario of the suite")
    parser.add_argument("-n", type=int, default=2, help="worker processes (default 2)")
    args = parser.parse_args()
    ok = True
    print(f"start: {load()}", flush=True)
    suite = own_loop_suite()[: 3 if args.quick else None]
    seconds, exploration = timed(suite, args.n)
    ok &= report(
        f"depth 1, own-loop suite ({len(suite)} files, -n {args.n})", seconds, exploration, 60
    )
    with tempfile.TemporaryDirectory(prefix=".explore-bench-", dir=ROOT) as folder:
        ten = Path(folder) / "ten-calls.scenario.yaml"
        ten.write_text(TEN_CALLS, encoding="utf-8")
        seconds, exploration = timed([ten], args.n, depth=2)
        ok &= report(f"depth 2, one 10-call scenario (-n {args.n})", seconds, exploration, 60)
        cpu_per_schedule(ten)
    target = ROOT / "scenarios" / "external" / "raw-sync.scenario.yaml"
    seconds, exploration = timed([target], args.n)
    ok &= report(f"depth 1, a python target of 3 calls (-n {args.n})", seconds, exploration, 30)
    print("cost of a variant:")
    per_variant(ROOT / "scenarios" / "core" / "weather-and-restaurants.scenario.yaml")
    per_variant(target)
    print(f"end: {load()}", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
