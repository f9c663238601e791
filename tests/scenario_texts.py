"""Scenario files shared by the tests that run whole suites (test_cli, test_pytest_plugin)."""

import pytest

# Marks for a module whose tests run pytest sessions of their own: harness plugins are
# discovered afresh per test, and pytest-benchmark (when installed) warns in every
# in-process session inside an xdist worker.
SESSION_TESTS = [
    pytest.mark.usefixtures("fresh_plugins"),
    pytest.mark.filterwarnings("ignore:Benchmarks are automatically disabled"),
]

PASSING = """\
name: greet
tags: [smoke]
input: What's the weather in SF?
tools:
  get_weather:
    parameters: {city: str}
    returns: "72F in {{ args.city }}"
llm:
  script:
    - tool_calls: [{get_weather: {city: SF}}]
    - content: It is 72F in SF.
expect:
  termination: completed
  final: {contains: 72F}
"""
