"""The loop's defaults are part of its contract: pinned here, and the same everywhere.

An `Agent()` built with nothing, a scenario file that sets nothing, and the JSON Schema
that editors read must agree, and each default has the value users rely on. Changing
one is a decision: this test says so.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from harness import Agent
from harness._config import AgentConfig
from harness.scenario import load_scenario

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "harness-scenario.schema.json").read_text(encoding="utf-8"))

# The documented defaults (docs/loop.md, docs/scenarios.md).
DEFAULTS = {
    "max_iterations": 80,
    "stagnation_window": 3,
    "planner": "agentbuilder",
    "on_validation_error": "stop",
    "on_max_iterations": "stop",
    "parallel_tools": True,
}


def _agent_defaults() -> dict:
    config = Agent(llm=[{"content": "hi"}]).config
    return {key: getattr(config, key) for key in DEFAULTS}


def _scenario_defaults(tmp_path: Path) -> dict:
    path = tmp_path / "empty.scenario.yaml"
    path.write_text("input: hi\n", encoding="utf-8")
    section = load_scenario(path).agent
    config = section.to_config() if hasattr(section, "to_config") else section
    return {key: getattr(config, key) for key in DEFAULTS}


def _schema_defaults() -> dict:
    agent = SCHEMA["$defs"]["AgentSection"]["properties"]
    window = SCHEMA["$defs"]["StagnationSection"]["properties"]["window"]["default"]
    found = {key: agent[key].get("default") for key in DEFAULTS if key != "stagnation_window"}
    return {**found, "stagnation_window": window}


@pytest.mark.parametrize(("key", "value"), DEFAULTS.items())
def test_agent_default(key, value):
    assert _agent_defaults()[key] == value


@pytest.mark.parametrize(("key", "value"), DEFAULTS.items())
def test_scenario_file_default(tmp_path, key, value):
    assert _scenario_defaults(tmp_path)[key] == value


@pytest.mark.parametrize(("key", "value"), DEFAULTS.items())
def test_json_schema_default(key, value):
    assert _schema_defaults()[key] == value


def test_the_loops_own_config_and_the_agents_keywords_agree():
    # The keyword defaults of Agent(...) (where they exist) are the config's defaults.
    config = AgentConfig()
    for name, parameter in inspect.signature(Agent).parameters.items():
        if name in DEFAULTS and parameter.default is not inspect.Parameter.empty:
            assert parameter.default == getattr(config, name), name
    assert {key: getattr(config, key) for key in DEFAULTS} == DEFAULTS


def test_the_settings_are_defined_once_in_agent_config(tmp_path):
    # Agent(...) has no keyword of its own for a setting (they reach AgentConfig through
    # **settings), and the scenario's agent: section is derived from AgentConfig's fields:
    # a default changed in harness/_config.py changes all three, and nothing else can.
    from harness.scenario._schema import AgentSection, StagnationSection

    fields = AgentConfig.model_fields
    assert not set(inspect.signature(Agent).parameters) & set(fields)
    section = AgentSection.model_fields
    # Prices are a scenario's top-level `prices:` (with [tool.harness.prices]), not agent:.
    assert [name for name in section if name != "stagnation"] == [
        name for name in fields if name not in ("stagnation_window", "prices")
    ]
    for name, info in section.items():
        if name == "stagnation":
            continue
        assert info.annotation == fields[name].annotation, name
        assert info.get_default(call_default_factory=True) == fields[name].get_default(
            call_default_factory=True
        ), name
    assert StagnationSection.model_fields["window"].default == fields["stagnation_window"].default
    path = tmp_path / "empty.scenario.yaml"
    path.write_text("input: hi\n", encoding="utf-8")
    assert load_scenario(path).agent.to_config() == AgentConfig() == Agent(llm=[]).config


def test_agent_takes_a_config_and_overrides(tmp_path):
    config = AgentConfig(planner="react", max_iterations=7)
    agent = Agent(llm=[], config=config, max_iterations=3)
    assert agent.config == AgentConfig(planner="react", max_iterations=3)
    assert config.max_iterations == 7  # the given config is left as it was


def test_an_unknown_agent_setting_is_a_clear_error():
    from harness._errors import HarnessError

    with pytest.raises(HarnessError, match=r"unknown setting 'max_iteration' \(did you mean"):
        Agent(llm=[], max_iteration=3)
