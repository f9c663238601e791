"""What does running a suite through harness cost over plain pytest? (issue 4)

Builds a throw-away project with N trivial scenarios (one file each: a single scripted
text reply, `expect: {termination: completed}`) and N trivial pytest tests (one file
each, `assert True`: the same one-item-per-file shape), then times, wall clock, whole
processes as a user starts them:

- ``pytest tests/``                   the baseline: N plain tests
- ``pytest scenarios/``               the plugin alone: collect, run, no report files
- ``harness run scenarios/``          the CLI: plus results.json, report.html, summary

each serially and with ``-n 2`` (pytest-xdist), and prints a Markdown table with the
median wall-clock and CPU time (the process and its xdist workers) of the repeats, and
the extra CPU per item against the baseline.

    python benchmarks/suite_overhead.py [--count 500] [--repeats 3] [--workers 2]
    python -m benchmarks suite_overhead

Exits 1 when harness run's serial CPU overhead per scenario, over a plain test, is above
the target (--target-ms, default 10 ms).

Not a test: timing goals live here, not in the test suite.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCENARIO = """\
name: trivial-{i:04d}
input: hello {i}
llm:
  script:
    - content: done {i}
expect:
  termination: completed
"""

TEST = """\
def test_trivial_{i:04d}():
    assert True
"""


def build(root: Path, count: int) -> None:
    """A project at ``root``: pyproject.toml, scenarios/ and tests/ with ``count`` items each."""
    (root / "pyproject.toml").write_text("[project]\nname = 'overhead'\n")
    (root / "scenarios").mkdir()
    (root / "tests").mkdir()
    for i in range(count):
        (root / "scenarios" / f"s{i:04d}.scenario.yaml").write_text(SCENARIO.format(i=i))
        (root / "tests" / f"test_{i:04d}.py").write_text(TEST.format(i=i))


def timed(command: list[str], cwd: Path, expect: int = 0) -> tuple[float, float]:
    """Wall-clock and CPU seconds of one process (CPU: itself and its xdist workers).

    CPU time is the steadier figure on a shared machine; wall clock is what a user waits.
    Fails loudly if the process does not exit ``expect``.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != expect:
        sys.stderr.write(done.stdout[-3000:] + done.stderr[-3000:])
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}, expected {expect}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu


def median_of(command: list[str], cwd: Path, repeats: int) -> tuple[float, float]:
    """Median wall-clock and CPU seconds over ``repeats`` runs."""
    runs = [timed(command, cwd) for _ in range(repeats)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)


def harness_command() -> list[str]:
    script = shutil.which("harness")
    return [script] if script else [sys.executable, "-m", "harness.cli"]


def load_average() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=500, help="scenarios and tests (500)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per command (median)")
    parser.add_argument("--workers", type=int, default=2, help="xdist workers (2)")
    parser.add_argument("--target-ms", type=float, default=10.0, help="serial overhead target")
    parser.add_argument("--keep", action="store_true", help="keep the generated project")
    args = parser.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="harness-overhead-"))
    try:
        build(folder, args.count)
        pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        harness = [*harness_command(), "run", "scenarios"]
        xdist = ["-n", str(args.workers)]
        commands = {
            "pytest tests/ (plain tests)": ([*pytest, "tests"], [*pytest, "tests", *xdist]),
            "pytest scenarios/ (plugin, no reports)": (
                [*pytest, "scenarios"],
                [*pytest, "scenarios", *xdist],
            ),
            "harness run scenarios/ (+ results.json, report.html)": (
                [*harness, "--", "-q", "-p", "no:cacheprovider"],
                [*harness, *xdist, "--", "-q", "-p", "no:cacheprovider"],
            ),
        }
        loads = [load_average()]
        figures: dict[str, list[tuple[float, float]]] = {}
        for label, (serial, parallel) in commands.items():
            timed(serial, folder)  # warm-up: imports, filesystem cache
            figures[label] = [
                median_of(serial, folder, args.repeats),
                median_of(parallel, folder, args.repeats),
            ]
            (sw, sc), (pw, pc) = figures[label]
            print(
                f"{label}: serial {sw:.2f} s (CPU {sc:.2f} s), "
                f"-n {args.workers} {pw:.2f} s (CPU {pc:.2f} s)",
                flush=True,
            )
        loads.append(load_average())
        assert Path(folder, "reports", "results.json").is_file(), "harness run wrote no results"
    finally:
        if args.keep:
            print(f"project kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)

    n = args.count
    base = next(iter(figures.values()))
    print()
    print(
        f"| {n} items (median of {args.repeats}) | serial wall | serial CPU "
        f"| -n {args.workers} wall | -n {args.workers} CPU | extra CPU per item, serial |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for label, ((sw, sc), (pw, pc)) in figures.items():
        extra = (sc - base[0][1]) / n * 1000
        print(f"| {label} | {sw:.2f} s | {sc:.2f} s | {pw:.2f} s | {pc:.2f} s | {extra:+.2f} ms |")
    print()
    print(
        f"machine: {platform.platform()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs; load average {loads[0]} before, {loads[1]} after"
    )
    harness_cpu = figures["harness run scenarios/ (+ results.json, report.html)"][0][1]
    overhead = (harness_cpu - base[0][1]) / n * 1000
    met = overhead <= args.target_ms
    print(
        f"target: harness run's serial CPU overhead <= {args.target_ms:.0f} ms per scenario "
        f"over a plain test: {overhead:.2f} ms, {'met' if met else 'MISSED'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
