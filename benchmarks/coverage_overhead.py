"""What does `harness run --coverage` cost? (issue 48)

Builds the 1,000-scenario suite of ``suite_memory`` (scripted runs of three iterations: two
tool plans, one of them parallel, and an answer; one in 50 fails its check) and times
``harness run scenarios --json F --html F`` with and without ``--coverage``, each a process
of its own, the two taking turns (which goes first alternates from repeat to repeat, so a
machine that slows down or speeds up weighs on both alike). Prints each configuration's
CPU time (the process and its children) and wall clock, median, min and max of the
repeats, and the paired ratios (with / without, repeat by repeat): their median and spread.

    python benchmarks/coverage_overhead.py [--count 1000] [--repeats 5] [--target 3]
    python -m benchmarks coverage_overhead

Exits 1 when the median paired CPU overhead is above the target (--target, percent;
default 3). Not a test: timing goals live here.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

try:  # as a script (python benchmarks/coverage_overhead.py) or as a module
    from benchmarks.suite_memory import build
    from benchmarks.suite_overhead import timed
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from benchmarks.suite_memory import build
    from benchmarks.suite_overhead import timed


def _run(root: Path, coverage: bool) -> tuple[float, float]:
    args = [sys.executable, "-m", "harness.cli", "run", "scenarios"]
    args += ["--json", "r.json", "--html", "r.html"]
    if coverage:
        args.append("--coverage")
    return timed(args, root, expect=1)  # one scenario in 50 fails its check, on purpose


def _stats(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} (min {min(values):.2f}, max {max(values):.2f})"


def main() -> int:
    """Time the suite with and without --coverage; 1 when the overhead is above target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--target", type=float, default=3.0, help="percent")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-coverage-") as tmp:
        root = Path(tmp)
        build(root, options.count)
        _run(root, True)  # warm: the file system's caches, .pyc files
        times: dict[bool, list[tuple[float, float]]] = {False: [], True: []}
        for repeat in range(options.repeats):
            for coverage in (False, True) if repeat % 2 == 0 else (True, False):
                times[coverage].append(_run(root, coverage))
        coverage = json.loads((root / "r.json").read_text())["coverage"]
    cpu = {k: [c for _, c in v] for k, v in times.items()}
    wall = {k: [w for w, _ in v] for k, v in times.items()}
    paired = [100 * (w / wo - 1) for w, wo in zip(cpu[True], cpu[False], strict=True)]
    paired_wall = [100 * (w / wo - 1) for w, wo in zip(wall[True], wall[False], strict=True)]
    print(f"## --coverage on {options.count} scenarios, {options.repeats} repeats\n")
    print("| run | CPU s | wall s |")
    print("|---|---|---|")
    print(f"| without --coverage | {_stats(cpu[False])} | {_stats(wall[False])} |")
    print(f"| with --coverage | {_stats(cpu[True])} | {_stats(wall[True])} |")
    print(
        f"\npaired CPU overhead: median {statistics.median(paired):+.2f}% "
        f"(min {min(paired):+.2f}%, max {max(paired):+.2f}%); wall: median "
        f"{statistics.median(paired_wall):+.2f}% (min {min(paired_wall):+.2f}%, "
        f"max {max(paired_wall):+.2f}%)"
    )
    print(f"the suite's coverage: {coverage['covered']} of {coverage['total']} behaviours")
    met = statistics.median(paired) <= options.target
    print(f"target: at most {options.target:g}% -> {'met' if met else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
