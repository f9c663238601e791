"""Re-record the example cassettes of scenarios/recorded/ through `harness serve`.

Each recorded example has a model script in scenarios/recorded/models/<name>.model.yaml.
This starts `harness serve` on that script (an OpenAI-compatible server on 127.0.0.1),
points the real openai SDK at it with OPENAI_BASE_URL, records the scenario with
`harness run --record-mode rewrite`, and stops the server. No internet is needed; the
same commands with a real OPENAI_BASE_URL/OPENAI_API_KEY record a real model.

The server plays the judge too: a model script's `judge_script` answers the requests a
judged scenario's judges make (marked `x-harness-role: judge`), recorded into the same
cassette (judged-weather). A matrix scenario records one cassette per combination
against the one server (matrix-weather).

    python scripts/record_examples.py            # every example
    python scripts/record_examples.py weather-chat
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "scenarios" / "recorded"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(url: str, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"harness serve exited with status {server.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"harness serve did not answer at {url}")


def record(name: str) -> int:
    model = RECORDED / "models" / f"{name}.model.yaml"
    scenario = RECORDED / f"{name}.scenario.yaml"
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    server = subprocess.Popen(["harness", "serve", str(model), "--port", str(port)], cwd=ROOT)
    try:
        wait_until_up(url, server)
        # A fake key: the local server does not check it, and it never reaches the cassette.
        env = {**os.environ, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-local-recording"}
        return subprocess.run(
            [
                "harness",
                "run",
                str(scenario),
                "--record-mode",
                "rewrite",
                "--json",
                os.devnull,
                "--html",
                os.devnull,
            ],
            cwd=ROOT,
            env=env,
            check=False,
        ).returncode
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main(argv: list[str]) -> int:
    names = argv or sorted(
        p.name.removesuffix(".model.yaml") for p in (RECORDED / "models").glob("*.model.yaml")
    )
    failed = [name for name in names if record(name) != 0]
    if failed:
        print(f"recording failed for: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
