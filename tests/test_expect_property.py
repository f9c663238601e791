"""A scenario file that `harness validate` accepts never crashes `harness run`.

Expectation blocks are generated from the scenario JSON Schema (the file editors use);
each is put into a small scenario that loads or is refused with a ScenarioError, and
every one that loads must run to a verdict: passed or failed, never a harness crash.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis_jsonschema import from_schema

from harness._errors import ScenarioError
from harness.scenario import run_scenario
from harness.scenario._loader import load_scenario_text

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "harness-scenario.schema.json").read_text(encoding="utf-8"))

BODY = """\
name: generated
input: Find me a flight
tools:
  search_flights:
    parameters: {to: str}
    returns: "3 flights to {{ args.to }}"
  book:
    parameters: {flight: str}
    returns: booked
llm:
  script:
    - tool_calls: [{search_flights: {to: SF}}, {book: {flight: UA1}}]
    - content: Booked UA1 to SF.
"""


def _expect_schema() -> dict:
    """The schema of `expect:` with the definitions it refers to; plugin keys left out."""
    schema = copy.deepcopy(SCHEMA)
    section = schema["$defs"]["ExpectSection"]
    # Keys of plugins are checked against the registry: not the subject here.
    section["additionalProperties"] = False
    return {"$defs": schema["$defs"], **section}


def _scenario(expect: dict) -> str:
    return BODY + "expect: " + json.dumps(expect) + "\n"


@pytest.mark.filterwarnings("ignore")
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(from_schema(_expect_schema()))
@example({"tool_calls.count": {"search_flights": 3}})  # the dotted form of the docs
@example({"tool_calls.include": [{"name": "book", "args": {"flight": "UA1"}}]})
def test_a_file_that_validates_runs_to_a_verdict(tmp_path_factory, expect):
    path = tmp_path_factory.mktemp("gen") / "generated.scenario.yaml"
    text = _scenario(expect)
    try:
        scenario = load_scenario_text(text, path)
    except ScenarioError:
        assume(False)  # refused at load, with a message: what validate reports
        return
    path.write_text(text, encoding="utf-8")
    result = run_scenario(scenario)  # any exception here is a crash of `harness run`
    assert result.status in ("passed", "failed"), result.final.error
