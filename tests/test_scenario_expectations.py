"""Every expectation kind, passing and failing, with a readable expected and actual."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness import hookimpl
from harness._errors import ScenarioError
from harness._plugins import discover
from harness.scenario import load_scenario, run_scenario

BASE = """\
name: expectations
agent: {planner: react}
input: Weather and restaurants in SF?
tools:
  get_weather:
    parameters: {city: str}
    returns: "65F, sunny in {{ args.city }}"
    latency: 0.5
  find_restaurants:
    parameters: {location: str, limit: {type: int, default: 3}}
    returns: [Zuni, Nopa]
    latency: 0.25
llm:
  script:
    - tool_calls: [{get_weather: {city: SF}}]
      usage: {prompt_tokens: 10, completion_tokens: 5}
    - tool_calls: [{find_restaurants: {location: SF}}, {get_weather: {city: Oakland}}]
    - content: 65F and sunny; try Zuni.
    - content: never used
"""


def run_with(tmp_path: Path, expect: dict[str, Any]):
    text = BASE + yaml.safe_dump({"expect": expect}, sort_keys=False)
    path = tmp_path / "e.scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return run_scenario(path)


# (expect section, passes?, path of the checked entry, expected shown, actual shown)
CASES = [
    ({"termination": "completed"}, True, "termination", "completed", "completed"),
    ({"termination": "stagnation"}, False, "termination", "stagnation", "completed"),
    ({"iterations": 3}, True, "iterations", 3, 3),
    ({"iterations": {"min": 4}}, False, "iterations", {"min": 4}, 3),
    ({"llm_calls": {"min": 1, "max": 3}}, True, "llm_calls", {"min": 1, "max": 3}, 3),
    ({"llm_calls": 2}, False, "llm_calls", 2, 3),
    (
        {"tool_calls": {"sequence": ["get_weather", "get_weather"]}},
        True,
        "tool_calls.sequence",
        ["get_weather", "get_weather"],
        ["get_weather", "find_restaurants", "get_weather"],
    ),
    (
        {"tool_calls": {"sequence": ["find_restaurants", "get_weather", "get_weather"]}},
        False,
        "tool_calls.sequence",
        ["find_restaurants", "get_weather", "get_weather"],
        ["get_weather", "find_restaurants", "get_weather"],
    ),
    (
        {"tool_calls": {"sequence": ["get_weather", "find_restaurants"], "exact": True}},
        False,
        "tool_calls.sequence",
        ["get_weather", "find_restaurants"],
        ["get_weather", "find_restaurants", "get_weather"],
    ),
    (
        {"tool_calls": {"include": [{"name": "find_restaurants", "args": {"location": "SF"}}]}},
        True,
        "tool_calls.include",
        [{"name": "find_restaurants", "args": {"location": "SF"}}],
        {"find_restaurants": [{"location": "SF"}]},  # as the model sent them
    ),
    (
        {"tool_calls": {"include": [{"name": "get_weather", "args": {"city": "LA"}}]}},
        False,
        "tool_calls.include",
        [{"name": "get_weather", "args": {"city": "LA"}}],
        {
            "missing": [{"name": "get_weather", "args": {"city": "LA"}}],
            "calls": {"get_weather": [{"city": "SF"}, {"city": "Oakland"}]},
        },
    ),
    (
        {"tool_calls": {"count": {"get_weather": 2}}},
        True,
        "tool_calls.count",
        {"get_weather": 2},
        {"get_weather": 2},
    ),
    (
        {"tool_calls": {"count": {"find_restaurants": {"min": 2}}}},
        False,
        "tool_calls.count",
        {"find_restaurants": {"min": 2}},
        {"find_restaurants": 1},
    ),
    (
        {"parallel_groups": [["find_restaurants", "get_weather"]]},
        True,
        "parallel_groups",
        [["find_restaurants", "get_weather"]],
        [["find_restaurants", "get_weather"]],
    ),
    (
        {"parallel_groups": [["get_weather", "find_restaurants"]]},
        False,
        "parallel_groups",
        [["get_weather", "find_restaurants"]],
        [["find_restaurants", "get_weather"]],
    ),
    (
        {"final": {"contains": "sunny"}},
        True,
        "final.contains",
        ["sunny"],
        "65F and sunny; try Zuni.",
    ),
    (
        {"final": {"contains": ["rain"]}},
        False,
        "final.contains",
        ["rain"],
        "65F and sunny; try Zuni.",
    ),
    ({"final": {"matches": r"\d+F"}}, True, "final.matches", r"\d+F", "65F and sunny; try Zuni."),
    (
        {"final": {"matches": r"^\d+C"}},
        False,
        "final.matches",
        r"^\d+C",
        "65F and sunny; try Zuni.",
    ),
    (
        {"final": {"equals": "65F and sunny; try Zuni."}},
        True,
        "final.equals",
        "65F and sunny; try Zuni.",
        "65F and sunny; try Zuni.",
    ),
    ({"final": {"equals": "65F"}}, False, "final.equals", "65F", "65F and sunny; try Zuni."),
    ({"final": {"data": {}}}, True, "final.data", {}, {}),
    ({"final": {"data": {"truncated": True}}}, False, "final.data", {"truncated": True}, {}),
    (
        {"final": {"error": {"type": "max_iterations"}}},
        False,
        "final.error",
        {"type": "max_iterations"},
        None,
    ),
    (
        {
            "requests": [
                {
                    "call": 3,
                    "tool_results_include": ["Zuni"],
                    "tools": ["find_restaurants", "get_weather"],
                }
            ]
        },
        True,
        "requests",
        [
            {
                "call": 3,
                "tool_results_include": ["Zuni"],
                "tools": ["find_restaurants", "get_weather"],
            }
        ],
        [
            {
                "call": 3,
                "tool_results": ["65F, sunny in SF", '["Zuni", "Nopa"]', "65F, sunny in Oakland"],
                "tools": ["get_weather", "find_restaurants"],
            }
        ],
    ),
    (
        {"requests": [{"call": 2, "tool_results_include": ["Zuni"]}]},
        False,
        "requests",
        [{"call": 2, "tool_results_include": ["Zuni"]}],
        [{"call": 2, "tool_results": ["65F, sunny in SF"]}],
    ),
    (
        {"requests": [{"call": 9, "tools": []}]},
        False,
        "requests",
        [{"call": 9, "tools": []}],
        [{"call": 9, "sent": "no LLM call 9 was made"}],
    ),
    ({"script_consumed": False}, True, "script_consumed", False, "1 replies left unused"),
    ({"script_consumed": True}, False, "script_consumed", True, "1 replies left unused"),
    ({"sim_time": 1.0}, True, "sim_time", 1, 1.0),
    ({"sim_time": {"max": 0.5}}, False, "sim_time", {"max": 0.5}, 1.0),
]


@pytest.mark.parametrize(("expect", "passes", "path", "expected", "actual"), CASES)
def test_expectation(tmp_path, expect, passes, path, expected, actual):
    result = run_with(tmp_path, expect)
    assert result.termination == "completed"
    entry = next(e for e in result.expectations if e.path == path)
    assert entry.ok is passes
    assert entry.expected == expected
    assert entry.actual == actual
    assert result.status == ("passed" if passes else "failed")


def test_expectations_are_listed_in_file_order(tmp_path):
    result = run_with(
        tmp_path,
        {"sim_time": 1.0, "termination": "completed", "final": {"matches": "F", "contains": "F"}},
    )
    assert [e.path for e in result.expectations] == [
        "sim_time",
        "termination",
        "final.matches",
        "final.contains",
    ]


def test_dotted_keys_are_read_like_the_nested_form(tmp_path):
    # The docs and `harness plugins` name keys dotted; written so, they mean the same.
    dotted = run_with(
        tmp_path,
        {
            "tool_calls.count": {"get_weather": 2},
            "tool_calls.include": [{"name": "get_weather", "args": {"city": "SF"}}],
            "final.contains": "Zuni",
        },
    )
    nested = run_with(
        tmp_path,
        {
            "tool_calls": {
                "count": {"get_weather": 2},
                "include": [{"name": "get_weather", "args": {"city": "SF"}}],
            },
            "final": {"contains": "Zuni"},
        },
    )
    assert dotted.status == "passed"
    assert dotted.expectations == nested.expectations
    wrong = run_with(tmp_path, {"tool_calls.count": {"get_weather": 3}})
    assert wrong.status == "failed"
    assert [(e.path, e.expected, e.actual) for e in wrong.expectations] == [
        ("tool_calls.count", {"get_weather": 3}, {"get_weather": 2})
    ]


@pytest.mark.parametrize(
    ("expect", "line", "message"),  # line: of the expect section
    [
        (
            "  tool_calls.count: 3\n",
            1,
            "expect.tool_calls.count: expected a mapping",
        ),
        (
            "  tool_calls: {count: {get_weather: 1}}\n  tool_calls.count: {get_weather: 2}\n",
            2,
            "'tool_calls.count' is given twice (dotted and under 'tool_calls'): keep one",
        ),
    ],
)
def test_a_bad_dotted_key_is_refused_at_load_with_its_line(tmp_path, expect, line, message):
    text = BASE.replace("    - content: never used\n", "") + "expect:\n" + expect
    path = tmp_path / "d.scenario.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioError) as raised:
        load_scenario(path)
    line += text[: text.index("expect:\n")].count("\n") + 1
    assert f"d.scenario.yaml:{line}: " in str(raised.value)
    assert message in str(raised.value)


def test_without_expect_a_run_passes_when_it_completes(tmp_path):
    path = tmp_path / "n.scenario.yaml"
    path.write_text(BASE, encoding="utf-8")
    result = run_scenario(path)
    assert result.status == "passed"
    assert [(e.path, e.expected, e.ok) for e in result.expectations] == [
        ("termination", "completed", True)
    ]
    path.write_text(
        BASE.replace("    - content: 65F and sunny; try Zuni.\n", "    - error: timeout\n")
    )
    assert run_scenario(path).status == "failed"


class _CostPlugin:
    """A plugin expectation: `max_prompt_tokens: N` against the run's usage."""

    @hookimpl
    def harness_register_expectations(self, register):
        def check(result, expected):
            actual = result.usage.get("prompt_tokens", 0)
            return actual <= expected, actual

        register("max_prompt_tokens", check)


def test_plugin_expectation_key(tmp_path):
    plugins = discover()  # the scenarios' project: the current one
    plugin = _CostPlugin()
    plugins.register(plugin, "cost-plugin")
    try:
        good = run_with(tmp_path, {"max_prompt_tokens": 10})
        bad = run_with(tmp_path, {"max_prompt_tokens": 9})
    finally:
        plugins.unregister(plugin)
    assert [(e.path, e.expected, e.actual, e.ok) for e in good.expectations] == [
        ("max_prompt_tokens", 10, 10, True)
    ]
    assert bad.status == "failed"


def test_unregistered_expectation_key_is_a_load_error(tmp_path):
    from harness._errors import ScenarioError

    path = tmp_path / "u.scenario.yaml"
    path.write_text(BASE + textwrap.dedent("expect:\n  max_prompt_tokens: 3\n"))
    with pytest.raises(ScenarioError, match="unknown expectation 'max_prompt_tokens'"):
        load_scenario(path)


@pytest.mark.parametrize(
    "expect",
    [{}, {"tool_calls": {}}, {"final": {}}],
    ids=["empty", "empty tool_calls", "empty final"],
)
def test_an_expect_section_that_checks_nothing_is_like_none(tmp_path, expect):
    # Not a pass for any run: it checks termination completed, as a missing one does.
    failing = BASE.replace("    - content: 65F and sunny; try Zuni.\n", "    - error: timeout\n")
    path = tmp_path / "n.scenario.yaml"
    path.write_text(failing + yaml.safe_dump({"expect": expect}), encoding="utf-8")
    result = run_scenario(path)
    assert result.termination == "llm_error"
    assert result.status == "failed"
    assert [(e.path, e.expected, e.actual) for e in result.expectations] == [
        ("termination", "completed", "llm_error")
    ]
    path.write_text(BASE + yaml.safe_dump({"expect": expect}), encoding="utf-8")
    assert run_scenario(path).status == "passed"


def test_expected_tool_names_are_checked_against_what_can_be_called(tmp_path):
    from harness._errors import ScenarioError

    # A scripted run calls only what its script names: an undefined tool it calls on
    # purpose (unknown_tools) may be expected, a typo may not.
    hallucinated = BASE.replace(
        "    - content: never used\n",
        "    - tool_calls: [{get_wether: {city: SF}}]\n      unknown_tools: true\n",
    )
    path = tmp_path / "h.scenario.yaml"
    expect = {"tool_calls": {"count": {"get_wether": 1}}}
    path.write_text(hallucinated + yaml.safe_dump({"expect": expect}), encoding="utf-8")
    load_scenario(path)
    expect = {"tool_calls": {"include": [{"name": "get_wether"}]}}
    path.write_text(BASE + yaml.safe_dump({"expect": expect}), encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"include\.0\.name: no call can be to 'get_wether'"):
        load_scenario(path)


def test_a_recorded_scenario_may_guard_against_an_undefined_tool_with_count_0(tmp_path):
    from harness._errors import ScenarioError

    recorded = (
        "name: r\ninput: hi\ntools: {get_weather: {}}\n"
        "llm: {provider: openai, model: gpt-4o-mini, cassette: c.yaml}\n"
    )
    path = tmp_path / "r.scenario.yaml"
    # A real model may call a tool that does not exist: `count: 0` says it did not.
    path.write_text(recorded + "expect:\n  tool_calls: {count: {delete_everything: 0}}\n")
    load_scenario(path)
    path.write_text(recorded + "expect:\n  tool_calls: {sequence: [get_wether]}\n")
    with pytest.raises(ScenarioError, match="the scenario does not define it"):
        load_scenario(path)
