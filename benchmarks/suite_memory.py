"""Suites past one machine: memory, merge and report at 1,000 to 20,000 scenarios (issue 33).

Builds a throw-away project of N generated scenarios (scripted runs of three iterations:
two tool plans and an answer, about 7.8 kB of results.json each),
then measures, each `harness run` a process of its own:

- one run of N scenarios (results.json and report.html written) in one pytest session
  (``--chunk-size 0``):
  wall time and peak memory (``LAUNCHER``: the larger of its processes' summed PSS and
  the largest one's RSS), and beside it plain pytest over the same files as empty items
  (``floor``: pytest's own share of a suite's memory, which no one session of pytest
  items goes below);
- a plain ``harness run`` (in parts of harness's default size where the suite has more
  files: pytest sessions one after another, each in a process forked from harness's), or
  in parts of ``--chunk-size N``: wall time and peak memory against the 1,000-scenario
  run's (target: at most 1.3x), and its results.json against the one session's;
- the same N as 4 shards, each run in parts, then ``harness merge`` of them in a process
  of its own: the largest shard's peak and the merge's (target: at most 1.3x the 1,000
  run's), and the merge's time against reading the 4 shards' results.json one entry at a
  time (``read_streamed``, see ``time_reading``; target: at most 1.5x);
- the merged report in Debian's headless chromium: first contentful paint (target: 2 s)
  and opening one scenario's details (a click on a card, until its timeline is shown;
  target: 0.5 s).

    python benchmarks/suite_memory.py [--counts 1000 5000 20000] [--shards 4]
    python -m benchmarks suite_memory

``--python`` runs the harness of another checkout (``PYTHONPATH`` too) to compare
commits side by side. Exits 1 when a target is missed. Not a test: timing goals live here.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent

TOOLS = '''\
def lookup(key: str) -> dict:
    """Return a small record for a key."""
    return {"key": key, "value": len(key), "note": "a record of the generated suite " * 3}
'''

SCENARIO = """\
name: generated-{i:05d}
description: generated scenario {i} of a large suite (two tool plans, then an answer)
tags: [generated, group-{group}]
input: look up two keys for case {i}
tools:
  lookup: {{use: "bench_lookup:lookup"}}
llm:
  script:
    - content: first I look up the first key of case {i}
      tool_calls: [{{lookup: {{key: "alpha-{i}"}}}}]
    - tool_calls: [{{lookup: {{key: "beta-{i}"}}}}, {{lookup: {{key: "gamma-{i}"}}}}]
    - content: "case {i}: both keys found, the answer is {answer}"
expect:
  termination: completed
  final: {{contains: "{expected}"}}
"""


def build(root: Path, count: int) -> None:
    """A project of ``count`` scenarios in folders of 500 (one in 50 fails its check)."""
    (root / "pyproject.toml").write_text("[project]\nname = 'bench-suite-memory'\n")
    (root / "bench_lookup.py").write_text(TOOLS)
    for i in range(count):
        folder = root / "scenarios" / f"part{i // 500:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        answer = f"value-{i}"
        expected = answer if i % 50 else "something else"
        text = SCENARIO.format(i=i, group=i % 7, answer=answer, expected=expected)
        (folder / f"g{i:05d}.scenario.yaml").write_text(text)


# pytest's own share: the same folders of files, each collected as one item that does
# nothing (no harness). What a pytest session keeps per item (the item, and the three test
# reports the terminal reporter keeps to the end) is the floor of any suite of pytest items.
FLOOR_CONFTEST = """\
import pytest


class Scenario(pytest.File):
    def collect(self):
        yield Nothing.from_parent(self, name=self.path.name.split(".")[0])


class Nothing(pytest.Item):
    def runtest(self):
        pass


def pytest_collect_file(parent, file_path):
    if file_path.name.endswith(".scenario.yaml"):
        return Scenario.from_parent(parent, path=file_path)
"""


def floor(python: str, env: dict[str, str], root: Path) -> float:
    """Peak RSS (MB) of plain pytest over the project's scenario files as empty items."""
    (root / "conftest.py").write_text(FLOOR_CONFTEST)
    try:
        bare = {**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        args = [python, "-m", "pytest", "scenarios", "-q", "-p", "no:cacheprovider"]
        memory = measured(args, root, bare).memory
    finally:
        (root / "conftest.py").unlink()
    return memory


# Starts the measured process and writes its peak memory to a file: the largest summed
# proportional set size (PSS: each page shared by n processes counted 1/n in each) of it
# and its child processes, sampled every 20 ms, which is what a run takes from the machine
# whether it is one process or several (a run in parts forks one per part, sharing pages
# until written); and the largest process's own peak RSS (``ru_maxrss``). Linux gives a
# child the peak of the process it was forked from (ru_maxrss survives exec): forked from
# this benchmark, which has read results files and driven a browser, a child's peak would
# be at least this process's size. Forked from this small launcher, it is its own.
LAUNCHER = """\
import os, subprocess, sys, threading, time
child = subprocess.Popen(sys.argv[2:])
peak = [0]
def tree(pid):
    found = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as listed:
                found += [p for c in listed.read().split() for p in tree(int(c))]
    except OSError:
        pass
    return found
def pss(pid):
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            return sum(int(line.split()[1]) for line in rollup if line.startswith("Pss:"))
    except OSError:
        return 0
ended = threading.Event()
def sample():  # (never child.poll(): it would reap the child before wait4 does)
    while not ended.is_set():
        peak[0] = max(peak[0], sum(pss(pid) for pid in tree(child.pid)))
        time.sleep(0.02)
threading.Thread(target=sample, daemon=True).start()
_, status, usage = os.wait4(child.pid, 0)
ended.set()
with open(sys.argv[1], "w") as out:
    out.write(f"{peak[0]} {usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}")
sys.exit(os.waitstatus_to_exitcode(status))
"""


class Run(NamedTuple):
    """A measured process: wall seconds, peak memory (MB, summed PSS of its processes),
    the largest process's peak RSS (MB), its output, and the CPU seconds (user and
    system) of it and the processes it waited for (its parts): on a machine others
    share, a steadier figure of its work than the wall clock."""

    wall: float
    memory: float
    largest: float
    text: str
    cpu: float = 0.0


def measured(args: list[str], cwd: Path, env: dict[str, str]) -> Run:
    """Run a process (and whatever it starts): its Run."""
    started = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out, tempfile.NamedTemporaryFile("r") as peak:
        launched = [sys.executable, "-c", LAUNCHER, peak.name, *args]
        child = subprocess.run(launched, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        elapsed = time.perf_counter() - started
        out.seek(0)
        text = out.read()
        pss, rss, cpu = (peak.read() or "0 0 0").split()
        pss_kb, rss_kb = int(pss), int(rss)
    if child.returncode not in (0, 1) or not rss_kb:  # 1: failing scenarios, as they should
        raise SystemExit(f"{' '.join(args)} exited {child.returncode}:\n{text[-3000:]}")
    # The larger of the two: one process's RSS counts its shared libraries whole (and a
    # process shorter than a sample has no PSS figure); several processes' RSS, not summed.
    return Run(elapsed, max(pss_kb, rss_kb) / 1024, rss_kb / 1024, text, float(cpu))


def harness(python: str, env: dict[str, str], root: Path, *args: str) -> Run:
    """``harness ARGS`` in ``root``, a process of its own."""
    return measured([python, "-m", "harness.cli", *args], root, env)


def run_args(name: str, *extra: str) -> list[str]:
    """``harness run`` writing ``name``.json and ``name``.html."""
    return ["run", "scenarios", *extra, "--json", f"{name}.json", "--html", f"{name}.html"]


SAME_OUTSIDE_WALL_CLOCK = """\
import json, sys


def outside(path):
    data = json.load(open(path))
    data.pop("meta")
    for entry in data["scenarios"]:
        entry.pop("wall_time")
    return data


print(outside(sys.argv[1]) == outside(sys.argv[2]))
"""


def same_outside_wall_clock(python: str, root: Path, one: str, other: str) -> bool:
    """Whether two results.json are the same but for meta and wall times: read in a child,
    as this process's own size would be counted in the next child's peak (Linux gives a
    child the peak of the process it was forked from)."""
    out = measured([python, "-c", SAME_OUTSIDE_WALL_CLOCK, one, other], root, {}).text
    return out.strip().splitlines()[-1] == "True"


def time_reading(python: str, env: dict[str, str], root: Path, names: list[str]) -> list[float]:
    """Seconds, in a child: reading the shards' results.json files one entry at a time
    (``read_streamed``: ijson, every entry checked, nothing kept), what ``harness merge``
    does (``merge_files``: read them so into one spool, check, merge) with the merged
    results.json written, and reading them into memory (``load_results(in_memory=True)``,
    for comparison).

    The streamed read is the figure to hold the merge against: flat memory rules out
    holding a shard whole, so reading one entry at a time is the least a merge must do;
    ``load_results(in_memory=True)`` holds every entry.
    """
    code = (
        "import sys, time\nfrom harness._results import load_results\n"
        "from harness._results import read_streamed\n"
        "from harness._shards import merge_files\n"
        "t = time.perf_counter()\nfor n in sys.argv[1:]: read_streamed(n, lambda e: None)\n"
        "read = time.perf_counter() - t\nt = time.perf_counter()\n"
        "merge_files(sys.argv[1:]).write('merged-only.json')\n"
        "merging = time.perf_counter() - t\nt = time.perf_counter()\n"
        "for n in sys.argv[1:]: load_results(n, in_memory=True)\n"
        "print(read, merging, time.perf_counter() - t)"
    )
    out = measured([python, "-c", code, *names], root, env).text
    return [float(x) for x in out.strip().splitlines()[-1].split()]


# Click the 8th card's header; resolve with the milliseconds until its timeline is shown.
OPEN_ONE = """() => new Promise(resolve => {
  const card = document.querySelectorAll('#scenarios details.scenario')[7];
  const started = performance.now();
  const done = () => requestAnimationFrame(() => requestAnimationFrame(
      () => resolve(performance.now() - started)));
  const wait = () => card.querySelector('table.timeline') ? done() : setTimeout(wait, 1);
  card.querySelector('summary').click();
  wait();
})"""


def browser(path: Path) -> dict[str, float] | None:
    """First paint and one scenario opened, in headless chromium (None: not installed)."""
    sys.path.insert(0, str(ROOT / "tests"))
    from chromium import find_chromium, launch_chromium

    executable = find_chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if executable is None:
        return None
    frame = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright, executable)
        try:
            page = chromium.new_page(viewport={"width": 1280, "height": 900})
            started = time.perf_counter()
            page.goto(path.as_uri(), wait_until="load", timeout=600_000)
            page.evaluate(frame)
            loaded = time.perf_counter() - started
            paint = page.evaluate(
                "(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime"
            )
            # Timed in the page: from the click to the frame after the card's body is in.
            opened = page.evaluate(OPEN_ONE) / 1000
            assert page.locator("#scenarios details.scenario table.timeline").count() == 1
        finally:
            chromium.close()
    return {"paint": (paint or 0.0) / 1000, "load": loaded, "open": opened}


def main() -> int:
    """Run the benchmark; 1 when a target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", type=int, nargs="+", default=[1000, 5000, 20000])
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--python", default=sys.executable, help="the interpreter to measure")
    parser.add_argument("--pythonpath", default=str(ROOT), help="the harness checkout to use")
    parser.add_argument("--no-shards", action="store_true", help="one run per count only")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument(
        "--chunk-size",
        type=int,
        help="the runs in parts and the shards: --chunk-size N (default: none given, as a "
        "plain `harness run` is; 0: one session each, and no second run)",
    )
    parser.add_argument("--keep", type=Path, help="build the projects here and keep them")
    args = parser.parse_args()
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-suite-memory-") as tmp:
        base = args.keep or Path(tmp)
        figures: dict[int, dict[str, float]] = {}
        for count in args.counts:
            root = base / f"n{count}"
            if not (root / "scenarios").is_dir():
                root.mkdir(parents=True, exist_ok=True)
                build(root, count)
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([args.pythonpath, str(root)])}
            row = figures[count] = {}
            one = run_args("one", "--chunk-size=0")
            wall, rss, largest, _, cpu = harness(args.python, env, root, *one, "--", "-q")
            row.update(session=wall, session_rss=rss, floor_rss=floor(args.python, env, root))
            row["json_mb"] = (root / "one.json").stat().st_size / 1e6
            row["html_mb"] = (root / "one.html").stat().st_size / 1e6
            print(
                f"{count:>6} scenarios, one run in one session: {wall:6.1f} s (CPU {cpu:.1f} s), "
                f"peak {rss:6.0f} MB; results.json {row['json_mb']:.1f} MB, report.html "
                f"{row['html_mb']:.1f} MB; plain pytest over as many empty items: peak "
                f"{row['floor_rss']:.0f} MB",
                flush=True,
            )
            size = args.chunk_size
            parts = [] if size is None else [f"--chunk-size={size}"]
            if size != 0:
                in_parts = run_args("parts", *parts)
                wall, rss, largest, _, cpu = harness(args.python, env, root, *in_parts, "--", "-q")
                same = same_outside_wall_clock(args.python, root, "parts.json", "one.json")
                how = "a plain harness run" if size is None else f"one run in parts of {size}"
                print(
                    f"{count:>6} scenarios, {how}: {wall:6.1f} s (CPU {cpu:.1f} s), "
                    f"peak {rss:6.0f} MB (largest process {largest:.0f} MB); results.json "
                    + ("the same as one session's" if same else "DIFFERENT from one session's"),
                    flush=True,
                )
                ok = ok and same
            row.update(run=wall, run_rss=rss)
            if not args.no_shards:
                names = []
                for k in range(1, args.shards + 1):
                    shard = f"--shard={k}/{args.shards}"
                    shard_args = run_args(f"shard{k}", shard, *parts)
                    wall, rss, *_ = harness(args.python, env, root, *shard_args, "--", "-q")
                    row["shard_rss"] = max(row.get("shard_rss", 0.0), rss)
                    names.append(f"shard{k}.json")
                merge = ["merge", *names, "--json", "merged.json", "--html", "merged.html"]
                wall, rss, *_ = harness(args.python, env, root, *merge)
                reading, merging, whole = time_reading(args.python, env, root, names)
                row.update(merge_cmd=wall, merge_rss=rss, reading=reading, merge=merging)
                print(
                    f"{count:>6} scenarios, {args.shards} shards: largest shard peak "
                    f"{row['shard_rss']:.0f} MB; reading the shards one entry at a time "
                    f"{reading:.2f} s (whole: {whole:.2f} s); read, check, merge and write "
                    f"results.json {merging:.2f} s ({merging / reading:.2f}x); `harness "
                    f"merge` with the report {wall:.2f} s, peak {rss:.0f} MB",
                    flush=True,
                )
            page = None if args.no_browser else browser(root / "one.html")
            if page is not None:
                row.update(page)
                print(
                    f"{count:>6} scenarios, chromium: first paint {page['paint']:.2f} s, "
                    f"load {page['load']:.2f} s, one scenario opened in {page['open']:.3f} s",
                    flush=True,
                )
        base_rss = figures[min(figures)]["run_rss"]
        low = min(figures)
        for count, row in figures.items():
            if count == low:
                continue
            more = (count - low) / 1000
            own = (row["session_rss"] - figures[low]["session_rss"]) / more
            theirs = (row["floor_rss"] - figures[low]["floor_rss"]) / more
            print(
                f"{count:>6}: growth over {low} scenarios per 1,000 more: harness run in one "
                f"session {own:.1f} MB, of which plain pytest's items and reports {theirs:.1f} MB"
            )
        for count, row in figures.items():
            checks = [("run peak", row["run_rss"] / base_rss, 1.3)]
            if "merge_rss" in row:
                checks.append(("largest shard peak", row["shard_rss"] / base_rss, 1.3))
                checks.append(("merge peak", row["merge_rss"] / base_rss, 1.3))
                checks.append(("merge / reading", row["merge"] / row["reading"], 1.5))
            if "paint" in row:
                checks += [("first paint s", row["paint"], 2.0), ("open s", row["open"], 0.5)]
            shown = ", ".join(
                f"{name} {value:.2f} (<= {limit})" + ("" if value <= limit else " MISSED")
                for name, value, limit in checks
            )
            ok = ok and all(value <= limit for _, value, limit in checks)
            print(f"{count:>6}: {shown}")
    print("targets met" if ok else "TARGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
