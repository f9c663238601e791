"""Shards of a 500-scenario suite, and merging them.

Builds a throw-away project of 500 scenario files whose runs take from 2 to 284 ms of
real work each (a `use:` tool that hashes for a given time; most are short and a few
long, as in a real suite), runs it once serially to get the durations, then runs it
as 4 shards, one after another (one machine each in CI; here one at a time so that they
do not share the CPUs), first balanced by those durations (`--durations`), then by count.

- balance: each shard's time is the sum of its scenarios' wall times (the part the plan
  divides; each shard also collects all 500 files, the same fixed cost for every shard),
  and the process's wall time; target: the longest shard at most 1.15x the mean;
- merge: `harness merge` of the 4 shards' results.json, in this process: reading, checking
  and merging (target: under 2 s), and with writing results.json and the HTML report.

    python benchmarks/shards.py [--count 500] [--shards 4]
    python -m benchmarks shards

Exits 1 when a target is missed. Not a test: timing goals live here.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

WORK_TOOL = '''\
import hashlib
import time


def work(ms: int) -> str:
    """Hash for ``ms`` milliseconds of real time (a tool that does real work)."""
    deadline = time.perf_counter() + ms / 1000
    digest = b""
    while time.perf_counter() < deadline:
        digest = hashlib.sha256(digest).digest()
    return f"worked {ms} ms"
'''

SCENARIO = """\
name: s{i:04d}
input: do {ms} ms of work
tools:
  work: {{use: "bench_work:work"}}
llm:
  script:
    - tool_calls: [{{work: {{ms: {ms}}}}}]
    - content: done
expect:
  termination: completed
"""


def durations(count: int) -> list[int]:
    """Uneven durations, as a real suite's: most scenarios short, a few long (a log-normal
    spread, median 10 ms, seeded: the same suite every time; 2 to 284 ms for 500)."""
    draws = random.Random(15)
    return [min(800, max(2, round(draws.lognormvariate(math.log(10), 1.2)))) for _ in range(count)]


def build(root: Path, count: int) -> None:
    """A project of ``count`` scenarios and the tool they call."""
    (root / "pyproject.toml").write_text("[project]\nname = 'bench-shards'\n")
    (root / "bench_work.py").write_text(WORK_TOOL)
    folder = root / "scenarios"
    folder.mkdir()
    for i, ms in enumerate(durations(count)):
        text = SCENARIO.format(i=i, ms=ms)
        (folder / f"s{i:04d}.scenario.yaml").write_text(text)


def harness_run(root: Path, *args: str) -> float:
    """``harness run ARGS`` as a process of its own; its wall time."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(root)])}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", *args, "--", "-q", "-p", "no:cacheprovider"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"harness run {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return elapsed


def run_shards(root: Path, shards: int, label: str, extra: list[str]) -> list[tuple[float, float]]:
    """Each shard's (sum of scenario wall times, process wall time)."""
    from harness._results import load_results

    out = []
    for k in range(1, shards + 1):
        target = f"{label}-{k}.json"
        process = harness_run(
            root, "--shard", f"{k}/{shards}", *extra, "--json", target, "--html", f"{label}.html"
        )
        results = load_results(root / target)
        out.append((sum(s.wall_time for s in results.scenarios), process))
    return out


def ratio(values: list[float]) -> float:
    """The longest over the mean."""
    return max(values) / statistics.mean(values)


def show(label: str, shards: list[tuple[float, float]]) -> tuple[float, float]:
    """Print one split; its (scenario-time ratio, process-time ratio)."""
    work = [w for w, _ in shards]
    process = [p for _, p in shards]
    print(
        f"{label:>10}: scenario time per shard "
        + ", ".join(f"{w:.2f}" for w in work)
        + f" s (longest/mean {ratio(work):.3f}); process "
        + ", ".join(f"{p:.2f}" for p in process)
        + f" s (longest/mean {ratio(process):.3f})"
    )
    return ratio(work), ratio(process)


def time_merge(root: Path, shards: int) -> tuple[float, float]:
    """(read + check + merge, the whole `harness merge` with both files written) in s."""
    from harness._results import load_results
    from harness._shards import merge
    from harness.cli import main

    names = [str(root / f"durations-{k}.json") for k in range(1, shards + 1)]
    started = time.perf_counter()
    merged = merge([(name, load_results(name)) for name in names])
    merging = time.perf_counter() - started
    assert merged.summary.total == sum(len(load_results(n).scenarios) for n in names)
    out = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(out):
        status = main(
            [
                "merge",
                *names,
                "--json",
                str(root / "merged.json"),
                "--html",
                str(root / "merged.html"),
            ]
        )
    whole = time.perf_counter() - started
    assert status == 0, out.getvalue()
    return merging, whole


def main() -> int:
    """Run the benchmark; 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--target", type=float, default=1.15, help="longest/mean at most")
    parser.add_argument("--merge-target", type=float, default=2.0, help="seconds")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-shards-") as tmp:
        root = Path(tmp)
        build(root, args.count)
        serial = harness_run(root, "--json", "earlier.json", "--html", "earlier.html")
        print(f"{args.count} scenarios, serial run (the durations): {serial:.2f} s")
        by_time = run_shards(root, args.shards, "durations", ["--durations", "earlier.json"])
        by_count = run_shards(root, args.shards, "count", [])
        balance, _ = show("durations", by_time)
        show("count", by_count)
        os.chdir(root)  # `harness merge` writes the baseline in the project
        merging, whole = time_merge(root, args.shards)
        print(
            f"merge {args.shards} shards of {args.count} results: {merging:.3f} s to read, "
            f"check and merge; {whole:.2f} s for the whole command (results.json and "
            "report.html written)"
        )
    ok = balance <= args.target and merging < args.merge_target
    print(
        f"target: longest shard <= {args.target}x the mean ({balance:.3f}), merge < "
        f"{args.merge_target} s ({merging:.3f}): {'met' if ok else 'MISSED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
