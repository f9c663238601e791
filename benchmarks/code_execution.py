"""How long does running `print(1)` in each sandbox backend take?

Runs ``print(1)`` through each backend that works on this machine, N times (median
taken), and checks the targets: ``process`` at most 60 ms, ``bubblewrap`` at most 150 ms.
A backend that cannot run here is listed with the reason and not timed.

    python -m benchmarks code_execution [--runs 20]

Exits 1 when a measured backend misses its target.

Beside the wall time it prints the CPU time the finished children used (user + system, as
``getrusage(RUSAGE_CHILDREN)`` counts it): on a shared machine the wall time follows the
load, the CPU time much less, so two versions compare on it when the machine is busy.
For bubblewrap it counts only what bwrap itself waits for, not all of the sandboxed work.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import resource
import statistics
import time

from harness.sandbox import BACKENDS, Limits, SandboxError, get_sandbox

TARGETS_MS = {"process": 60.0, "bubblewrap": 150.0}


def _children_cpu_ms() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def time_backend(name: str, runs: int) -> tuple[list[float], list[float]]:
    """Wall and children's CPU milliseconds of each of ``runs`` executions of print(1)."""
    sandbox = get_sandbox(name)
    limits = Limits()

    async def once() -> tuple[float, float]:
        cpu, started = _children_cpu_ms(), time.perf_counter()
        result = await sandbox.run("print(1)", limits)
        elapsed = (time.perf_counter() - started) * 1000
        assert result.stdout == "1\n" and result.exit_status == 0, result
        return elapsed, _children_cpu_ms() - cpu

    asyncio.run(once())  # warm: the interpreter's files in the page cache
    measured = [asyncio.run(once()) for _ in range(runs)]
    return [wall for wall, _ in measured], [cpu for _, cpu in measured]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="executions per backend (median)")
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {platform.machine()}, runs={args.runs}")
    missed = False
    for name in BACKENDS:
        try:
            times, cpu = time_backend(name, args.runs)
        except SandboxError as exc:
            print(f"{name:>10}: not measured: {exc}")
            continue
        median = statistics.median(times)
        target = TARGETS_MS.get(name)
        verdict = "" if target is None else ("met" if median <= target else "MISSED")
        missed |= verdict == "MISSED"
        bound = f"(target <= {target:g} ms) {verdict}" if target else "(no target)"
        spread = f"min {min(times):.1f}, max {max(times):.1f}"
        used = f"children's CPU median {statistics.median(cpu):.1f} ms"
        print(f"{name:>10}: median {median:.1f} ms, {spread}, {used} {bound}")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
