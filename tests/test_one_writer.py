"""One writer of a run's record: no module of harness/ but harness/run.py reads or writes a
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
        "record through Run's public methods or run.ledger (harness/run.py), not its "
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
