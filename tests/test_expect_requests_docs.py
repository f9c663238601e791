"""docs/scenarios.md shows the form of ``expect.requests``: every key an entry takes is in
its table, and its example runs and passes as the docs say."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from harness.scenario import run_scenario
from harness.scenario._expect_schema import RequestExpect

DOCS = Path(__file__).resolve().parents[1] / "docs" / "scenarios.md"


def _section() -> str:
    text = DOCS.read_text(encoding="utf-8")
    start = text.index("### The form of `requests`")
    return text[start : text.index("\n### ", start + 1)]


def test_the_table_names_every_key_of_an_entry():
    rows = set(re.findall(r"^\| `(\w+)` \|", _section(), re.MULTILINE))
    assert rows == set(RequestExpect.model_fields)


def test_the_example_runs_and_passes(tmp_path, fresh_plugins):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    example = yaml.safe_load(re.search(r"```yaml\n(.*?)```", _section(), re.DOTALL).group(1))
    scenario = {
        "agent": {"system": "You are a travel assistant."},
        "input": "Weather in Paris?",
        "tools": {
            "get_weather": {"parameters": {"city": "str"}, "returns": "18C"},
            "get_time": {"parameters": {"city": "str"}, "returns": "12:00"},
        },
        "llm": {
            "script": [{"tool_calls": [{"get_weather": {"city": "Paris"}}]}, {"content": "18C."}]
        },
        **example,
    }
    path = tmp_path / "example.scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    result = run_scenario(path)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    (checked,) = result.expectations
    assert checked.path == "requests"
    assert [entry["call"] for entry in checked.actual] == [1, 2]
