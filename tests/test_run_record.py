"""The run record is typed: events of harness.events' kinds, final.error a RunError,
final.data a FinalData; the JSON is what it was, and docs/results.md lists all of it."""

from __future__ import annotations

import dataclasses
import json
import re
import typing
from pathlib import Path

import pytest

from harness import Agent, FinalResponse, hookimpl, tool
from harness._actions import FinalData, RunError, RunResult
from harness._results import ScenarioResult, load_results
from harness.events import (
    ActionExecutedEvent,
    AgentEndEvent,
    AgentStartEvent,
    IterationStartEvent,
    LLMRequestEvent,
    LLMResponseEvent,
    OtherEvent,
)
from harness.report._text import trajectory_lines
from harness.report._timeline import build_timeline

ROOT = Path(__file__).resolve().parents[1]
RESULTS_DOC = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")


@tool
async def get_weather(city: str) -> str:
    """Weather."""
    return f"sunny in {city}"


PARALLEL = [
    {"tool_calls": [{"get_weather": {"city": "SF"}}, {"get_weather": {"city": "LA"}}]},
    {"content": "Both sunny."},
]


def as_scenario(result: RunResult) -> ScenarioResult:
    return ScenarioResult.from_run(
        result, id="x.yaml::x", name="x", file="x.yaml", expectations=[], status="passed"
    )


def test_a_runs_events_are_typed_and_read_as_the_dicts_they_were():
    result = Agent(llm=PARALLEL, tools=[get_weather]).run("?")

    kinds = [type(e) for e in result.events]
    assert kinds == [
        AgentStartEvent,
        IterationStartEvent,
        LLMRequestEvent,
        LLMResponseEvent,
        IterationStartEvent,
        ActionExecutedEvent,
        ActionExecutedEvent,
        IterationStartEvent,
        LLMRequestEvent,
        LLMResponseEvent,
        IterationStartEvent,
        AgentEndEvent,
    ]
    response = result.events[3]
    assert isinstance(response, LLMResponseEvent)
    assert (response.call, response.tool_calls) == (1, ["get_weather", "get_weather"])
    # What plugins and scenario tooling wrote against the dicts still reads the same.
    assert response["tool_calls"] == ["get_weather", "get_weather"]
    assert response.get("tool_choice") is None and "tool_choice" not in response
    assert dict(result.events[-1]) == {
        "event": "agent_end",
        "iteration": 4,
        "termination": "completed",
    }
    assert json.loads(result.model_dump_json())["events"][2] == {
        "event": "llm_request",
        "iteration": 1,
        "call": 1,
        "sim": 0.0,
    }


@pytest.mark.parametrize(
    ("made", "validated"),
    [
        (IterationStartEvent.of(3), IterationStartEvent(iteration=3)),
        (
            LLMRequestEvent.of(2, 5, 1.5, "none"),
            LLMRequestEvent(iteration=2, call=5, sim=1.5, tool_choice="none"),
        ),
        (LLMRequestEvent.of(2, 5, 1.5), LLMRequestEvent(iteration=2, call=5, sim=1.5)),
        (
            LLMResponseEvent.of(2, 5, ["a", "b"], "tool_calls", 2.0),
            LLMResponseEvent(
                iteration=2, call=5, tool_calls=["a", "b"], finish_reason="tool_calls", sim=2.0
            ),
        ),
        (
            ActionExecutedEvent.of(4, "lookup", "call_1", "invalid", 2),
            ActionExecutedEvent(
                iteration=4, tool="lookup", call_id="call_1", status="invalid", group=2
            ),
        ),
    ],
    ids=lambda e: type(e).__name__,
)
def test_the_loops_per_round_events_are_what_their_constructors_make(made, validated):
    # The loop makes these without validating again: the same fields, values and JSON.
    assert type(made) is type(validated)
    assert vars(made) == vars(validated)
    assert made == validated
    scenario = as_scenario(RunResult(termination="completed", events=[made]))
    other = as_scenario(RunResult(termination="completed", events=[validated]))
    assert scenario.model_dump_json() == other.model_dump_json()


def _documented_events() -> dict[str, tuple[str, list[str]]]:
    """event name -> (type name, fields after event and iteration) from docs/results.md."""
    rows = {}
    for line in RESULTS_DOC.split("## Events", 1)[1].split("## `final.error`")[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`") and cells[1].startswith("`"):
            # The fields' names, without what parentheses say about them.
            fields = re.findall(r"`(\w+)`", re.sub(r"\([^)]*\)", "", cells[2]))
            rows[cells[0].strip("`")] = (cells[1].strip("`"), fields)
    return rows


def test_docs_list_every_event_kind_with_its_fields():
    from harness import events

    documented = _documented_events()
    kinds = typing.get_args(typing.get_args(events._Builtin)[0])
    actual = {
        kind.__dataclass_fields__["event"].default: (
            kind.__name__,
            [f.name for f in dataclasses.fields(kind) if f.name not in ("event", "iteration")],
        )
        for kind in kinds
    }
    assert documented == actual


@pytest.mark.parametrize(
    ("model", "section"), [(RunError, "final.error"), (FinalData, "final.data")]
)
def test_docs_list_every_key_of_final_error_and_final_data(model, section):
    text = RESULTS_DOC.split(f"## `{section}`", 1)[1].split("\n## ")[0]
    missing = [key for key in model.model_fields if not re.search(rf"\b{key}\b", text)]
    assert missing == []


def test_final_data_and_error_keep_the_keys_given_in_their_order():
    final = FinalResponse(
        content="done",
        data={"zeta": 1, "alpha": [2]},
        error={"message": "m", "type": "mine", "extra": True},
    )

    class Plugin:
        @hookimpl
        def harness_register_planners(self, register):
            register("given", lambda config: type("P", (), {"step": lambda self, run: final})())

    result = Agent(llm=[], planner="given", plugins=[Plugin()]).run("?")

    assert isinstance(result.final.error, RunError) and isinstance(result.final.data, FinalData)
    assert (result.final.error.type, result.final.error.status) == ("mine", None)
    assert list(result.final.error) == ["message", "type", "extra"]
    final = json.loads(result.model_dump_json())["final"]
    assert json.dumps(final["data"]) == '{"zeta": 1, "alpha": [2]}'
    assert json.dumps(final["error"]) == '{"message": "m", "type": "mine", "extra": true}'
    # A key harness adds goes last, as it did in a dict.
    assert list(result.final.data.merged(truncated=True)) == ["zeta", "alpha", "truncated"]


def test_a_typed_key_of_the_wrong_type_is_refused():
    with pytest.raises(ValueError, match="limit"):
        FinalData.model_validate({"budget": "tokens", "limit": "lots"})


class CacheNotes:
    @hookimpl
    def harness_iteration_start(self, run, iteration):
        run.emit("cache_hit", key=f"k{iteration}")


def test_a_plugins_own_event_is_kept_with_its_iteration():
    result = Agent(llm=PARALLEL, tools=[get_weather], plugins=[CacheNotes()]).run("?")

    own = [e for e in result.events if isinstance(e, OtherEvent)]
    assert [dict(e) for e in own] == [
        {"event": "cache_hit", "iteration": i, "key": f"k{i}"} for i in (1, 2, 3, 4)
    ]
    scenario = as_scenario(result)
    # Readers pass over what is none of their kinds.
    assert [it.number for it in build_timeline(scenario).iterations] == [1, 2, 3, 4]
    assert trajectory_lines(scenario)[0].startswith("  1  llm#1 -> get_weather")
    again = ScenarioResult.model_validate_json(scenario.model_dump_json())
    assert again.model_dump_json() == scenario.model_dump_json()


def test_an_event_edited_beyond_its_kind_is_kept_as_it_was(tmp_path):
    scenario = as_scenario(Agent(llm=PARALLEL, tools=[get_weather]).run("?"))
    data = json.loads(scenario.model_dump_json())
    data["events"][2] = {"event": "llm_request", "call": None, "iteration": "x"}
    read = ScenarioResult.model_validate(data)

    assert isinstance(read.events[2], OtherEvent)
    assert json.loads(read.model_dump_json())["events"][2] == data["events"][2]
    # The timeline reads the calls it can: the second request is still placed.
    calls = [i.call for it in build_timeline(read).iterations for i in it.items if i.kind == "llm"]
    assert calls == [2]


def test_version_1_results_read_as_typed_records():
    old = load_results(ROOT / "tests" / "fixtures" / "results-v1.json")

    first = old.scenarios[0]
    assert isinstance(first.final.error, RunError)
    assert (first.final.error.type, first.final.error.max_iterations) == ("max_iterations", 3)
    assert not any(isinstance(e, OtherEvent) for s in old.scenarios for e in s.events)
    assert isinstance(first.events[-1], AgentEndEvent)


def test_an_events_fields_go_in_the_event():
    class Confused:
        @hookimpl
        def harness_iteration_start(self, run, iteration):
            run.emit(IterationStartEvent(iteration=iteration), note="x")

    result = Agent(llm=[{"content": "hi"}], plugins=[Confused()]).run("?")

    assert result.final.error.exception == "TypeError"
    assert "run.emit(IterationStartEvent(...), note=...)" in result.final.error.message
