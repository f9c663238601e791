"""Run hand-written mutants of harness against the tests that should catch them.

Each mutant in the data file (scripts/mutants.toml by default) names a module, an exact
snippet of it, the snippet that replaces it, why the change matters to a user, and the
test files that should fail with it. This applies each mutant in turn to the working tree,
runs only its test files (one pytest process at a time: `-x -q -p no:randomly`, no xdist,
with a timeout), restores the module (always: on an error, Ctrl-C or SIGTERM too) and
prints whether the mutant was killed (a test failed, or the run timed out) or survived.

    python scripts/mutation.py                       # every mutant
    python scripts/mutation.py otel-mask secrets-url # some, by id
    python scripts/mutation.py --area sandbox        # those whose id starts with "sandbox"
    python scripts/mutation.py --list                # ids, modules, test files
    python scripts/mutation.py --check               # every snippet found once, nothing run

A mutant whose snippet is not found exactly once in its module, or whose module does not
compile once mutated, is an error (the code moved on: update the data file), never counted
as killed. A mutant may name a ``select``: a pytest ``-k`` expression choosing the tests of
its files meant to catch it (the sandbox attack suite's backend and user, say). The exit
status is 0 when the killed share reaches --goal (90% by default), 1 when it does not, 2
on a bad data file or a mutant that cannot be applied.

The module's bytes and modification time are put back exactly, and the test processes
write no bytecode, so a cached .pyc of the original is never confused with a mutant's.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import tomllib
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT / "scripts" / "mutants.toml"
_FIELDS = ("id", "module", "original", "mutated", "why", "tests")
PYTEST_ARGS = ["-x", "-q", "-p", "no:randomly", "-p", "no:xdist", "-p", "no:cacheprovider"]


@dataclass(frozen=True)
class Mutant:
    """One hand-made change: where, what it replaces, why it matters, what should catch it."""

    id: str
    module: str
    original: str
    mutated: str
    why: str
    tests: tuple[str, ...]
    select: str | None = None  # a pytest -k expression: the tests of those files to run
    survives: str | None = None  # why a known survivor is left (equivalent, or not worth it)


@dataclass(frozen=True)
class Outcome:
    """What running one mutant's tests gave."""

    mutant: Mutant
    status: str  # killed, survived, timeout (counted as killed) or error
    seconds: float
    detail: str = ""


class Stop(Exception):
    """SIGTERM turned into an exception, so the finally clauses restore the module."""


def load(path: Path) -> list[Mutant]:
    """Read the data file; a missing field or a duplicate id is a one-line error."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise SystemExit(f"error: {path}: {exc}") from None
    mutants: list[Mutant] = []
    seen: set[str] = set()
    for number, entry in enumerate(data.get("mutant", []), start=1):
        missing = [k for k in _FIELDS if k not in entry]
        if missing:
            raise SystemExit(f"error: {path}: mutant #{number} has no {', '.join(missing)}")
        if entry["id"] in seen:
            raise SystemExit(f"error: {path}: mutant id {entry['id']!r} is used twice")
        if entry["original"] == entry["mutated"]:
            raise SystemExit(f"error: {path}: mutant {entry['id']!r} changes nothing")
        seen.add(entry["id"])
        mutants.append(
            Mutant(
                id=entry["id"],
                module=entry["module"],
                original=entry["original"],
                mutated=entry["mutated"],
                why=" ".join(entry["why"].split()),
                tests=tuple(entry["tests"]),
                select=entry.get("select"),
                survives=entry.get("survives"),
            )
        )
    return mutants


def problem(mutant: Mutant) -> str | None:
    """Why this mutant cannot be applied (its module, snippet or tests are not there), or None."""
    module = ROOT / mutant.module
    if not module.is_file():
        return f"no module {mutant.module}"
    text = module.read_text(encoding="utf-8")
    count = text.count(mutant.original)
    if count != 1:
        return f"its snippet occurs {count} times in {mutant.module} (must be exactly once)"
    try:
        compile(text.replace(mutant.original, mutant.mutated, 1), mutant.module, "exec")
    except SyntaxError as exc:
        # A mutant that does not compile is killed by any import: it would count for nothing.
        return f"the mutated module does not compile (line {exc.lineno}: {exc.msg})"
    absent = [t for t in mutant.tests if not (ROOT / t.split("::")[0]).is_file()]
    if absent:
        return f"no test file {', '.join(absent)}"
    return None


def run_tests(mutant: Mutant, timeout: float) -> tuple[str, str]:
    """Run the mutant's tests in their own process group; (status, last line of output)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONDONTWRITEBYTECODE="1")
    command = [sys.executable, "-m", "pytest", *PYTEST_ARGS, *mutant.tests]
    if mutant.select:
        command += ["-k", mutant.select]
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return "timeout", f"no verdict in {timeout:.0f} s"
    except BaseException:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise
    lines = [line for line in output.splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if process.returncode == 0:
        return "survived", last
    if process.returncode in (1, 2, 3):
        failed = next((line for line in lines if line.startswith(("FAILED", "ERROR"))), last)
        return "killed", failed
    return "error", f"pytest exited {process.returncode}: {last}"


def run_one(mutant: Mutant, timeout: float) -> Outcome:
    """Apply the mutant, run its tests, and put the module back exactly as it was."""
    reason = problem(mutant)
    if reason:
        return Outcome(mutant, "error", 0.0, reason)
    module = ROOT / mutant.module
    original_bytes = module.read_bytes()
    stat = module.stat()
    text = original_bytes.decode("utf-8")
    started = time.monotonic()
    try:
        module.write_text(text.replace(mutant.original, mutant.mutated, 1), encoding="utf-8")
        # Another modification time than the original's: a .pyc cached for the original
        # (keyed on time and size) must not be taken for the mutant.
        os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
        status, detail = run_tests(mutant, timeout)
    finally:
        module.write_bytes(original_bytes)
        os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return Outcome(mutant, status, time.monotonic() - started, detail)


def baseline(mutants: list[Mutant], timeout: float) -> list[str]:
    """The test files run once unmutated: one failing already would make every mutant
    look killed. A list of what failed (empty: none)."""
    files = sorted({t for m in mutants for t in m.tests})
    clean = Mutant("unmutated", "", "", "", "", tuple(files))
    status, detail = run_tests(clean, timeout * 4)
    return [] if status == "survived" else [f"{status}: {detail}"]


def _stop(signum: int, frame: FrameType | None) -> None:
    raise Stop(f"signal {signum}")


def main(argv: list[str] | None = None) -> int:
    """The command line; see the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ids", nargs="*", help="mutant ids to run (default: all)")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="the mutants' TOML file")
    parser.add_argument("--area", action="append", default=[], help="ids starting with this")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds per mutant")
    parser.add_argument("--goal", type=float, default=0.9, help="killed share needed")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--check", action="store_true", help="check every snippet, run nothing")
    parser.add_argument(
        "--baseline", action="store_true", help="first run the named test files unmutated"
    )
    options = parser.parse_args(argv)
    mutants = load(options.data)
    unknown = set(options.ids) - {m.id for m in mutants}
    if unknown:
        print(f"error: no mutant {', '.join(sorted(unknown))} in {options.data}", file=sys.stderr)
        return 2
    if options.ids:
        mutants = [m for m in mutants if m.id in options.ids]
    if options.area:
        mutants = [m for m in mutants if m.id.startswith(tuple(options.area))]
    if options.list or options.check:
        problems = 0
        for m in mutants:
            reason = problem(m)
            problems += reason is not None
            if options.list:
                chosen = f" -k {m.select!r}" if m.select else ""
                print(f"{m.id:32} {m.module:36} {' '.join(m.tests)}{chosen}")
            if reason:
                print(f"error: {m.id}: {reason}", file=sys.stderr)
        print(f"{len(mutants)} mutants, {problems} that cannot be applied")
        return 2 if problems else 0
    signal.signal(signal.SIGTERM, _stop)
    if options.baseline:
        failures = baseline(mutants, options.timeout)
        if failures:
            print(f"error: the test files fail unmutated ({failures[0]})", file=sys.stderr)
            return 2
    return report([_announce(run_one(m, options.timeout)) for m in mutants], options.goal)


def _announce(outcome: Outcome) -> Outcome:
    m = outcome.mutant
    print(f"{outcome.status:9} {outcome.seconds:6.1f}s  {m.id}  ({m.module})", flush=True)
    if outcome.status in ("survived", "error"):
        print(f"          why it matters: {m.why}", flush=True)
        if outcome.status == "survived" and m.survives:
            print(f"          left because: {m.survives}", flush=True)
        if outcome.status == "error":
            print(f"          {outcome.detail}", flush=True)
    return outcome


def report(outcomes: list[Outcome], goal: float) -> int:
    """The summary figure; errors are left out of the share and listed."""
    counted = [o for o in outcomes if o.status != "error"]
    killed = [o for o in counted if o.status in ("killed", "timeout")]
    survived = [o for o in counted if o.status == "survived"]
    errors = [o for o in outcomes if o.status == "error"]
    share = len(killed) / len(counted) if counted else 0.0
    print()
    print(f"{len(killed)} of {len(counted)} mutants killed ({share:.0%}); goal {goal:.0%}")
    if survived:
        print("survived: " + ", ".join(o.mutant.id for o in survived))
    if errors:
        print("not run (errors): " + ", ".join(o.mutant.id for o in errors))
        return 2
    return 0 if share >= goal else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (KeyboardInterrupt, Stop):
        print("\ninterrupted; the module under mutation was restored", file=sys.stderr)
        sys.exit(130)
