"""The import graph of the harness package, read from its source (no module is imported).

Edges are runtime imports: module-level and inside functions, but not those under
``if TYPE_CHECKING:`` (annotations only). ``from harness import simclock`` is an edge to
``harness.simclock``, and ``from harness import Agent`` one to the module the facade takes
``Agent`` from (``harness._agent``; a lazy name of its ``__getattr__`` too). The facade
itself (``harness/__init__.py``, which re-exports from every layer) is left out of the
graph. ``string_imports`` reads the built-in plugins, which are loaded by their names.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "harness"


@dataclass(frozen=True)
class Edge:
    """``source`` imports ``target`` at ``file:line``."""

    source: str
    target: str
    file: str
    line: int


def modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    out: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit(sub)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                out.append(child)
            visit(child)

    visit(tree)
    return out


def _names_tested(test: ast.expr, constants: dict[str, list[str]]) -> list[str]:
    """The names an ``if name == "X"`` or ``if name in NAMES`` test of ``__getattr__`` picks."""
    if not isinstance(test, ast.Compare) or len(test.comparators) != 1:
        return []
    other = test.comparators[0]
    if isinstance(test.ops[0], ast.Eq) and isinstance(other, ast.Constant):
        return [str(other.value)]
    if isinstance(test.ops[0], ast.In) and isinstance(other, ast.Name):
        return constants.get(other.id, [])
    return []


def _string_tuples(tree: ast.Module) -> dict[str, list[str]]:
    """Module-level ``NAME = ("a", "b", ...)`` assignments (a starred tuple expanded)."""
    found: dict[str, list[str]] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if not isinstance(target, ast.Name) or not isinstance(value, ast.Tuple | ast.List):
            continue
        strings: list[str] = []
        for element in value.elts:
            if isinstance(element, ast.Constant) and isinstance(element.value, str):
                strings.append(element.value)
            elif isinstance(element, ast.Starred) and isinstance(element.value, ast.Name):
                strings.extend(found.get(element.value.id, []))
        found[target.id] = strings
    return found


def facade(package: Path = PACKAGE) -> dict[str, str]:
    """Name -> the module the facade (``harness/__init__.py``) takes it from, lazy names too
    (an ``if name == ...`` or ``if name in NAMES`` branch of ``__getattr__`` importing a
    module, or a ``{name: module}`` table it reads)."""
    tree = ast.parse((package / "__init__.py").read_text(encoding="utf-8"))
    constants = _string_tuples(tree)
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            # A table of lazy names (name -> module) that ``__getattr__`` reads.
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(value, ast.Constant):
                    found.setdefault(str(key.value), str(value.value))
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                found[alias.asname or alias.name] = node.module
        elif isinstance(node, ast.If):
            for child in node.body:
                if isinstance(child, ast.Import):
                    for name in _names_tested(node.test, constants):
                        found.setdefault(name, child.names[0].name)
    return found


def edges(package: Path = PACKAGE) -> list[Edge]:
    """Every runtime import of one harness module by another (the facade left out; a name
    imported from it is an import of the module it comes from)."""
    known = modules(package)
    root = package.name
    through = facade(package)
    result = []
    for name, path in known.items():
        if name == root:
            continue
        is_package = path.name == "__init__.py"
        shown = path.relative_to(package.parent).as_posix()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = name.split(".")
                    parts = parts[: len(parts) - node.level + (1 if is_package else 0)]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                targets = [
                    f"{base}.{alias.name}"
                    if f"{base}.{alias.name}" in known
                    else through.get(alias.name, base)
                    if base == root
                    else base
                    for alias in node.names
                ]
            for target in targets:
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target and target != name and target != root:
                    result.append(Edge(name, target, shown, node.lineno))
    return result


def string_imports(package: Path = PACKAGE) -> dict[str, list[tuple[str, int]]]:
    """The built-in plugins, loaded by name: each ``*_PLUGINS`` tuple of
    ``harness/_plugins.py`` -> ``(module, line)`` of each name it holds."""
    path = package / "_plugins.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = {
        node.value: node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    return {
        name: [(module, lines.get(module, 0)) for module in strings]
        for name, strings in _string_tuples(tree).items()
        if name.endswith("_PLUGINS")
    }


def cycles(all_edges: list[Edge]) -> list[list[str]]:
    """The import circles: strongly connected components of two or more modules."""
    graph: dict[str, set[str]] = {}
    for edge in all_edges:
        graph.setdefault(edge.source, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def connect(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found
