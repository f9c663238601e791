"""One writer of a run's record: no module of harness/ but harness/_run.py reads or writes a
private attribute of a ``Run`` (``run._ledger``, ``run._hook``, ``run._sink``, ...).

The loop, the tool plan runner, budgets, detectors, streaming and the external observer
record what happened through ``Run``'s public engine methods (``notify_*``,
``action_signature``, ``replace_conversation``) and its ledger (``run.ledger``).

What the check sees, by the source's names only (no type inference): an attribute
``x._name`` (read, written or deleted; dunders aside) where ``x`` is the name ``run``, a
parameter annotated ``Run``, or any ``<expr>.run`` (an observer's ``self.run``). A run
reached under another name (``r = run; r._hook``) escapes it; it is a guard against the
habit, not a proof.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from harness import hookimpl
from harness.scenario import run_scenario

ROOT = Path(__file__).resolve().parents[1]


def _run_names(tree: ast.AST) -> set[str]:
    """``run`` and every parameter annotated ``Run`` (as a name or a string)."""
    names = {"run"}
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            annotation = node.annotation
            if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
                if "Run" in annotation.value.replace("|", " ").split():
                    names.add(node.arg)
            elif "Run" in {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)}:
                names.add(node.arg)
    return names


def _is_a_run(node: ast.expr, names: set[str]) -> bool:
    if isinstance(node, ast.Name):
        return node.id in names
    return isinstance(node, ast.Attribute) and node.attr == "run"


def private_reaches(path: Path) -> list[str]:
    """``file:line: expr`` of each access to a private attribute of a run in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = _run_names(tree)
    reaches = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and _is_a_run(node.value, names)
    ]
    reaches.sort(key=lambda node: (node.lineno, node.col_offset))
    return [f"{path.name}:{node.lineno}: {ast.unparse(node)}" for node in reaches]


def test_nothing_outside_harness_run_touches_a_runs_private_attributes():
    run_module = ROOT / "harness" / "run.py"
    found = [
        f"{path.relative_to(ROOT)}: {line.split(': ', 1)[1]}"
        for path in sorted((ROOT / "harness").rglob("*.py"))
        if path != run_module
        for line in private_reaches(path)
    ]
    assert found == [], (
        "record through Run's public methods or run.ledger (harness/_run.py), not its "
        f"private attributes: {found}"
    )


def test_the_checker_sees_reads_writes_and_annotated_runs(tmp_path):
    module = tmp_path / "observe.py"
    module.write_text(
        "def request(self, plan: 'Run', other: Run | None, ok: int):\n"
        "    self.run._hook.harness_agent_start(run=self.run)\n"
        "    run._ledger.advance_clock(1.0)\n"
        "    plan._sink = None\n"
        "    del other._observed\n"
        "    ok._private = 1\n"  # not a run
        "    self._run = run.ledger\n"  # the observer's own attribute; a public one
        "    run.__class__\n"  # a dunder, not a run's bookkeeping
    )
    assert private_reaches(module) == [
        "observe.py:2: self.run._hook",
        "observe.py:3: run._ledger",
        "observe.py:4: plan._sink",
        "observe.py:5: other._observed",
    ]


class _Hooks:
    """Every per-run hook an observer fires, in order."""

    def __init__(self):
        self.seen = []

    @hookimpl
    def harness_agent_start(self, run):
        self.seen.append(("agent_start", run.iteration))

    @hookimpl
    def harness_iteration_start(self, run, iteration):
        self.seen.append(("iteration_start", iteration))

    @hookimpl
    def harness_llm_request(self, run, request):
        self.seen.append(("llm_request", request.call))

    @hookimpl
    def harness_llm_response(self, run, response):
        self.seen.append(("llm_response", [c.name for c in response.message.tool_calls]))

    @hookimpl
    def harness_action_executed(self, run, action, result):
        self.seen.append(("action_executed", action.tool_call.name, result.status))

    @hookimpl
    def harness_agent_end(self, run, final):
        self.seen.append(("agent_end", run.termination.value))


@pytest.mark.hooks(
    "harness_agent_start",
    "harness_iteration_start",
    "harness_llm_request",
    "harness_llm_response",
    "harness_action_executed",
    "harness_agent_end",
)
def test_an_observed_target_fires_every_run_hook_in_the_loops_order(monkeypatch):
    # The observer records through the same Run methods as the loop: each moment's hook
    # fires once, in order (agent_start and iteration_start included, which no other
    # external test watches).
    monkeypatch.syspath_prepend(str(ROOT))  # the example agent imports as scenarios....
    hooks = _Hooks()
    result = run_scenario(
        ROOT / "scenarios" / "external" / "raw-sync.scenario.yaml", plugins=[hooks]
    )

    assert result.status == "passed"
    assert hooks.seen == [
        ("agent_start", 0),
        ("iteration_start", 1),
        ("llm_request", 1),
        ("llm_response", ["get_weather"]),
        ("action_executed", "get_weather", "ok"),  # its result came with request 2
        ("iteration_start", 2),
        ("llm_request", 2),
        ("llm_response", ["get_weather", "get_time"]),
        ("action_executed", "get_weather", "ok"),
        ("action_executed", "get_time", "ok"),
        ("iteration_start", 3),
        ("llm_request", 3),
        ("llm_response", []),
        ("agent_end", "completed"),
    ]
