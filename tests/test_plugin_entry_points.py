"""Plugins installed by a distribution are found through the `harness` entry-point group."""

from __future__ import annotations

import sys
import textwrap

import pytest

from harness import Agent
from harness import _plugins as plugins
from harness.llm import ScriptedLLM

PLUGIN = textwrap.dedent(
    '''\
    from harness import FinalResponse, hookimpl


    class Polite:
        """Answers without asking the model."""

        def __init__(self, config):
            self.config = config

        def step(self, run):
            return FinalResponse(content="Thank you for asking.")


    @hookimpl
    def harness_register_planners(register):
        register("polite", Polite)
    '''
)


def _install(tmp_path, monkeypatch, text):
    """A distribution on sys.path whose entry point names a plugin module, as pip installs it."""
    (tmp_path / "polite_plugin.py").write_text(text)
    info = tmp_path / "polite_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: polite-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[harness]\npolite = polite_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.discovery.reset()


@pytest.fixture
def installed(tmp_path, monkeypatch):
    _install(tmp_path, monkeypatch, PLUGIN)
    yield
    plugins.discovery.reset()
    sys.modules.pop("polite_plugin", None)


@pytest.fixture
def misspelled(tmp_path, monkeypatch):
    """An installed plugin whose hook name has a typo."""
    _install(tmp_path, monkeypatch, PLUGIN.replace("register_planners", "register_planner"))
    yield
    plugins.discovery.reset()
    sys.modules.pop("polite_plugin", None)


def test_an_installed_plugin_is_discovered_and_named_by_its_entry_point(installed):
    manager = plugins.default_plugins()
    assert "polite" in [name for name, _ in manager.plugins()]
    result = Agent(ScriptedLLM([]), planner="polite").run("hello")
    assert result.final.content == "Thank you for asking."
    assert result.llm_calls == 0


def test_an_installed_plugin_can_be_blocked_by_name(installed, monkeypatch):
    monkeypatch.setenv("HARNESS_DISABLE_PLUGINS", "polite")
    manager = plugins.default_plugins()
    assert "polite" not in [name for name, _ in manager.plugins()]
    with pytest.raises(plugins.PluginError, match="unknown planner 'polite'"):
        Agent(ScriptedLLM([]), planner="polite")


def test_an_installed_plugin_with_an_unknown_hook_is_named_in_a_clear_error(misspelled):
    with pytest.raises(plugins.PluginError) as caught:
        plugins.default_plugins()
    assert str(caught.value) == (
        "plugin polite: unknown hook harness_register_planner "
        "(did you mean harness_register_planners?); hooks are listed in harness.hookspecs"
    )
