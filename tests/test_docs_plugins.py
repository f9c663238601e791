"""docs/plugins.md's examples run as written: a planner, a tool pack, an observer, an
expectation key, the project that uses them, and the same plugins packaged."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest

from harness import Agent, plugins
from harness.llm import ScriptedLLM
from harness.scenario import run_scenario

DOC = Path(__file__).resolve().parent.parent / "docs" / "plugins.md"
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
    plugins.reset()
    yield
    plugins.reset()
    for name in [m for m in sys.modules if m == "shop" or m.startswith("shop.")]:
        del sys.modules[name]


def test_the_page_holds_every_example():
    assert set(_files()) == {
        "shop/planner.py",
        "shop/tools.py",
        "shop/observer.py",
        "shop/expectations.py",
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
