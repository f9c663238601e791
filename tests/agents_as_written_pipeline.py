"""The stages tests/test_agents_as_written.py takes each agent through, run in a process of
the agent's own: `python tests/agents_as_written_pipeline.py NAME ROOT PART STAGE...`.

Each stage is the `harness` command a user types (`harness.cli.main`, in this process), in
the agent's project ROOT (its cwd): the framework is imported once for all the commands of
a part, not once per command. An agent takes two parts, two processes (so two hash seeds):

- part `a`: `run` (the scripted scenario) and `trace` (`harness freeze --trace` of the
  trace the run wrote, then `harness run` of it), `record` (`harness record` of the
  recorded variant through harness serve's app of the scripted scenario, in a thread,
  standing in for the vendor) and the first offline replay;
- part `b`: the second offline replay (its results.json must be byte-identical to the
  first's outside the wall clock: another process, another `PYTHONHASHSEED`), `freeze`
  (`harness freeze --scenario`, then `harness run` of the frozen file) and `observe` (the
  tool calls harness observed against those the tools logged).

A part writes what it found to ROOT/part-PART.json (part `b` reads part `a`'s): each
stage's outcome, `{ok, why}`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml

LOGGED_TOOLS = ("lookup_city", "save_note")  # the tool kit's tools (programs/toolkit.py)
SERVER_LOG = "logs/mcp-server.jsonl"  # mcp-own-loop's server logs there (its env:)
DUMMY_KEY = "sk-aaw-dummy-key-for-harness-serve"
STAGES = ("run", "record", "replay", "freeze", "observe")
# What each stage needs done before it, and in which part each runs.
NEEDS = {
    "run": ("run",),
    "trace": ("run", "trace"),
    "record": ("record",),
    "replay": ("record", "replay1", "replay2"),
    "freeze": ("record", "freeze"),
    "observe": ("run", "record", "replay1", "replay2", "observe"),
}
PARTS = {
    "a": ("run", "trace", "record", "replay1"),
    "b": ("replay2", "freeze", "observe"),
}


@dataclasses.dataclass(frozen=True)
class Spec:
    """How an agent is recorded: the provider its recorded variant names, and its model."""

    provider: str
    model: str
    requires: tuple[str, ...]
    trace: bool = False  # writes an OpenInference trace in its scripted run
    # Whether the framework sends a failed call's result in a form harness recognises
    # (docs/wires.md#tool-failures: the wire's flag, {"error": ...}, `Type: message`, a
    # framework's default failure text). Without one (LangChain's ToolException message
    # alone; LlamaIndex's {result: TEXT}) the call reads `ok`, as documented, and that is
    # what is checked.
    signal: bool = True


ANTHROPIC = ("anthropic",)
GENAI = ("google.genai",)
AGENTS: dict[str, Spec] = {
    "anthropic-sync": Spec("anthropic", "claude-sonnet-4-5", ANTHROPIC),
    "anthropic-async": Spec("anthropic", "claude-sonnet-4-5", ANTHROPIC),
    "anthropic-stream": Spec("anthropic", "claude-sonnet-4-5", ANTHROPIC),
    "anthropic-tool-runner": Spec("anthropic", "claude-sonnet-4-5", ANTHROPIC),
    "anthropic-thinking": Spec("anthropic", "claude-sonnet-4-5", ANTHROPIC),
    "anthropic-forced": Spec("anthropic", "claude-sonnet-4-5", ANTHROPIC),
    "genai-manual": Spec("gemini", "gemini-2.5-flash", GENAI),
    "genai-async": Spec("gemini", "gemini-2.5-flash", GENAI),
    "genai-stream": Spec("gemini", "gemini-2.5-flash", GENAI),
    "genai-afc": Spec("gemini", "gemini-2.5-flash", GENAI),
    "genai-chat": Spec("gemini", "gemini-2.5-flash", GENAI),
    "pydantic-ai-anthropic": Spec("anthropic", "claude-sonnet-4-5", ("pydantic_ai", "anthropic")),
    "pydantic-ai-google": Spec("gemini", "gemini-2.5-flash", ("pydantic_ai", "google.genai")),
    "agents-sdk-as-tool": Spec("openai", "gpt-4o", ("agents",)),
    "agents-sdk-handoffs": Spec("openai", "gpt-4o", ("agents",)),
    "langgraph-supervisor": Spec(
        "openai", "gpt-4o", ("langgraph_supervisor", "langchain_openai"), signal=False
    ),
    "mcp-served": Spec("anthropic", "claude-sonnet-4-5", ("mcp", "anthropic")),
    "mcp-own-loop": Spec("openai", "gpt-4o", ("mcp",)),
    "openinference-openai": Spec(
        "openai", "gpt-4o", ("openinference.instrumentation.openai",), trace=True
    ),
    "openinference-anthropic": Spec(
        "anthropic", "claude-sonnet-4-5", ("openinference.instrumentation.anthropic",), trace=True
    ),
    "openinference-genai": Spec(
        "gemini", "gemini-2.5-flash", ("openinference.instrumentation.google_genai",), trace=True
    ),
    # Three frameworks more (issue 43's "widen the net").
    "smolagents-code-agent": Spec("openai", "gpt-4o", ("smolagents",)),
    "llamaindex-function-agent": Spec(
        "gemini",
        "gemini-2.5-flash",
        ("llama_index.core", "llama_index.llms.google_genai"),
        signal=False,
    ),
    "agent-framework": Spec("openai", "gpt-4o", ("agent_framework", "agent_framework_openai")),
}


@dataclasses.dataclass
class Done:
    """What one harness command did: its exit status and what it printed."""

    returncode: int
    stdout: str
    stderr: str


def user_env() -> dict[str, str]:
    """The user's shell: no model settings of their own."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_", "AAW_"))
    }


def normalized(results: dict[str, Any]) -> str:
    """results.json without what changes between runs by design (meta, wall clock)."""
    out = dict(results)
    out.pop("meta", None)
    out["scenarios"] = [
        {k: v for k, v in s.items() if k not in ("wall_time", "wall_clock")}
        for s in results["scenarios"]
    ]
    return json.dumps(out, sort_keys=True, indent=1)


class Pipeline:
    """One agent's stages in its project, this process's part of them."""

    def __init__(self, name: str, root: Path) -> None:
        self.name, self.spec, self.root = name, AGENTS[name], root
        self.outcomes: dict[str, dict[str, Any]] = {}
        self.data: dict[str, Any] = {}  # results and tool logs a later stage reads
        self.scripted = root / "tests" / "agents_as_written" / f"{name}.scenario.yaml"
        self.recorded = self.scripted.with_name(f"{name}.recorded.scenario.yaml")
        self.frozen = self.scripted.with_name(f"{name}.frozen.scenario.yaml")

    # -- running harness -------------------------------------------------------------------

    def harness(
        self, tag: str, *args: str, extra: dict[str, str] | None = None
    ) -> tuple[Done, dict[str, Any] | None, list[dict[str, Any]]]:
        """`harness ARGS` in the project: what it did, its results and its tool log."""
        from harness.cli import main

        log = self.root / "logs" / f"{tag}.jsonl"
        log.parent.mkdir(exist_ok=True)
        log.unlink(missing_ok=True)
        server_log = self.root / SERVER_LOG  # the real MCP server's (mcp-own-loop)
        server_log.unlink(missing_ok=True)
        out = self.root / "logs" / f"{tag}.json"
        argv = list(args)
        if args[0] in ("run", "record"):
            argv += ["--json", str(out), "--html", str(out.with_suffix(".html"))]
        env = {
            **user_env(),
            "AAW_TOOL_LOG": str(log),
            "AAW_TRACE_FILE": str(log.with_suffix(".trace.json")),
            **(extra or {}),
        }
        shell = dict(os.environ)
        printed, said = io.StringIO(), io.StringIO()
        os.environ.clear()
        os.environ.update(env)
        try:
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(said):
                code = main(argv)
        finally:
            os.environ.clear()
            os.environ.update(shell)
        done = Done(code, printed.getvalue(), said.getvalue())
        results = (
            json.loads(out.read_text()) if args[0] in ("run", "record") and out.exists() else None
        )
        calls = [
            json.loads(line)
            for path in (log, server_log)
            if path.exists()
            for line in path.read_text().splitlines()
        ]
        return done, results, calls

    @staticmethod
    def _why(done: Done, results: dict[str, Any] | None) -> str:
        if results and results["scenarios"]:
            s = results["scenarios"][0]
            failed = [e for e in s.get("expectations", []) if not e.get("ok")]
            return (
                f"exit {done.returncode}: {s['status']} {s['termination']}, final.error "
                f"{json.dumps((s.get('final') or {}).get('error'))[:600]}, failed "
                f"expectations {json.dumps(failed)[:600]}"
            )
        return f"exit {done.returncode}: {(done.stderr or done.stdout)[-1500:]}"

    @staticmethod
    def _passed(done: Done, results: dict[str, Any] | None) -> bool:
        return (
            done.returncode == 0 and bool(results) and results["scenarios"][0]["status"] == "passed"
        )

    def _outcome(self, stage: str, ok: bool, why: str = "") -> None:
        self.outcomes[stage] = {"ok": ok, "why": "" if ok else why}

    # -- part a ----------------------------------------------------------------------------

    def run(self) -> None:
        done, results, calls = self.harness("run", "run", str(self.scripted))
        self.data["run"] = {"results": results, "calls": calls}
        self._outcome("run", self._passed(done, results), self._why(done, results))

    def trace(self) -> None:
        trace = self.root / "logs" / "run.trace.json"
        if not trace.exists():
            return self._outcome("trace", False, "the agent wrote no trace")
        out = self.scripted.with_name(f"{self.name}.trace.scenario.yaml")
        done, _, _ = self.harness("freeze-trace", "freeze", "--trace", str(trace), "-o", str(out))
        if done.returncode != 0:
            why = f"freeze --trace exit {done.returncode}: {done.stderr[-1500:]}"
            return self._outcome("trace", False, why)
        done, results, _ = self.harness("trace-run", "run", str(out))
        why = "frozen trace run: " + self._why(done, results)
        return self._outcome("trace", self._passed(done, results), why)

    def record(self) -> None:
        from harness.scenario import load_scenario
        from harness.serve import create_app, running_app

        data = yaml.safe_load(self.scripted.read_text())
        data["llm"] = {"provider": self.spec.provider, "model": self.spec.model}
        self.recorded.write_text(yaml.safe_dump(data, sort_keys=False))
        # harness serve's app of the scripted scenario, as `harness serve FILE` makes it.
        llm = load_scenario(self.scripted).llm
        app = create_app(
            list(llm.script),
            judge_steps=list(llm.judge_script),
            conversations=llm.conversations,
            draws="harness serve\x00seed 0",
        )
        with running_app(app) as served:
            url = served.removesuffix("/v1")
            vendor = {
                "OPENAI_BASE_URL": f"{url}/v1",
                "OPENAI_API_KEY": DUMMY_KEY,
                "ANTHROPIC_BASE_URL": url,
                "ANTHROPIC_API_KEY": DUMMY_KEY,
                "GOOGLE_GEMINI_BASE_URL": url,
                "GEMINI_API_KEY": DUMMY_KEY,
            }
            done, results, calls = self.harness(
                "record", "record", str(self.recorded), extra=vendor
            )
        self.data["record"] = {"calls": calls}
        cassettes = list((self.root / "cassettes").rglob(f"{self.name}.recorded*.yaml"))
        if not cassettes:
            return self._outcome(
                "record", False, "no cassette written: " + self._why(done, results)
            )
        return self._outcome("record", self._passed(done, results), self._why(done, results))

    def replay1(self) -> None:
        self._replay("replay1")

    def _replay(self, tag: str) -> None:
        if not self.outcomes["record"]["ok"]:
            return self._outcome(tag, False, "not recorded: " + self.outcomes["record"]["why"])
        done, results, calls = self.harness(tag, "run", str(self.recorded))
        self.data[tag] = {"results": results, "calls": calls}
        return self._outcome(tag, self._passed(done, results), self._why(done, results))

    # -- part b ----------------------------------------------------------------------------

    def replay2(self) -> None:
        self._replay("replay2")
        if not self.outcomes["replay1"]["ok"]:
            return self._outcome("replay", False, "replay 1: " + self.outcomes["replay1"]["why"])
        if not self.outcomes["replay2"]["ok"]:
            return self._outcome("replay", False, "replay 2: " + self.outcomes["replay2"]["why"])
        one = normalized(self.data["replay1"]["results"])
        two = normalized(self.data["replay2"]["results"])
        if one != two:
            diff = "".join(difflib.unified_diff(one.splitlines(True), two.splitlines(True), n=1))
            return self._outcome("replay", False, f"replays differ:\n{diff[:2000]}")
        return self._outcome("replay", True)

    def freeze(self) -> None:
        if not self.outcomes["record"]["ok"]:
            why = "not recorded: " + self.outcomes["record"]["why"]
            return self._outcome("freeze", False, why)
        done, _, _ = self.harness(
            "freeze", "freeze", "--scenario", str(self.recorded), "-o", str(self.frozen)
        )
        if done.returncode != 0:
            why = f"freeze exit {done.returncode}: {done.stderr[-1500:]}"
            return self._outcome("freeze", False, why)
        done, results, _ = self.harness("frozen", "run", str(self.frozen))
        why = "frozen run: " + self._why(done, results)
        return self._outcome("freeze", self._passed(done, results), why)

    def observe(self) -> None:
        run = self.data["run"]
        problems = compare(run["results"], run["calls"], "scripted run", self.spec.signal)
        if self.outcomes.get("replay", {}).get("ok"):
            # A replay runs a target's own tools again; an own-loop MCP server's calls are
            # replayed from the recording, so they are the recording's.
            replay = self.data["replay1"]
            calls = replay["calls"] or self.data["record"]["calls"]
            problems += compare(replay["results"], calls, "replay", self.spec.signal)
        self._outcome("observe", not problems, "; ".join(problems))


def compare(
    results: dict[str, Any] | None, calls: list[dict[str, Any]], where: str, signal: bool
) -> list[str]:
    """What harness observed against the tool log: each logged call, with its failure."""
    if not results or not results["scenarios"]:
        return [f"{where}: no results"]
    # Only the tools that log (not handoffs, sub-agents called as tools, ...).
    observed = sorted(
        (c["name"], json.dumps(c.get("arguments"), sort_keys=True), c["status"])
        for c in results["scenarios"][0]["tool_calls"]
        if c["name"] in LOGGED_TOOLS
    )
    logged = sorted(
        (
            c["tool"],
            json.dumps(c["args"], sort_keys=True),
            "error" if c["failed"] and signal else "ok",
        )
        for c in calls
    )
    if not logged:
        return [f"{where}: the tools logged no call"]
    # Every call of these scenarios' scripts runs (handoffs and agents-as-tools included):
    # a call answered in a later request is never `not_run`.
    unrun = [c["name"] for c in results["scenarios"][0]["tool_calls"] if c["status"] == "not_run"]
    if unrun and results["scenarios"][0]["termination"] == "completed":
        return [f"{where}: calls that ran are not_run: {unrun}"]
    if not any(c["failed"] for c in calls):
        return [f"{where}: no call failed (every agent has one failing on purpose)"]
    if observed != logged:
        return [f"{where}: observed {observed} but the tools logged {logged}"]
    return []


def steps_of(part: str, stages: list[str]) -> list[str]:
    """The steps of ``part`` that the asked ``stages`` need, in order."""
    needed = {step for stage in stages for step in NEEDS[stage]}
    return [step for step in PARTS[part] if step in needed]


def main(name: str, root: Path, part: str, stages: list[str]) -> None:
    pipeline = Pipeline(name, root)
    if part == "b":
        earlier = json.loads((root / "part-a.json").read_text())
        pipeline.outcomes, pipeline.data = earlier["outcomes"], earlier["data"]
    for step in steps_of(part, stages):
        getattr(pipeline, step)()
    state = {"outcomes": pipeline.outcomes, "data": pipeline.data}
    (root / f"part-{part}.json").write_text(json.dumps(state))


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4:])
