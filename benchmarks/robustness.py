"""The fault-tolerance matrix of the example targets: `harness explore --depth 1` over every
target scenario of scenarios/external/ (raw SDKs, pydantic-ai, the Agents SDK, LangGraph,
ADK, the Claude Agent SDK, Node, ...), written to docs/robustness.md: framework x fault
kind -> held, or what broke, with the break named as the framework's documented behaviour
where it is one.

    python benchmarks/robustness.py [--out docs/robustness.md] [--only NAME] [-n N]
    python -m benchmarks robustness

The page is generated, never edited by hand. Not a test: it takes minutes (a target run
per schedule, a served timeout holds its second).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harness.explore import MODEL_FAULTS, ExploreError, ExploreOptions  # noqa: E402
from harness.explore._exploring import explore_file  # noqa: E402
from harness.explore._running import Workers  # noqa: E402

# The framework of each example agent module (or command).
FRAMEWORKS = {
    "raw_sdk": "openai SDK",
    "raw_anthropic": "anthropic SDK",
    "gemini_sdk": "google-genai SDK",
    "pydantic_ai": "pydantic-ai",
    "agents_sdk": "OpenAI Agents SDK",
    "multi_agent:coordinate": "OpenAI Agents SDK",
    "multi_agent:supervise": "LangGraph (langgraph-supervisor)",
    "langgraph": "LangGraph",
    "adk_agent": "Google ADK",
    "claude_agent": "Claude Agent SDK",
    "node_agent": "Node (openai SDK for JavaScript)",
}

HTTP = {"http_429", "http_500", "http_503", "overloaded", "timeout", "outage", "stream_cut"}

# Breaks that are a framework's (or the example's) documented behaviour: (what the agent's
# source holds, the framework, the fault kinds explained, the note).
NOTES = [
    (
        "max_retries=0",
        "",
        HTTP - {"outage"},
        "the example makes its client with `max_retries=0` (the SDK's default is 2 retries, "
        "which honour `retry-after`): a failed request is the end of the run",
    ),
    (
        "google",
        "",
        HTTP - {"outage"},
        "google-genai does not retry unless its client is given `HttpRetryOptions` "
        "(its `retry_args(None)` stops after one attempt)",
    ),
    (
        "",
        "OpenAI Agents SDK",
        {"unknown_tool", "truncated"},
        "the Agents SDK raises `ModelBehaviorError` for a call of a tool the agent does not "
        "have (and an incomplete reply), and `Runner.run` lets it out",
    ),
]
# What is true of every agent, said once.
GENERAL = [
    "`outage`: an API that stays down is recovered by no client; an agent holds by "
    "answering the error in words instead of raising, as pydantic-ai's and the SDKs' "
    "exceptions allow.",
    "`stream_cut` of a streamed reply: the SDKs retry a request that failed, not a stream "
    "that broke after its first events; a whole reply cut mid-body is a connection error "
    "they retry (when they retry at all).",
    "A scenario whose run as written already breaks the default invariants (one that "
    "expects an `llm_error`) is not explored: every variant would break them.",
]


def framework(scenario: Path) -> str:
    """The framework of a scenario's target, from its module (or command)."""
    text = scenario.read_text(encoding="utf-8")
    match = re.search(r"(?:python|command):\s*(.+)", text)
    target = match.group(1) if match else ""
    for key, name in FRAMEWORKS.items():
        if key in target:
            return name
    return target.strip()


def agent_source(scenario: Path) -> str:
    """The source of the target's module ('' for a command)."""
    text = scenario.read_text(encoding="utf-8")
    match = re.search(r"python:\s*([\w.]+):", text)
    if not match:
        return ""
    spec = importlib.util.find_spec(match.group(1))
    return Path(spec.origin).read_text(encoding="utf-8") if spec and spec.origin else ""


def explore_target(path: Path, workers: Workers, out: Path) -> dict:
    """Depth 1 of one target: per fault kind, the schedules tried and how they broke."""
    options = ExploreOptions(faults=MODEL_FAULTS, output=out, write=False, shrink=False)
    started = time.perf_counter()
    try:
        entry = explore_file(path, options, workers)
    except ExploreError as exc:
        return {"error": str(exc)}
    if entry.skipped is not None:
        return {"skipped": entry.skipped}
    kinds: dict[str, list] = defaultdict(list)
    for schedule in entry.tried:
        kinds[schedule.faults[0][1]].append(schedule)
    return {"kinds": kinds, "seconds": time.perf_counter() - started, "entry": entry}


def cell(schedules: list) -> str:
    """``held``, or how many broke and how (``3/3 llm_error 429``)."""
    if not schedules:
        return "n/a"
    broken = [s for s in schedules if s.outcome != "held"]
    if not broken:
        return "held"
    how = sorted({_how(s) for s in broken})
    return f"{len(broken)}/{len(schedules)} " + ", ".join(how)


def _how(schedule) -> str:
    if schedule.outcome == "crashed":
        return "crashed"
    status = re.search(r"\b(\d{3})\b", schedule.cause or "")
    text = schedule.termination or "?"
    if "max_requests_per_call" in schedule.broken:
        text += " (retry storm)"
    return text + (f" {status.group(1)}" if status and schedule.termination == "llm_error" else "")


def notes_for(source: str, name: str, broken: set[str]) -> list[str]:
    return [
        text
        for marker, framework_name, kinds, text in NOTES
        if marker in source and framework_name in name and broken & kinds
    ]


def render(results: dict[Path, dict], seconds: float) -> str:
    kinds = list(MODEL_FAULTS)
    lines = [
        "# Robustness of the example targets under faults",
        "",
        "Generated by `python benchmarks/robustness.py` (do not edit by hand): `harness explore",
        "--depth 1` over every target scenario of `scenarios/external/`, each model fault of the",
        "catalogue ([explore.md](explore.md#the-fault-catalogue)) at each model call of its run",
        "as written, judged by the default invariants (the agent returns, within its timeout,",
        "with at most 5 requests for one reply). A cell is `held` when every site held, else",
        "how many of its sites broke and how the run ended (`llm_error 429`: the agent raised",
        "on an HTTP 429; `error`: it raised something else; `crashed`: not judged, the",
        "script written for the run as written cannot answer the run the fault made, see",
        "[explore.md](explore.md)). The examples are written to show harness, not to be",
        "robust: the notes say which breaks are the example's choice or the framework's",
        "documented behaviour.",
        "",
        "| scenario | framework | " + " | ".join(f"`{k}`" for k in kinds) + " |",
        "|---|---|" + "---|" * len(kinds),
    ]
    notes: list[str] = []
    for path, result in sorted(results.items()):
        name = f"`{path.relative_to(ROOT).as_posix()}`"
        if "kinds" not in result:
            why = result.get("skipped") or result.get("error", "")
            lines.append(
                f"| {name} | {framework(path)} | "
                + f"not explored: {why} |"
                + " |" * (len(kinds) - 1)
            )
            continue
        cells = [cell(result["kinds"].get(kind, [])) for kind in kinds]
        lines.append(f"| {name} | {framework(path)} | " + " | ".join(cells) + " |")
        broken = {k for k in kinds if any(s.outcome != "held" for s in result["kinds"].get(k, []))}
        for text in notes_for(agent_source(path), framework(path), broken):
            notes.append(f"- {name}: {text}.")
    lines += ["", "## Notes", "", *(f"- {text}" for text in GENERAL), *notes, ""]
    tried = sum(len(r["entry"].tried) for r in results.values() if "entry" in r)
    lines.append(
        f"Explored in {seconds:.0f} s ({tried} schedules); the figures of harness explore's "
        "own cost are in [performance.md](performance.md#harness-explore)."
    )
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "robustness.md")
    parser.add_argument("--only", help="one scenario file name (no .scenario.yaml)")
    parser.add_argument("-n", type=int, default=1, help="worker processes")
    args = parser.parse_args()
    paths = sorted((ROOT / "scenarios" / "external").glob("*.scenario.yaml"))
    if args.only:
        paths = [p for p in paths if p.name.split(".")[0] == args.only]
    started = time.perf_counter()
    results: dict[Path, dict] = {}
    workers = Workers(args.n)
    # Inside the project: variants load as files of the output folder (nothing is written).
    with tempfile.TemporaryDirectory(prefix=".explore-bench-", dir=ROOT) as out:
        try:
            for path in paths:
                results[path] = explore_target(path, workers, Path(out))
                took = results[path].get("seconds")
                print(f"{path.name}: {f'{took:.1f} s' if took else results[path]}", flush=True)
        finally:
            workers.close()
    text = render(results, time.perf_counter() - started)
    failed = [path.name for path, result in results.items() if "error" in result]
    if failed:
        print(f"not written: {', '.join(failed)} could not be explored (see above)")
        return 1
    if args.only:
        print(text)
    else:
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
