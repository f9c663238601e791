"""Scenario files: schema, loading with line numbers, tool stubs, expectations, runner."""

from harness.scenario.loader import SUFFIX, SUFFIXES, build_tools, load_scenario
from harness.scenario.matrix import expand_matrix
from harness.scenario.runner import arun_scenario, run_scenario, scenario_id
from harness.scenario.schema import Scenario

__all__ = [
    "SUFFIX",
    "SUFFIXES",
    "Scenario",
    "arun_scenario",
    "build_tools",
    "expand_matrix",
    "load_scenario",
    "run_scenario",
    "scenario_id",
]
