"""docs/plugins.md's examples run as written: a planner, a tool pack, an observer, an
expectation key, the project that uses them, and the same plugins packaged."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest

from harness import Agent
from harness import _plugins as plugins
from harness.llm import ScriptedLLM
from harness.scenario import run_scenario

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "plugins.md"
BLOCK = re.compile(r"```(?:python|toml|yaml)\n# file: (\S+)\n(.*?)```", re.DOTALL)


def _files() -> dict[str, str]:
    """Every block of the page that names its file, by path."""
    return {
        m.group(1): f"# file: {m.group(1)}\n{m.group(2)}" for m in BLOCK.finditer(DOC.read_text())
    }


def _write(root: Path, files: dict[str, str], skip: str = "packaged/") -> None:
    for name, text in files.items():
        if name.startswith(skip):
            continue
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "shop" / "__init__.py").write_text("")


@pytest.fixture
def forget_shop():
    plugins.discovery.reset()
    yield
    plugins.discovery.reset()
    for name in [m for m in sys.modules if m == "shop" or m.startswith("shop.")]:
        del sys.modules[name]


def test_the_page_holds_every_example():
    assert set(_files()) == {
        "shop/planner.py",
        "shop/tools.py",
        "shop/observer.py",
        "shop/expectations.py",
        "shop/report.py",
        "pyproject.toml",
        "scenarios/kettle.scenario.yaml",
        "packaged/pyproject.toml",
    }


def test_the_project_runs_its_scenario_with_its_plugins(tmp_path, forget_shop):
    _write(tmp_path, _files())
    result = run_scenario(tmp_path / "scenarios" / "kettle.scenario.yaml")
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    # The planner ran the first call of the first plan; the second was never run.
    assert [(c.name, c.status) for c in result.tool_calls] == [
        ("check_stock", "ok"),
        ("reserve", "ok"),
        ("check_stock", "not_run"),
    ]
    from shop.observer import SEEN

    assert SEEN == [("completed", ["check_stock", "reserve"])]


def test_the_packaged_plugins_are_found_through_their_entry_points(
    tmp_path, forget_shop, monkeypatch
):
    files = _files()
    _write(tmp_path, {k: v for k, v in files.items() if k.startswith("shop/")})
    # Installed as pip would: a dist-info whose entry_points.txt holds the page's table.
    packaged = tomllib.loads(files["packaged/pyproject.toml"])["project"]
    info = tmp_path / "shop_harness_plugins-1.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {packaged['name']}\nVersion: {packaged['version']}\n"
    )
    table = packaged["entry-points"]["harness"]
    (info / "entry_points.txt").write_text(
        "[harness]\n" + "".join(f"{name} = {module}\n" for name, module in table.items())
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    project = tmp_path / "elsewhere"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'elsewhere'\n")
    manager = plugins.discover(project)
    names = [name for name, _ in manager.plugins()]
    assert "shop-planner" in names and "shop-tools" in names
    agent = Agent(
        ScriptedLLM(
            [{"tool_calls": [{"check_stock": {"item": "kettle"}}]}, {"content": "3 left."}]
        ),
        tools=["check_stock"],
        planner="cautious",
    )
    result = agent.run("Kettles?")
    assert result.final.content == "3 left." and result.tool_calls[0].result == 3


# harness.plugin: the plugin author's one import.
PLUGIN_API = {
    "AbortRun",
    "AgentConfig",
    "AssistantMessage",
    "CheckContext",
    "CompleteAction",
    "Conversation",
    "DetectorSettings",
    "EmptyAction",
    "ExecuteToolsAction",
    "FinalResponse",
    "LLMChunk",
    "LLMRequest",
    "LLMResponse",
    "MakeLLMRequestAction",
    "Run",
    "Section",
    "Stuck",
    "Table",
    "TargetCall",
    "TargetError",
    "Tool",
    "ToolAction",
    "ToolCall",
    "ToolCallDelta",
    "ToolCallRecord",
    "ToolResult",
    "UserContext",
    "WireVendor",
    "current_run",
    "hookimpl",
    "scrub_text",
    "simclock",
    "tool",
}


def test_harness_plugin_holds_the_names_the_page_lists():
    import harness
    import harness.plugin as api
    from harness._run import current_run
    from harness.detectors import Stuck
    from harness.external import TargetError

    assert set(api.__all__) == PLUGIN_API
    table = DOC.read_text().split("| names | for |\n|---|---|\n", 1)[1].split("\n\n", 1)[0]
    listed = {n for row in table.splitlines() for n in re.findall(r"`(\w+)", row.split("|")[1])}
    assert listed == PLUGIN_API
    # The same objects as harness's own, not copies: isinstance and `is` checks hold.
    for name in PLUGIN_API & set(harness.__all__):
        assert getattr(api, name) is getattr(harness, name), name
    assert (api.Stuck, api.TargetError, api.current_run) == (Stuck, TargetError, current_run)


def _harness_imports(text: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "harness":
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "harness"}
    return found


def test_the_example_plugins_import_harness_plugin_only():
    examples = {name: text for name, text in _files().items() if name.endswith(".py")}
    examples |= {f"plugins/{p.name}": p.read_text() for p in (ROOT / "plugins").glob("*.py")}
    imports = {name: _harness_imports(text) for name, text in examples.items()}
    assert {name: found - {"harness.plugin"} for name, found in imports.items()} == {
        name: set() for name in examples
    }
    assert sum(1 for found in imports.values() if found) >= 8
