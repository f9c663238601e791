"""The structure ARCHITECTURE.md describes, checked: layers import only downward, the
engine never imports an integration (not through the facade, not as a built-in loaded by
name), a wire imports only the model, no import circles, no module or function too long to
read, and a scripted Agent run loads no scenario code."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import importgraph

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60


def _layers() -> list[tuple[str, list[str]]]:
    """(layer name, module prefixes) from ARCHITECTURE.md's table, lowest layer first."""
    layers = []
    for line in (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].isdigit():
            layers.append((cells[1], re.findall(r"`(harness[\w.]*)`", cells[2])))
    assert layers, "ARCHITECTURE.md has no layer table"
    return layers


def _rank(module: str, layers: list[tuple[str, list[str]]]) -> int | None:
    best: tuple[int, int] | None = None
    for rank, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (
                best is None or len(prefix) > best[1]
            ):
                best = (rank, len(prefix))
    return best[0] if best else None


def _number(layers: list[tuple[str, list[str]]], name: str) -> int:
    """The rank of the layer called ``name``."""
    return [layer for layer, _ in layers].index(name)


def _engine_imports(
    edges: list[importgraph.Edge], layers: list[tuple[str, list[str]]]
) -> list[str]:
    """Imports of a wire or an integration by the engine or a layer below it."""
    engine, wires = _number(layers, "engine"), _number(layers, "wires")
    integrations = _number(layers, "integrations")
    found = []
    for edge in edges:
        source, target = _rank(edge.source, layers), _rank(edge.target, layers)
        if source is not None and source <= engine and target in (wires, integrations):
            found.append(f"{edge.file}:{edge.line}: {edge.source} imports {edge.target}")
    return found


def _misplaced_builtins(
    builtins: dict[str, list[tuple[str, int]]], layers: list[tuple[str, list[str]]]
) -> list[str]:
    """Built-in plugins named in a tuple their layer does not belong to."""
    engine, integrations = _number(layers, "engine"), _number(layers, "integrations")
    allowed = {
        "ENGINE_PLUGINS": lambda rank: rank <= engine,
        "INTEGRATION_PLUGINS": lambda rank: rank == integrations,
        "DEFAULT_PLUGINS": lambda rank: rank <= integrations,
    }
    found = []
    for name, modules in builtins.items():
        for module, line in modules:
            rank = _rank(module, layers)
            where = "in no layer" if rank is None else f"in the {layers[rank][0]} layer"
            if rank is None or not allowed.get(name, lambda _: False)(rank):
                found.append(f"harness/_plugins.py:{line}: {name} names {module}, {where}")
    return found


def test_every_module_is_in_a_layer():
    layers = _layers()
    unplaced = [m for m in importgraph.modules() if m != "harness" and _rank(m, layers) is None]
    assert unplaced == [], "add these modules to a layer in ARCHITECTURE.md"


def test_no_layer_imports_a_layer_above_it():
    layers = _layers()
    upward = []
    for edge in importgraph.edges():
        source, target = _rank(edge.source, layers), _rank(edge.target, layers)
        if source is not None and target is not None and target > source:
            upward.append(
                f"{edge.file}:{edge.line}: {edge.source} ({layers[source][0]}) imports "
                f"{edge.target} ({layers[target][0]})"
            )
    assert upward == []


def test_the_checker_sees_an_upward_import(tmp_path):
    # The check itself can fail: a base module importing the scenario layer is caught.
    package = tmp_path / "harness"
    (package / "scenario").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "scenario" / "__init__.py").write_text("")
    (package / "_errors.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import harness.scenario\n"
        "def f():\n    from harness.scenario import x\n"
    )
    found = importgraph.edges(package)
    assert [(e.source, e.target, e.line) for e in found] == [
        ("harness._errors", "harness.scenario", 5)
    ]
    layers = _layers()
    assert _rank("harness._errors", layers) < _rank("harness.scenario", layers)


def test_the_engine_never_imports_an_integration():
    # Implied by the order of the layers, said on its own: it is the rule most worth keeping
    # (the loop core runs with no SDK, server, wire, sandbox or judge loaded).
    assert _engine_imports(importgraph.edges(), _layers()) == []


def test_the_engine_loads_no_integration_as_a_built_in():
    # Built-ins are imported by their names: each name is checked against its layer.
    builtins = importgraph.string_imports()
    assert set(builtins) >= {"ENGINE_PLUGINS", "INTEGRATION_PLUGINS", "DEFAULT_PLUGINS"}
    assert _misplaced_builtins(builtins, _layers()) == []


def test_a_wire_imports_only_the_model_and_the_base():
    layers = _layers()
    model, wires = _number(layers, "model"), _number(layers, "wires")
    wide = [
        f"{edge.file}:{edge.line}: {edge.source} imports {edge.target}"
        for edge in importgraph.edges()
        if _rank(edge.source, layers) == wires
        and _rank(edge.target, layers) not in (*range(model + 1), wires)
    ]
    assert wide == []


def test_the_checker_sees_an_integration_imported_through_the_facade(tmp_path):
    # `from harness import RemoteAgentTool` in the loop: a lazy name of the facade, taken
    # from harness.a2a (an integration), is an import of harness.a2a._remote.
    package = tmp_path / "harness"
    (package / "a2a").mkdir(parents=True)
    (package / "__init__.py").write_text(
        "from harness._agent import Agent\n_TOOLS = ('CodeExecutionTool',)\n"
        "_LAZY = {'run_scenario': 'harness.scenario'}\n"
        "def __getattr__(name):\n"
        "    if name == 'RemoteAgentTool':\n        import harness.a2a._remote\n"
        "    if name in _TOOLS:\n        import harness.sandbox._tool\n"
    )
    (package / "a2a" / "__init__.py").write_text("")
    (package / "a2a" / "_remote.py").write_text("")
    (package / "_agent.py").write_text("")
    (package / "_loop.py").write_text("from harness import Agent, RemoteAgentTool\n")
    found = importgraph.edges(package)
    assert [(e.source, e.target) for e in found] == [
        ("harness._loop", "harness._agent"),
        ("harness._loop", "harness.a2a._remote"),
    ]
    assert importgraph.facade(package)["CodeExecutionTool"] == "harness.sandbox._tool"
    assert importgraph.facade(package)["run_scenario"] == "harness.scenario"
    assert _engine_imports(found, _layers()) == [
        "harness/_loop.py:1: harness._loop imports harness.a2a._remote"
    ]


def test_the_checker_sees_an_integration_among_the_engine_built_ins(tmp_path):
    package = tmp_path / "harness"
    package.mkdir()
    (package / "_plugins.py").write_text(
        "ENGINE_PLUGINS = (\n    'harness._checks',\n    'harness.serve._app',\n)\n"
        "INTEGRATION_PLUGINS = ('harness._loop', 'harness.judge._judges')\n"
        "DEFAULT_PLUGINS = (*ENGINE_PLUGINS, *INTEGRATION_PLUGINS, 'harness.report._html')\n"
    )
    found = _misplaced_builtins(importgraph.string_imports(package), _layers())
    assert found == [
        "harness/_plugins.py:3: ENGINE_PLUGINS names harness.serve._app, in the integrations layer",
        "harness/_plugins.py:5: INTEGRATION_PLUGINS names harness._loop, in the engine layer",
        "harness/_plugins.py:6: DEFAULT_PLUGINS names harness.report._html, in the report layer",
    ]


def test_no_import_circles():
    assert importgraph.cycles(importgraph.edges()) == []


def test_the_circle_finder_finds_a_circle():
    edge = importgraph.Edge
    found = importgraph.cycles(
        [edge("a", "b", "a.py", 1), edge("b", "c", "b.py", 1), edge("c", "a", "c.py", 1)]
    )
    assert found == [["a", "b", "c"]]


def test_no_module_is_too_long():
    long = {}
    for path in sorted((ROOT / "harness").rglob("*.py")):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            long[path.relative_to(ROOT).as_posix()] = lines
    assert long == {}, f"split these modules by responsibility (at most {MAX_MODULE_LINES} lines)"


def test_no_function_is_too_long():
    long = {}
    for path in sorted((ROOT / "harness").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT).as_posix()}:{node.lineno} {node.name}"] = lines
    assert long == {}, f"cut these into named steps (at most {MAX_FUNCTION_LINES} lines)"


SCRIPTED_RUN = """
import sys
from harness import Agent, tool
from harness.llm import ScriptedLLM

@tool
def get_weather(city: str) -> str:
    return f"72F in {city}"

llm = ScriptedLLM([{"tool_calls": [{"get_weather": {"city": "SF"}}]}, {"content": "Sunny."}])
result = Agent(llm=llm, tools=[get_weather]).run("weather?")
assert result.termination == "completed", result.final
heavy = ("yaml", "jinja2", "jsonschema", "harness.scenario")
print(sorted(m for m in sys.modules if m in heavy or m.startswith("harness.scenario.")))
"""


def test_a_scripted_agent_run_loads_no_scenario_code():
    # Run in a fresh interpreter: this test process has long imported everything.
    out = subprocess.run(
        [sys.executable, "-c", SCRIPTED_RUN],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.stdout.strip() == "[]", out.stderr


# A package's __init__.py is its facade, in one style: re-exports (imports and __all__),
# and, for names whose module is heavy or needs an optional dependency, a _LAZY table
# (name -> module) read by __getattr__, as pluggy does for __version__. Code lives in
# modules, where "where is X defined?" is answered by the import line.
_FACADE_NAMES = {"__all__", "__version__", "_LAZY"}


def _init_style_problems(path: Path) -> list[str]:
    problems = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import | ast.ImportFrom | ast.Expr):
            continue  # imports; the docstring (and harness's own logging set-up)
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            if names <= _FACADE_NAMES:
                continue
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
            continue
        problems.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno}")
    return problems


def test_every_package_init_is_a_facade():
    inits = sorted((ROOT / "harness").rglob("__init__.py"))
    found = [p for path in inits for p in _init_style_problems(path)]
    assert found == [], "code in a package's __init__.py: move it into a module of the package"


WIRE_FREE_RUN = """
import sys
from harness import Agent

result = Agent(llm=[{"content": "Sunny."}]).run("weather?")
assert result.termination == "completed", result.final
outside = ("harness.wires", "harness.serve", "harness.cassettes", "openai", "starlette", "vcr")
print(sorted(m for m in sys.modules if m.startswith(outside)))
"""


def test_a_scripted_agent_run_loads_no_wire_server_cassette_or_sdk():
    # The integrations' built-ins are discovered with the engine's, and load those only
    # when used: the engine's run needs none of them.
    out = subprocess.run(
        [sys.executable, "-c", WIRE_FREE_RUN],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
        timeout=120,
    )
    assert out.stdout.strip() == "[]", out.stderr


# -- Run: plugins read it, only harness._run changes it ---------------------------------------


def _run_attributes() -> set[str]:
    """Every attribute a Run has: what Run.__init__ assigns, its properties and methods."""
    tree = ast.parse((ROOT / "harness" / "_run.py").read_text(encoding="utf-8"))
    (run_class,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Run"]
    names = set()
    for node in ast.walk(run_class):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
        ):
            names.add(node.attr)
    return names


def _run_names(tree: ast.AST) -> set[str]:
    """The names a module binds to a Run: parameters annotated ``Run``, and ``run``."""
    names = {"run"}
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            if "Run" in {n.id for n in ast.walk(node.annotation) if isinstance(n, ast.Name)}:
                names.add(node.arg)
            elif isinstance(node.annotation, ast.Constant) and node.annotation.value == "Run":
                names.add(node.arg)
    return names


def _is_a_run(node: ast.expr, names: set[str]) -> bool:
    # `run`, a parameter annotated Run, or `<anything>.run` (an Observation's run, say).
    if isinstance(node, ast.Name):
        return node.id in names
    return isinstance(node, ast.Attribute) and node.attr == "run"


def assignments_to_run(path: Path, attributes: set[str]) -> list[str]:
    """``file:line: target`` of each statement in ``path`` that assigns (or deletes) an
    attribute of a Run."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = _run_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.Delete):
            targets = node.targets
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        for target in targets:
            for part in ast.walk(target):
                if (
                    isinstance(part, ast.Attribute)
                    and isinstance(part.ctx, ast.Store | ast.Del)
                    and part.attr in attributes
                    and _is_a_run(part.value, names)
                ):
                    found.append(f"{path.name}:{node.lineno}: {ast.unparse(part)}")
    return found


def test_nothing_outside_harness_run_assigns_a_run_attribute():
    # The loop, the tool plan runner and the observer change a run through its ledger's
    # methods (run.ledger): the bookkeeping's invariants live in one module.
    attributes = _run_attributes()
    assert {"iteration", "sim_time", "records", "conversation", "_ledger"} <= attributes
    found = [
        line
        for path in sorted((ROOT / "harness").rglob("*.py"))
        if path.name != "_run.py" or path.parent.name != "harness"
        for line in assignments_to_run(path, attributes)
    ]
    assert found == [], "change a run through run.ledger's methods (harness/_ledger.py)"


def test_the_checker_sees_an_assignment_to_a_run(tmp_path):
    module = tmp_path / "observe.py"
    module.write_text(
        "def request(self, plan: 'Run'):\n"
        "    self.run.iteration += 1\n"
        "    run.records = []\n"
        "    plan.conversation = None\n"
        "    self.iteration = 2\n"  # not a run: the observer's own attribute
    )
    assert assignments_to_run(module, _run_attributes()) == [
        "observe.py:2: self.run.iteration",
        "observe.py:3: run.records",
        "observe.py:4: plan.conversation",
    ]
