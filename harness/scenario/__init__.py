"""Scenario files: schema, loading with line numbers, tool stubs, expectations, runner."""

from harness.scenario._loader import SUFFIX, SUFFIXES, build_tools, load_scenario
from harness.scenario._matrix import expand_matrix
from harness.scenario._runner import arun_scenario, run_scenario, scenario_id
from harness.scenario._schema import Scenario

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
