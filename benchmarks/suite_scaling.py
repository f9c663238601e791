"""Does a 500-scenario suite run faster with pytest-xdist? (issue 7)

Builds throw-away projects of 500 scenario files and times, wall clock, whole
`harness run` processes as a user starts them (results.json and report.html
included), serially and with ``-n 2``:

- ``example``: the repository's own example suite (scenarios/, its cassettes and
  plugins), copied over and over until there are 500 files: scripted runs of a few
  iterations, faults, stagnation, plugin tools, and one recorded run in six;
- ``recorded-R``: 500 recorded scenarios, each replaying a cassette of R tool rounds
  through the real openai SDK (the suite a team gets once it records its agent: the
  cassette is recorded once here, through ``harness serve``).

The speedup is serial time over ``-n 2`` time, medians of the repeats.

    python benchmarks/suite_scaling.py [--count 500] [--repeats 3]
        [--kinds example recorded-5 recorded-20]
    python -m benchmarks suite_scaling

Exits 1 when the largest kind misses the target speedup (--target, default 1.6).
Not a test: timing goals live here, not in the test suite.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

BENCH_TOOLS = '''\
from harness import tool


@tool
def lookup(key: str) -> dict:
    """Return a small record for a key."""
    return {"key": key, "value": len(key)}
'''

RECORDED_SCENARIO = """\
name: recorded-{i:04d}
input: look up {rounds} keys
tools:
  lookup: {{use: "bench_tools:lookup"}}
agent: {{max_iterations: {limit}}}
llm:
  provider: openai
  model: gpt-4o-mini
  cassette: {cassette}
expect:
  termination: completed
  tool_calls: {{count: {{lookup: {rounds}}}}}
  script_consumed: true
"""


def build_example(root: Path, count: int) -> None:
    """The repository's example suite, copied until there are ``count`` files."""
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    shutil.copytree(ROOT / "plugins", root / "plugins")
    files = sorted((ROOT / "scenarios").rglob("*.scenario.yaml"))
    copies = -(-count // len(files))
    written = 0
    for k in range(copies):
        for path in files:
            if written == count:
                break
            target = root / "scenarios" / f"set{k:03d}" / path.relative_to(ROOT / "scenarios")
            target.parent.mkdir(parents=True, exist_ok=True)
            # One folder deeper: a relative cassette path needs one more "..".
            target.write_text(path.read_text().replace("../../cassettes/", "../../../cassettes/"))
            written += 1
        for cassette in (ROOT / "cassettes" / "recorded").glob("*.yaml"):
            target = root / "cassettes" / f"set{k:03d}" / "recorded" / cassette.name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(cassette, target)
    shutil.copytree(ROOT / "cassettes" / "foreign", root / "cassettes" / "foreign")


def record_cassette(path: Path, rounds: int) -> None:
    """Record ``rounds`` tool rounds and an answer through harness serve (real SDK)."""
    sys.path.insert(0, str(path.parent.parent))
    try:
        import asyncio

        from bench_tools import lookup

        from harness import Agent
        from harness.llm._config import LLMConfig, LLMContext
        from harness.llm._script import ScriptStep
        from harness.providers.openai import OpenAILLM
        from harness.serve import running_server

        steps = [
            ScriptStep.model_validate({"tool_calls": [{"lookup": {"key": f"item-{i}"}}]})
            for i in range(rounds)
        ] + [ScriptStep(content="done")]
        os.environ.setdefault("OPENAI_API_KEY", "sk-local-benchmark")
        with running_server(steps) as base_url:
            config = LLMConfig(
                provider="openai", model="gpt-4o-mini", cassette=str(path), base_url=base_url
            )
            llm = OpenAILLM(config.with_context(LLMContext(record_mode="once")))
            agent = Agent(llm=llm, tools=[lookup], max_iterations=2 * rounds + 2)

            async def go() -> None:
                await agent.arun(f"look up {rounds} keys")
                await llm.aclose()

            asyncio.run(go())
    finally:
        sys.path.remove(str(path.parent.parent))


def build_recorded(root: Path, count: int, rounds: int) -> None:
    """``count`` scenarios replaying one cassette of ``rounds`` tool rounds."""
    (root / "pyproject.toml").write_text("[project]\nname = 'suite-scaling'\n")
    (root / "bench_tools.py").write_text(BENCH_TOOLS)
    (root / "cassettes").mkdir()
    cassette = root / "cassettes" / f"rounds-{rounds}.yaml"
    record_cassette(cassette, rounds)
    folder = root / "scenarios"
    folder.mkdir()
    for i in range(count):
        (folder / f"recorded-{i:04d}.scenario.yaml").write_text(
            RECORDED_SCENARIO.format(
                i=i, rounds=rounds, limit=2 * rounds + 2, cassette=f"../cassettes/{cassette.name}"
            )
        )


def timed(root: Path, workers: int | None) -> float:
    args = [sys.executable, "-m", "harness.cli", "run", "scenarios"]
    args += ["--json", str(root / "out.json"), "--html", str(root / "out.html")]
    if workers:
        args += ["-n", str(workers)]
    started = time.perf_counter()
    done = subprocess.run(args, cwd=root, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(
            f"harness run failed in {root}:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}"
        )
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--kinds", nargs="+", default=["example", "recorded-5", "recorded-20"])
    parser.add_argument("--target", type=float, default=1.6)
    options = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory(prefix="suite-scaling-") as tmp:
        for kind in options.kinds:
            root = Path(tmp) / kind
            root.mkdir()
            if kind == "example":
                build_example(root, options.count)
            else:
                build_recorded(root, options.count, int(kind.split("-", 1)[1]))
            timed(root, None)  # warm-up: file caches, .pyc
            serial, parallel = [], []
            for _ in range(options.repeats):
                serial.append(timed(root, None))
                parallel.append(timed(root, options.workers))
            s, p = statistics.median(serial), statistics.median(parallel)
            rows.append((kind, s, p, s / p))
            print(
                f"{kind}: serial {s:.2f} s, -n {options.workers} {p:.2f} s, speedup {s / p:.2f}x",
                flush=True,
            )

    print()
    print(f"| {options.count} scenarios | serial | `-n {options.workers}` | speedup |")
    print("|---|---:|---:|---:|")
    for kind, s, p, speedup in rows:
        print(f"| {kind} | {s:.2f} s | {p:.2f} s | {speedup:.2f}x |")
    print(
        f"\nmedian of {options.repeats}; {os.cpu_count()} CPUs; python {platform.python_version()}"
    )
    last = rows[-1]
    met = last[3] >= options.target
    print(
        f"target: -n {options.workers} at least {options.target}x faster on {last[0]}: "
        + ("met" if met else "MISSED")
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
