"""``python -m benchmarks [NAME [ARGS...]]``: run every benchmark, or one, and sum up.

Each benchmark runs in its own interpreter, so one's imports, plugins and garbage do not
weigh on the next one's figures.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# Runs in the child: call main() and turn what it returns into an exit status; an exception
# is CRASHED, so that it is not mistaken for a missed target (1).
CRASHED = 3
_RUNNER = """\
import sys, traceback
sys.argv = ["python -m benchmarks {name}", *sys.argv[1:]]
try:
    import benchmarks.{name} as module
    status = module.main()
except SystemExit:
    raise
except BaseException:
    traceback.print_exc()
    sys.exit({crashed})
sys.exit(1 if status is False else status if isinstance(status, int) and status is not True else 0)
"""


def discover() -> list[str]:
    """Names of the modules in benchmarks/ that define a top-level ``main()``."""
    names = []
    for path in sorted(HERE.glob("*.py")):
        if path.name.startswith("_"):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except (OSError, SyntaxError) as exc:
            print(f"benchmarks: skipping {path.name}: {exc}", file=sys.stderr)
            continue
        if any(
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "main"
            for node in tree.body
        ):
            names.append(path.stem)
    return names


def run(name: str, args: list[str]) -> tuple[int, float]:
    """Run one benchmark in a fresh interpreter; its exit status and wall-clock seconds."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _RUNNER.format(name=name, crashed=CRASHED), *args], cwd=ROOT, env=env
    )
    return done.returncode, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks named (all when none is) and print a summary."""
    argv = sys.argv[1:] if argv is None else argv
    available = discover()
    if argv and argv[0] in ("-h", "--help", "--list"):
        print(__doc__.splitlines()[0])
        print("benchmarks: " + (", ".join(available) or "none"))
        return 0
    if argv:
        name, args = argv[0].removesuffix(".py"), argv[1:]
        if name not in available:
            print(
                f"benchmarks: no benchmark {name!r}; available: {', '.join(available) or 'none'}",
                file=sys.stderr,
            )
            return 2
        selected = [(name, args)]
    else:
        selected = [(name, []) for name in available]

    outcomes = []
    for name, args in selected:
        print(f"\n=== {name} ===", flush=True)
        outcomes.append((name, *run(name, args)))

    print("\n=== summary ===")
    for name, status, seconds in outcomes:
        word = {0: "ok", 1: "target missed", CRASHED: "crashed"}.get(status, f"failed ({status})")
        print(f"{name:<20} {word:<16} {seconds:8.1f} s")
    return 0 if all(status == 0 for _, status, _ in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
