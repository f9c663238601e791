"""`harness run --live --concurrency N` against a model that takes 200 ms per reply.

Starts `harness serve` as a process of its own on 127.0.0.1, answering every request
after a real 200 ms (`latency: 0.2` on its script step: the server holds the response
for that long in wall-clock time, unlike a scripted scenario's simulated latency), and
runs 40 live scenarios x 3 repeats (120 model requests) through the real openai SDK
with `--concurrency 1` and `--concurrency 8`, each as a whole `harness run` process
(interpreter start-up, collection and reports included), twice each, alternated: the
faster of the two counts, as the machine's load comes and goes.

    python benchmarks/live_concurrency.py [--scenarios 40] [--repeat 3] [--concurrency 8]
    python -m benchmarks live_concurrency

Target: `--concurrency 8` at least 5x faster than `--concurrency 1`; exits 1 otherwise.
Not a test: timing goals live here.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LATENCY = 0.2

SERVED = f"""\
name: model
input: unused
llm:
  script:
    - content: It is 72F in SF.
      latency: {LATENCY}
"""

SCENARIO = """\
name: weather-{i:03d}
input: What's the weather in SF? ({i})
llm: {{provider: openai, model: gpt-4o-mini, base_url: "{url}"}}
expect:
  final: {{contains: 72F}}
"""


def start_server(root: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    """`harness serve` on a free port; the process and its base URL."""
    (root / "model.yaml").write_text(SERVED)
    server = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "serve", "model.yaml", "--port", "0"],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    line = server.stdout.readline()  # "harness serve: model.yaml at http://...:N/v1 (...)"
    if " at " not in line:
        server.kill()
        raise SystemExit(f"harness serve did not start: {line!r}")
    return server, line.split(" at ", 1)[1].split()[0]


def harness_run(root: Path, env: dict[str, str], *args: str) -> tuple[float, float]:
    """``harness run ARGS``: its wall time, and the pytest session's (pytest's "in N s":
    without interpreter start-up); every scenario must pass."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", *args, "--", "-q"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"harness run {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    session = re.search(r"passed in ([0-9.]+)s", done.stdout)
    return elapsed, float(session.group(1)) if session else elapsed


def main() -> int:
    """Run the benchmark; 1 when the target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--target", type=float, default=5.0)
    parser.add_argument(
        "--repeats", type=int, default=2, help="runs of each setting; the fastest counts"
    )
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "sk-local-benchmark"}
    env.pop("OPENAI_BASE_URL", None)
    with tempfile.TemporaryDirectory(prefix="bench-live-") as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[project]\nname = 'bench-live'\n")
        server, url = start_server(root, env)
        try:
            (root / "scenarios").mkdir()
            for i in range(args.scenarios):
                text = SCENARIO.format(i=i, url=url)
                (root / "scenarios" / f"w{i:03d}.scenario.yaml").write_text(text)
            common = ["--live", "--repeat", str(args.repeat)]
            ones, manys = [], []
            for _ in range(args.repeats):  # alternated, so that load changes hit both
                ones.append(harness_run(root, env, *common, "--concurrency", "1"))
                manys.append(
                    harness_run(root, env, *common, "--concurrency", str(args.concurrency))
                )
            one, many = min(ones), min(manys)  # fastest by process time
        finally:
            server.terminate()
            server.wait(30)
    requests = args.scenarios * args.repeat
    floor = requests * LATENCY
    print(
        f"{args.scenarios} scenarios x {args.repeat} repeats = {requests} requests of "
        f"{LATENCY * 1000:.0f} ms ({floor:.0f} s of model time one after another)"
    )
    for label, best, runs in (("1", one, ones), (str(args.concurrency), many, manys)):
        shown = ", ".join(f"{t:.2f}" for t, _ in runs)
        print(
            f"--concurrency {label}: {best[0]:.2f} s (pytest session {best[1]:.2f} s; "
            f"process times of the runs: {shown})"
        )
    print(f"model time alone at --concurrency {args.concurrency}: {floor / args.concurrency:.1f} s")
    print(f"load average after the runs: {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)")
    speedup = one[0] / many[0]
    ok = speedup >= args.target
    print(
        f"speedup {speedup:.2f}x (pytest sessions: {one[1] / many[1]:.2f}x); "
        f"target {args.target}x: {'met' if ok else 'MISSED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
