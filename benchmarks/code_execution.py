"""How long does running `print(1)` in each sandbox backend take?

Runs ``print(1)`` through each backend that works on this machine, N times (median
taken), and checks the targets: ``process`` at most 60 ms, ``bubblewrap`` at most 150 ms.
A backend that cannot run here is listed with the reason and not timed.

    python -m benchmarks code_execution [--runs 20]

Exits 1 when a measured backend misses its target.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import time

from harness.sandbox import BACKENDS, Limits, SandboxError, get_sandbox

TARGETS_MS = {"process": 60.0, "bubblewrap": 150.0}


def time_backend(name: str, runs: int) -> list[float]:
    """Wall milliseconds of each of ``runs`` executions of print(1)."""
    sandbox = get_sandbox(name)
    limits = Limits()

    async def once() -> float:
        started = time.perf_counter()
        result = await sandbox.run("print(1)", limits)
        elapsed = (time.perf_counter() - started) * 1000
        assert result.stdout == "1\n" and result.exit_status == 0, result
        return elapsed

    asyncio.run(once())  # warm: the interpreter's files in the page cache
    return [asyncio.run(once()) for _ in range(runs)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="executions per backend (median)")
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {platform.machine()}, runs={args.runs}")
    missed = False
    for name in BACKENDS:
        try:
            times = time_backend(name, args.runs)
        except SandboxError as exc:
            print(f"{name:>10}: not measured: {exc}")
            continue
        median = statistics.median(times)
        target = TARGETS_MS.get(name)
        verdict = "" if target is None else ("met" if median <= target else "MISSED")
        missed |= verdict == "MISSED"
        bound = f"(target <= {target:g} ms) {verdict}" if target else "(no target)"
        spread = f"min {min(times):.1f}, max {max(times):.1f}"
        print(f"{name:>10}: median {median:.1f} ms, {spread} {bound}")
    return 1 if missed else 0


if __name__ == "__main__":
    raise SystemExit(main())
