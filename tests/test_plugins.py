"""Plugins: registration hooks, per-agent plugins, misspelled hooks, discovery."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import harness
from harness import (
    Agent,
    CompleteAction,
    ExecuteToolsAction,
    HarnessError,
    Termination,
    ToolAction,
    hookimpl,
    tool,
)
from harness._messages import ToolCall, ToolMessage
from harness._plugins import (
    DEFAULT_PLUGINS,
    PluginError,
    Plugins,
    builtin_name,
    default_plugins,
    discover,
)
from harness.llm import ScriptedLLM
from harness.llm._config import LLMConfig

ROOT = Path(__file__).resolve().parent.parent


@tool
def echo(text: str) -> str:
    """Echo."""
    return text


class TwoStepPlanner:
    """Runs one scripted echo plan, then completes with the tool's answer. No LLM."""

    def __init__(self, config):
        self.config = config

    async def step(self, run):
        if run.iteration == 1:
            call = ToolCall(
                id="p1", name="echo", arguments={"text": self.config.planner_options["say"]}
            )
            return [ToolAction(tool_call=call)]
        last = run.conversation.messages[-1]
        assert isinstance(last, ToolMessage)
        return CompleteAction(content=f"the tool said {last.content}")


class PlannerPlugin:
    @hookimpl
    def harness_register_planners(self, register):
        register("two-step", TwoStepPlanner)


@pytest.mark.hooks("harness_register_planners")
def test_a_plugin_planner_is_selected_by_name():
    agent = Agent(
        llm=[],
        tools=[echo],
        planner="two-step",
        planner_options={"say": "hello"},
        plugins=[PlannerPlugin()],
    )
    result = agent.run("go")

    assert result.termination == Termination.completed
    assert result.final.content == "the tool said hello"
    assert result.iterations == 2
    assert result.llm_calls == 0
    assert [(r.id, r.status) for r in result.tool_calls] == [("p1", "ok")]


@pytest.mark.hooks("harness_register_planners")
def test_a_sync_planner_step_works_too():
    class Once:
        def step(self, run):
            if run.iteration == 1:
                call = ToolCall(id="s1", name="echo", arguments={"text": "x"})
                return ExecuteToolsAction(tool_calls=[call])
            return CompleteAction(content="done")

    class Plugin:
        @hookimpl
        def harness_register_planners(self, register):
            register("once", lambda config: Once())

    result = Agent(llm=[], tools=[echo], planner="once", plugins=[Plugin()]).run("go")

    assert (result.termination, result.iterations, len(result.tool_calls)) == (
        Termination.completed,
        2,
        1,
    )


@pytest.mark.hooks("harness_register_planners")
def test_a_plugin_planner_can_call_the_llm():
    class AskOnce:
        async def step(self, run):
            reply = await run.call_llm(temperature=0)
            return CompleteAction(content=reply.content.upper())

    class Plugin:
        @hookimpl
        def harness_register_planners(self, register):
            register("ask-once", lambda config: AskOnce())

    result = Agent(llm=[{"content": "hi"}], planner="ask-once", plugins=[Plugin()]).run("?")

    assert result.final.content == "HI"
    assert result.llm_calls == 1


@pytest.mark.hooks("harness_register_planners")
def test_plugins_are_per_agent():
    Agent(llm=[], tools=[echo], planner="two-step", plugins=[PlannerPlugin()])

    with pytest.raises(PluginError, match="unknown planner 'two-step'"):
        Agent(llm=[], planner="two-step")
    assert "two-step" not in default_plugins().registry("planners")


def test_an_unknown_planner_is_a_clear_error():
    with pytest.raises(HarnessError) as info:
        Agent(llm=[], planner="reactt")

    message = str(info.value)
    assert "unknown planner 'reactt'" in message
    assert "agentbuilder" in message and "react" in message
    assert "did you mean 'react'?" in message


def test_the_built_in_planners_are_ordinary_plugins():
    plugins = default_plugins()

    assert {"agentbuilder", "react"} <= set(plugins.registry("planners"))
    assert plugins.registered["harness.planners.agentbuilder"].planners == ["agentbuilder"]
    assert plugins.registered["harness.planners.react"].planners == ["react"]


@pytest.mark.hooks("harness_register_planners")
def test_a_planner_registered_twice_names_both_plugins():
    class Again:
        @hookimpl
        def harness_register_planners(self, register):
            register("react", TwoStepPlanner)

    with pytest.raises(PluginError, match=r"planner 'react' is registered twice") as info:
        Agent(llm=[], planner="react", plugins=[Again()])
    assert "harness.planners.react" in str(info.value)


def test_a_misspelled_hook_fails_at_registration():
    class Typo:
        @hookimpl
        def harness_agent_strat(self, run):
            pass

    with pytest.raises(PluginError) as info:
        Agent(llm=[], plugins=[Typo()])

    message = str(info.value)
    assert "harness_agent_strat" in message
    assert "did you mean harness_agent_start?" in message


def test_an_unmarked_misspelled_hook_fails_too():
    class Typo:
        def harness_iteration_begin(self, run, iteration):  # no @hookimpl
            pass

    with pytest.raises(PluginError, match="harness_iteration_begin"):
        Plugins().register(Typo())


def test_a_hook_with_a_wrong_argument_fails_at_registration():
    class WrongArgs:
        @hookimpl
        def harness_agent_start(self, run, extra):
            pass

    with pytest.raises(PluginError, match="extra"):
        Agent(llm=[], plugins=[WrongArgs()])


def test_a_failed_registration_leaves_the_manager_unchanged():
    plugins = Plugins()

    class Typo:
        def harness_agent_strat(self, run):
            pass

    with pytest.raises(PluginError):
        plugins.register(Typo(), "typo")
    assert plugins.plugins() == []
    assert not plugins.pm.get_plugins()


def test_hookimpl_is_exported():
    assert harness.hookimpl is hookimpl
    assert hookimpl.project_name == "harness"


# -- other registries ----------------------------------------------------------------------


@pytest.mark.hooks("harness_register_tools")
def test_a_registered_tool_is_used_by_name():
    @tool
    def shout(text: str) -> str:
        """Upper-case."""
        return text.upper()

    class ToolPack:
        @hookimpl
        def harness_register_tools(self, register):
            register(shout)

    script = [{"tool_calls": [{"shout": {"text": "hi"}}]}, {"content": "done"}]
    result = Agent(llm=script, tools=["shout"], plugins=[ToolPack()]).run("?")

    assert result.tool_calls[0].result == "HI"
    with pytest.raises(PluginError, match="unknown tool 'shout'"):
        Agent(llm=[], tools=["shout"])


@pytest.mark.hooks("harness_register_llms")
def test_llm_sources_are_registered_by_name():
    class EchoLLM:
        def __init__(self, config):
            self.config = config

    class Source:
        @hookimpl
        def harness_register_llms(self, register):
            register("echo", EchoLLM)

    plugins = default_plugins().with_extra([Source()])
    config = LLMConfig(provider="echo")

    assert isinstance(plugins.llm_factory("echo")(config), EchoLLM)
    assert [r.llms for r in plugins.registered.values() if "echo" in r.llms] == [["echo"]]
    with pytest.raises(PluginError, match="unknown LLM provider 'echo'"):
        default_plugins().llm_factory("echo")


@pytest.mark.hooks("harness_register_llms")
def test_the_scripted_llm_is_a_registered_source():
    # harness.llm._scripted is a built-in plugin registering it with harness_register_llms.
    factory = default_plugins().llm_factory("scripted")
    llm = factory(LLMConfig(script=[{"content": "from the scenario"}]))

    assert isinstance(llm, ScriptedLLM)
    assert Agent(llm=llm).run("?").final.content == "from the scenario"


@pytest.mark.hooks("harness_register_expectations")
def test_expectation_keys_are_registered_by_name():
    def check_polite(result, expected):
        actual = "please" in (result.final.content or "")
        return actual == expected, actual

    class Expectations:
        @hookimpl
        def harness_register_expectations(self, register):
            register("polite", check_polite)

    plugins = default_plugins().with_extra([Expectations()])

    assert plugins.registry("expectations")["polite"] is check_polite
    assert "polite" not in default_plugins().registry("expectations")


@pytest.mark.hooks("harness_register_expectations")
def test_register_with_the_wrong_arguments_is_a_clear_error():
    class Wrong:
        @hookimpl
        def harness_register_expectations(self, register):
            register(lambda result, expected: (True, None))  # forgot the key

    plugins = default_plugins().with_extra([Wrong()])
    with pytest.raises(PluginError, match=r"register\(name, factory\)"):
        plugins.registry("expectations")


# -- discovery ------------------------------------------------------------------------------


def test_project_plugins_are_loaded_from_pyproject(tmp_path, monkeypatch):
    module = "local_plugin_for_test_plugins"
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.harness]\nplugins = ["{module}"]\n', encoding="utf-8"
    )
    (tmp_path / f"{module}.py").write_text(
        textwrap.dedent(
            """
            from harness import hookimpl

            @hookimpl
            def harness_register_planners(register):
                register("local", lambda config: None)
            """
        ),
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        plugins = discover()
        assert "local" in plugins.registry("planners")
        assert plugins.registered[module].planners == ["local"]
    finally:
        sys.modules.pop(module, None)


def test_harness_disable_plugins_blocks_by_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no pyproject: no local plugins
    monkeypatch.setenv("HARNESS_DISABLE_PLUGINS", "harness.planners.react")

    plugins = default_plugins()

    assert "react" not in plugins.registry("planners")
    assert "agentbuilder" in plugins.registry("planners")


# The same line, run as a script in two folders.
AGENT_LINE = """\
import json
from harness import Agent
agent = Agent(llm=[{"content": "x"}])
names = [name for name, _ in agent.plugins.plugins()]
print(json.dumps([names, sorted(agent.plugins.registry("planners"))]))
"""


@pytest.mark.repo_plugins
def test_an_agent_gets_the_same_plugins_in_any_folder(tmp_path):
    # This repository's pyproject lists plugins (a `budget` planner among them): an Agent
    # built in its root must not get them, or Agent(planner="budget") would work here
    # and fail in any other folder.
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_DISABLE_PLUGINS"}
    env["PYTHONPATH"] = str(ROOT)  # this checkout's harness, wherever the script runs
    seen = []
    for folder in (ROOT, tmp_path):
        done = subprocess.run(
            [sys.executable, "-c", AGENT_LINE],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        seen.append(json.loads(done.stdout))
    assert seen[0] == seen[1]
    names, planners = seen[0]
    assert "budget" not in planners and "plugins.budget_planner" not in names
    assert {builtin_name(module) for module in DEFAULT_PLUGINS} <= set(names)


@pytest.mark.repo_plugins
def test_the_project_s_plugins_are_asked_for_by_root():
    # What the front ends do: the project names its plugins; an Agent takes that set.
    project = discover(ROOT)
    assert "budget" in project.registry("planners")
    assert "budget" not in default_plugins().registry("planners")
    agent = Agent(llm=[{"content": "within budget"}], planner="budget", plugins=project)
    assert agent.run("?").termination == Termination.completed
