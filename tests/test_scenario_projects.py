"""A scenario loads and runs with the plugins of its own project, wherever harness starts."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from harness import _plugins as plugins
from harness._errors import ScenarioError
from harness.cli import main
from harness.scenario import load_scenario, run_scenario

ROOT = Path(__file__).resolve().parent.parent

PLANNER_PLUGIN = """\
from harness import FinalResponse, hookimpl


class Planner:
    def __init__(self, config):
        pass

    def step(self, run):
        return FinalResponse(content={answer!r})


@hookimpl
def harness_register_planners(register):
    register({planner!r}, Planner)
"""


# The plugin modules these tests write (forgotten after each test, and only they: other
# modules first imported meanwhile, openai's say, must stay the ones already in use).
OWN_MODULES = (
    "plugin_of_project_a",
    "plugin_of_project_b",
    "added_plugin_for_test",
    "shared_name_for_test",
)


@pytest.fixture
def isolated(monkeypatch):
    """Fresh plugin managers; the test's plugin modules and sys.path entries go away after."""
    plugins.discovery.reset()
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name in [n for n in sys.modules if n.split(".")[0] in OWN_MODULES]:
        del sys.modules[name]
    plugins.discovery.reset()


def make_project(folder: Path, module: str, planner: str, answer: str) -> Path:
    """A project whose pyproject lists one local plugin module registering ``planner``."""
    folder.mkdir(parents=True)
    (folder / "pyproject.toml").write_text(
        f"[project]\nname = 'p'\n[tool.harness]\nplugins = [{module!r}]\n"
    )
    package, _, leaf = module.rpartition(".")
    target = folder.joinpath(*package.split(".")) if package else folder
    target.mkdir(parents=True, exist_ok=True)
    if package:
        (target / "__init__.py").write_text("")
    (target / f"{leaf}.py").write_text(PLANNER_PLUGIN.format(planner=planner, answer=answer))
    (folder / "scenarios").mkdir()
    return folder


def scenario(project: Path, name: str, planner: str) -> Path:
    path = project / "scenarios" / f"{name}.scenario.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: {name}
            input: hi
            agent: {{planner: {planner}}}
            expect: {{termination: completed}}
            """
        )
    )
    return path


@pytest.mark.repo_plugins
def test_validate_finds_the_plugins_of_the_scenarios_project_from_anywhere(
    isolated, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)  # no pyproject.toml here or above
    assert main(["validate", str(ROOT / "scenarios" / "plugins")]) == 0, capsys.readouterr()


@pytest.mark.repo_plugins
def test_a_run_started_elsewhere_gives_the_same_result(isolated, tmp_path, monkeypatch):
    path = ROOT / "scenarios" / "plugins" / "budget-planner.scenario.yaml"
    monkeypatch.chdir(ROOT)
    here = run_scenario(path)
    monkeypatch.chdir(tmp_path)
    plugins.discovery.reset()
    elsewhere = run_scenario(path)
    assert elsewhere.status == "passed"
    stable = [json.loads(r.model_dump_json(exclude={"wall_time"})) for r in (here, elsewhere)]
    assert stable[0] == stable[1]


def test_each_project_gets_its_own_plugins_found_once(isolated, tmp_path, monkeypatch):
    a = make_project(tmp_path / "a", "plugin_of_project_a", "planner_a", "from a")
    b = make_project(tmp_path / "b", "plugin_of_project_b", "planner_b", "from b")
    discovered = []
    discover = plugins._discover

    def counting(root, added=()):
        discovered.append(root)
        return discover(root, added)

    monkeypatch.setattr(plugins, "_discover", counting)
    monkeypatch.chdir(tmp_path)
    results = [
        run_scenario(scenario(a, "one", "planner_a")),
        run_scenario(scenario(a, "two", "planner_a")),
        run_scenario(scenario(b, "three", "planner_b")),
    ]
    assert [(r.status, r.final.content) for r in results] == [
        ("passed", "from a"),
        ("passed", "from a"),
        ("passed", "from b"),
    ]
    assert sorted(map(str, discovered)) == [str(a.resolve()), str(b.resolve())]
    with pytest.raises(ScenarioError, match="unknown planner 'planner_b'"):
        load_scenario(scenario(a, "four", "planner_b"))


def test_harness_plugin_modules_reach_every_project(isolated, tmp_path, monkeypatch):
    a = make_project(tmp_path / "a", "plugin_of_project_a", "planner_a", "from a")
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "added_plugin_for_test.py").write_text(
        PLANNER_PLUGIN.format(planner="added", answer="added")
    )
    monkeypatch.syspath_prepend(str(extra))
    monkeypatch.chdir(tmp_path)
    load_scenario(scenario(a, "one", "planner_a"))  # project a's manager exists already
    plugins.load_plugin_modules(["added_plugin_for_test"])  # as --harness-plugin does
    assert run_scenario(scenario(a, "two", "added")).final.content == "added"


def test_a_local_plugin_already_imported_from_another_project_is_an_error(
    isolated, tmp_path, monkeypatch
):
    # Python keeps one module per name: project b's `shared_name.plugin` would silently be
    # project a's.
    a = make_project(tmp_path / "a", "shared_name_for_test.plugin", "planner_a", "from a")
    b = make_project(tmp_path / "b", "shared_name_for_test.plugin", "planner_b", "from b")
    monkeypatch.chdir(tmp_path)
    load_scenario(scenario(a, "one", "planner_a"))
    with pytest.raises(ScenarioError, match=r"already imported from .*another project"):
        load_scenario(scenario(b, "two", "planner_b"))


def test_run_scenario_takes_plugins_for_one_run_only():
    from harness import hookimpl

    seen = []

    class Observer:
        @hookimpl
        def harness_llm_request(self, run, request):
            seen.append(request.call)

    path = ROOT / "scenarios/core/roundtrip.scenario.yaml"
    assert run_scenario(path, plugins=[Observer()]).status == "passed"
    assert seen == [1, 2]
    assert run_scenario(path).status == "passed"
    assert seen == [1, 2]  # not registered for later runs


TARGET_KIND = '''
import openai


class Prefixed:
    """Target kind `prefixed`: one request with the value before the input."""

    def check(self, value, root):
        pass

    async def run(self, value, call):
        async with openai.AsyncOpenAI(base_url=call.base_url, api_key="x", max_retries=0) as client:
            reply = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": value + (call.input or "")}]
            )
        return reply.choices[0].message.content


@hookimpl
def harness_register_targets(register):
    register("prefixed", Prefixed)
'''

COORDINATOR = """\
name: coordinator
input: hi
tools:
  helper: {agent: helper}
  lookup: {parameters: {q: str}, returns: "found {{ args.q }}"}
agents:
  helper:
    description: Helps with the project's own planner.
    agent: {planner: planner_a}
    tools:
      note: {parameters: {text: str}, returns: noted}
llm:
  script:
    - tool_calls: [{helper: {task: help}}, {lookup: {q: x}}]
    - content: done
expect: {termination: completed, final: {equals: done}}
"""

TARGET = """\
name: target
target: {prefixed: "Say: "}
input: hello
tools:
  lookup: {parameters: {q: str}, returns: found}
llm: {script: [{content: hello back}]}
expect: {termination: completed, final: {equals: hello back}}
"""


def test_a_scenario_run_finds_its_projects_plugins_once(isolated, tmp_path, monkeypatch):
    # One run, one plugin set: the runner finds it where the run starts and hands it to
    # the agent, its tools, its sub-agents and the target, which do not look again.
    a = make_project(tmp_path / "a", "plugin_of_project_a", "planner_a", "from a")
    (a / "plugin_of_project_a.py").write_text(
        PLANNER_PLUGIN.format(planner="planner_a", answer="from a") + TARGET_KIND
    )
    monkeypatch.chdir(tmp_path)
    loaded = []
    for name, text in (("coordinator", COORDINATOR), ("target", TARGET)):
        path = a / "scenarios" / f"{name}.scenario.yaml"
        path.write_text(text)
        loaded.append(load_scenario(path))
    asked = []
    project = plugins.discovery.project

    def counting(root):
        asked.append(root)
        return project(root)

    monkeypatch.setattr(plugins.discovery, "project", counting)
    for scenario_ in loaded:
        asked.clear()
        results = [run_scenario(scenario_), run_scenario(scenario_)]
        assert [r.status for r in results] == ["passed", "passed"], results[0].expectations
        assert len(asked) == 2, f"{scenario_.name}: the project asked for {len(asked)} times"
