"""What harness supports is what its public modules export: a module whose path has a
`_`-marked part (``harness.serve._bodies``) is an implementation detail behind its
package's facade, and docs and examples never name one (docs/plugins.md says which
names a plugin may use)."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "harness"
MOST_PUBLIC_NAMES = 300

# What users read and copy: every doc page, the README, the example project's plugins and
# scenarios. ARCHITECTURE.md is the contributors' map of the private modules too.
USER_FACING = ["README.md", "docs/*.md", "docs/*.py", "plugins/*.py", "scenarios/**/*.yaml"]

# harness.x._y (a private module, or anything inside one), `from harness.x import _y`,
# and harness/x/_y.py.
_DOTTED = re.compile(r"\bharness(?:\.[A-Za-z0-9_]+)*\._[A-Za-z0-9]\w*")
_FROM = re.compile(r"\bfrom\s+(harness(?:\.\w+)*)\s+import\s+\(?\s*([\w\s,]+)")
_PATH = re.compile(r"\bharness/(?:[A-Za-z0-9_]+/)*_[a-z0-9]\w*\.py\b")


def _public_modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__main__":
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if not any(part.startswith("_") for part in parts):
            found[".".join(parts)] = path
    return found


def _all_of(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            value = node.value  # type: ignore[union-attr]
            if isinstance(value, ast.Call):  # __all__ = sorted(_LAZY): the lazy names
                return None
            return list(ast.literal_eval(value))
    return []


def _lazy_names(path: Path) -> list[str]:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "_LAZY" for t in targets):
            return list(ast.literal_eval(node.value))  # type: ignore[union-attr]
    return []


def public_names() -> dict[str, list[str]]:
    """Each public module's exported names (its ``__all__``)."""
    names = {}
    for module, path in _public_modules().items():
        exported = _all_of(path)
        names[module] = _lazy_names(path) if exported is None else exported
    return names


def private_uses(text: str) -> list[str]:
    """The private module names ``text`` uses."""
    found = _DOTTED.findall(text) + _PATH.findall(text)
    for module, imported in _FROM.findall(text):
        found += [
            f"{module}.{name}"
            for name in re.split(r"[\s,]+", imported)
            if name.startswith("_") and not name.startswith("__")
        ]
    return found


def test_at_most_300_public_names():
    names = public_names()
    total = sum(len(exported) for exported in names.values())
    biggest = sorted(names.items(), key=lambda item: -len(item[1]))[:5]
    assert total <= MOST_PUBLIC_NAMES, (total, [(m, len(n)) for m, n in biggest])


def test_public_modules_are_the_facades():
    # A module below a package's facade is private unless it is one users import by its
    # path (the SDK sources, the plugin author's types, the run record's events).
    modules = set(_public_modules())
    loose = {m for m in modules if m.count(".") >= 2 and not m.startswith("harness.providers.")}
    assert loose == set()


def test_every_exported_name_exists():
    import importlib

    for module, exported in public_names().items():
        imported = importlib.import_module(module)
        missing = [name for name in exported if not hasattr(imported, name)]
        assert missing == [], module


def test_docs_and_examples_name_no_private_module():
    found = []
    for pattern in USER_FACING:
        for path in sorted(ROOT.glob(pattern)):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                found += [f"{path.relative_to(ROOT)}:{number}: {u}" for u in private_uses(line)]
    assert found == []


def test_the_check_sees_each_form_of_a_private_name():
    assert private_uses("see `harness.serve._bodies.BodyReader`") == ["harness.serve._bodies"]
    assert private_uses("limits=harness._asgi.ServerLimits()") == ["harness._asgi"]
    assert private_uses("from harness.serve import _bodies as bodies") == ["harness.serve._bodies"]
    assert private_uses("read harness/detectors/_builtin.py") == ["harness/detectors/_builtin.py"]
    assert private_uses("from harness.serve import create_app, running_app") == []
    assert private_uses("harness.plugin and `harness.scenario.matrix`, __all__") == []
