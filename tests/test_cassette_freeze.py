"""`harness freeze`: a cassette becomes a scripted scenario that passes as written."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from harness import Agent, tool
from harness.cli import main
from harness.freeze import FreezeError, freeze
from harness.llm._config import LLMConfig, LLMContext
from harness.providers.openai import OpenAILLM
from harness.scenario import run_scenario
from harness.serve import running_server

FOREIGN = Path(__file__).parent / "fixtures" / "foreign-cassettes"


def freeze_main(argv: list[str]) -> int:
    """``harness freeze ARGV...``, in this process."""
    return main(["freeze", *argv])


@pytest.fixture(autouse=True)
def _no_openai_environment(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def record(
    cassette: Path, steps, tools, *, api="chat", stream=False, system=None, prompt="Go.", **extra
):
    config = LLMConfig(
        provider="openai",
        model="gpt-4o-mini",
        cassette=str(cassette),
        api=api,
        stream=stream,
        **extra,
    )
    with running_server(steps) as url:
        bound = config.model_copy(update={"base_url": url}).with_context(
            LLMContext(record_mode="once")
        )
        return Agent(llm=OpenAILLM(bound), tools=tools, system=system).run(prompt)


def frozen(tmp_path: Path, cassette: Path) -> tuple[dict, object]:
    scenario = tmp_path / "frozen.scenario.yaml"
    assert freeze_main([str(cassette), "-o", str(scenario)]) == 0
    return yaml.safe_load(scenario.read_text()), run_scenario(scenario)


@tool
def lookup(city: str) -> dict:
    """Look a city up."""
    return {"city": city, "population": len(city) * 1000}


@tool
def note(text: str) -> str:
    """Write a note."""
    return "saved {{ not a template }}"


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_a_recorded_run_freezes_into_a_scenario_that_replays_it(tmp_path, api, stream):
    steps = [
        {
            "content": "Looking both up.",
            "tool_calls": [{"lookup": {"city": "Paris"}}, {"lookup": {"city": "Rome"}}],
            # A total beyond the parts (cached or reasoning tokens) is kept as recorded.
            "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 31},
        },
        {"tool_calls": [{"id": "call_custom", "name": "note", "arguments": {"text": "done"}}]},
        {
            "content": "Paris 5000, Rome 4000.",
            "usage": {"prompt_tokens": 50, "completion_tokens": 6},
        },
    ]
    cassette = tmp_path / "run.yaml"
    recorded = record(cassette, steps, [lookup, note], api=api, stream=stream, system="Be brief.")
    assert recorded.termination == "completed"

    scenario, result = frozen(tmp_path, cassette)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert result.final.content == "Paris 5000, Rome 4000."
    assert scenario["agent"] == {"system": "Be brief."}
    assert scenario["input"] == "Go."
    first, second, last = scenario["llm"]["script"]
    assert [c["id"] for c in first["tool_calls"]] == ["call_1_0", "call_1_1"]
    assert second["tool_calls"] == [
        {"id": "call_custom", "name": "note", "arguments": {"text": "done"}}
    ]
    assert first["usage"] == {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 31}
    assert last == {
        "content": "Paris 5000, Rome 4000.",
        "usage": {"prompt_tokens": 50, "completion_tokens": 6, "total_tokens": 56},
    }
    assert result.usage == recorded.usage
    # The parallel plan is expected as such, and the description is plain.
    assert scenario["expect"]["parallel_groups"] == [["lookup", "lookup"]]
    assert scenario["description"] == "The run recorded in run.yaml, as a script."
    assert scenario["tools"]["lookup"]["results"] == [
        {"on_call": 1, "returns": '{"city": "Paris", "population": 5000}'},
        {"on_call": 2, "returns": '{"city": "Rome", "population": 4000}'},
    ]
    assert scenario["tools"]["lookup"]["schema"]["properties"] == {"city": {"type": "string"}}
    # A recorded text that looks like a Jinja template stays literal.
    assert result.tool_calls[-1].result == "saved {{ not a template }}"
    assert scenario["expect"]["final"] == {"equals": "Paris 5000, Rome 4000."}
    # The frozen run is the recorded run.
    assert result.transcript == recorded.conversation.messages
    assert result.parallel_groups == recorded.parallel_groups


def test_reasoning_items_sent_back_do_not_stop_a_responses_run_from_freezing(tmp_path):
    # The requests hold the model's reasoning items; a script has none to send back, and
    # they are not compared.
    cassette = tmp_path / "reasoning.yaml"
    steps = [{"tool_calls": [{"lookup": {"city": "Oslo"}}]}, {"content": "Oslo 4000."}]
    options = {"include": ["reasoning.encrypted_content"]}
    recorded = record(cassette, steps, [lookup], api="responses", options=options)
    assert recorded.conversation.messages[1].reasoning
    assert "encrypted_content" in cassette.read_text()
    _, result = frozen(tmp_path, cassette)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert result.final.content == "Oslo 4000."


def test_a_run_that_ended_in_an_http_error_freezes_with_its_error_step(tmp_path):
    cassette = tmp_path / "limited.yaml"
    steps = [
        {"tool_calls": [{"lookup": {"city": "Oslo"}}]},
        {"error": {"status": 429, "message": "Slow down"}},
    ]
    recorded = record(cassette, steps, [lookup])
    assert recorded.termination == "llm_error"
    scenario, result = frozen(tmp_path, cassette)
    assert scenario["llm"]["script"][-1] == {"error": {"status": 429, "message": "Slow down"}}
    assert result.status == "passed"
    assert result.final.error["status"] == 429


def test_freeze_prints_to_stdout_without_output(tmp_path, capsys):
    cassette = FOREIGN / "llm-test_tools-test_tool_use_chain_of_two_calls.yaml"
    assert freeze_main([str(cassette)]) == 0
    out = capsys.readouterr().out
    assert out == freeze(cassette).text
    assert out.startswith("# Frozen from")


def test_freeze_rejects_what_is_not_a_cassette(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("just: text\n")
    assert freeze_main([str(bad), "-o", str(tmp_path / "x.scenario.yaml")]) == 2
    assert "not a vcrpy cassette" in capsys.readouterr().err
    assert not (tmp_path / "x.scenario.yaml").exists()
    with pytest.raises(FreezeError, match="cannot read cassette"):
        freeze(tmp_path / "missing.yaml")


def test_a_scenario_given_as_the_cassette_is_named_as_such_with_the_command_to_run(
    tmp_path, capsys
):
    scripted = tmp_path / "scripted.scenario.yaml"
    scripted.write_text("input: Hi.\nllm:\n  script:\n    - content: Hello.\n")
    assert freeze_main([str(scripted), "-o", str(tmp_path / "x.scenario.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"{scripted} is a scenario file, not a cassette" in err
    assert f"(harness freeze CASSETTE --scenario {scripted} takes this scenario's" in err
    # A recorded scenario: its own cassette is frozen with --scenario alone.
    recorded = tmp_path / "recorded.scenario.yaml"
    recorded.write_text(
        "input: Hi.\nllm: {provider: openai, model: gpt-4o-mini, cassette: tapes/hi.yaml}\n"
    )
    assert freeze_main([str(recorded)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"give it as --scenario (harness freeze --scenario {recorded}: its cassette is " in err
    assert "tapes/hi.yaml)" in err


def test_an_output_that_cannot_be_written_exits_3_with_one_line(tmp_path, capsys):
    cassette = FOREIGN / "llm-test_tools-test_tool_use_chain_of_two_calls.yaml"
    (tmp_path / "blocker").write_text("a file, not a folder")
    target = tmp_path / "blocker" / "x.scenario.yaml"
    assert freeze_main([str(cassette), "-o", str(target)]) == 3
    err = capsys.readouterr().err
    assert f"harness freeze: cannot write {target}" in err
    assert "Traceback" not in err


# -- how the recorded run ended ---------------------------------------------------------------


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_a_run_stopped_by_stagnation_freezes_into_one_that_stagnates(tmp_path):
    cassette = tmp_path / "loop.yaml"
    steps = [{"tool_calls": [{"lookup": {"city": "Oslo"}}], "repeat": 5}, {"content": "Done."}]
    recorded = record(cassette, steps, [lookup])
    assert (recorded.termination, recorded.llm_calls) == ("stagnation", 4)

    scenario, result = frozen(tmp_path, cassette)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert scenario["expect"]["termination"] == "stagnation"
    assert scenario["expect"]["llm_calls"] == 4
    # Three rounds ran; the fourth identical plan was stopped, so it never ran, but the
    # model asked for it: it is in the sequence (docs/scenarios.md#which-calls-count).
    assert scenario["expect"]["tool_calls"]["sequence"] == ["lookup"] * 4
    assert result.transcript == recorded.conversation.messages


def test_a_run_ended_by_a_validation_error_freezes_with_that_ending(tmp_path):
    cassette = tmp_path / "invalid.yaml"
    steps = [
        {"tool_calls": [{"lookup": {"town": "Oslo"}}], "unknown_tools": True},
        {"content": "?"},
    ]
    recorded = record(cassette, steps, [lookup])
    assert recorded.termination == "validation_error"

    scenario, result = frozen(tmp_path, cassette)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert scenario["expect"]["termination"] == "validation_error"
    assert scenario["expect"]["llm_calls"] == 1
    (step,) = scenario["llm"]["script"]
    assert step["tool_calls"] == [
        {"id": "call_1_0", "name": "lookup", "arguments": {"town": "Oslo"}}
    ]


def test_a_tool_call_that_raised_is_frozen_as_a_failure_not_a_result(tmp_path):
    cassette = tmp_path / "flaky.yaml"
    attempts = []

    @tool
    def fetch(city: str) -> str:
        """Fetch a city's page; the first try times out."""
        attempts.append(city)
        if len(attempts) == 1:
            raise TimeoutError("upstream took longer than 5 s")
        return f"{city}: sunny"

    steps = [
        {"tool_calls": [{"fetch": {"city": "Oslo"}}]},
        {"tool_calls": [{"fetch": {"city": "Oslo"}}]},
        {"content": "Sunny in Oslo."},
    ]
    recorded = record(cassette, steps, [fetch])
    assert [c.status for c in recorded.tool_calls] == ["error", "ok"]

    scenario, result = frozen(tmp_path, cassette)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    stub = scenario["tools"]["fetch"]
    assert stub["errors"] == [
        {"on_call": 1, "raise": "upstream took longer than 5 s", "type": "TimeoutError"}
    ]
    assert stub["results"] == [{"on_call": 2, "returns": "Oslo: sunny"}]
    # The frozen run fails where the recording failed: the error status and count stay.
    assert [(c.status, c.is_error) for c in result.tool_calls] == [("error", True), ("ok", False)]
    assert result.tool_calls[0].result == "TimeoutError: upstream took longer than 5 s"


RECORDED_SCENARIO = """agent: {max_iterations: 3, stagnation: {window: 5}}
input: Population of Oslo, then Rome?
tools:
  lookup:
    parameters: {city: str}
    returns: "{{ args.city }} has {{ args.city | length * 1000 }} people"
llm: {provider: openai, model: gpt-4o-mini, base_url: "URL"}
"""


@pytest.fixture
def limited(tmp_path) -> tuple[Path, Path, object]:
    """A scenario stopped by its iteration limit, recorded to its default cassette."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    source = tmp_path / "scenarios" / "limited.scenario.yaml"
    source.parent.mkdir()
    steps = [
        {"tool_calls": [{"lookup": {"city": "Oslo"}}]},
        {"tool_calls": [{"lookup": {"city": "Rome"}}]},
        {"content": "Oslo 4000, Rome 4000."},
    ]
    with running_server(steps) as url:
        source.write_text(RECORDED_SCENARIO.replace("URL", url))
        recorded = run_scenario(source, record_mode="once")
    assert (recorded.termination, recorded.llm_calls) == ("max_iterations", 2)
    cassette = tmp_path / "cassettes" / "limited.yaml"
    assert cassette.is_file()
    return source, cassette, recorded


def test_a_run_stopped_by_its_limit_freezes_ending_at_the_limit_without_its_scenario(
    tmp_path, limited, capsys
):
    _, cassette, recorded = limited
    out = tmp_path / "frozen.scenario.yaml"
    assert freeze_main([str(cassette), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert (
        "the recording ends on 1 call(s) (to lookup) that no later request answers: its "
        "client stopped the run there, so the frozen scenario says agent.max_iterations: 4"
    ) in err
    result = run_scenario(out)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert (result.termination, result.llm_calls) == ("max_iterations", recorded.llm_calls)


def test_a_recorded_run_that_ended_in_error_is_refused_in_one_line(tmp_path, capsys):
    """A run ending in `error` fails whatever it expects: nothing could pass as written."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    source = tmp_path / "scenarios" / "late.scenario.yaml"
    source.parent.mkdir()
    # The model answers the final-answer request (tool_choice="none") with tool calls,
    # as some OpenAI-compatible providers do (serve does it only when told to).
    steps = [
        {"tool_calls": [{"lookup": {"city": "Oslo"}}]},
        {"tool_calls": [{"lookup": {"city": "Rome"}}], "unknown_tools": True},
    ]
    with running_server(steps) as url:
        text = RECORDED_SCENARIO.replace("URL", url).replace(
            "max_iterations: 3,", "max_iterations: 1, on_max_iterations: final_answer,"
        )
        source.write_text(text)
        recorded = run_scenario(source, record_mode="once")
    assert recorded.termination == "error"
    cassette = tmp_path / "cassettes" / "late.yaml"
    out = tmp_path / "frozen.scenario.yaml"

    status = freeze_main([str(cassette), "--scenario", str(source), "-o", str(out)])

    assert status == 2
    err = one_line_error(capsys)
    assert "the recorded run ends in error" in err and "cannot pass as written" in err
    assert not out.exists()


def test_the_scenario_that_recorded_a_run_gives_its_agent_settings_and_its_cassette(
    tmp_path, limited
):
    source, _, recorded = limited
    out = tmp_path / "frozen.scenario.yaml"
    # No cassette named: the scenario's default cassette is frozen.
    assert freeze_main(["--scenario", str(source), "-o", str(out)]) == 0
    scenario = yaml.safe_load(out.read_text())
    result = run_scenario(out)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert scenario["agent"] == {"max_iterations": 3, "stagnation": {"window": 5}}
    # The original's short-form definition, with the recorded results.
    assert scenario["tools"]["lookup"]["parameters"] == {"city": "str"}
    assert scenario["tools"]["lookup"]["results"] == [
        {"on_call": 1, "returns": "Oslo has 4000 people"}
    ]
    assert scenario["expect"]["termination"] == "max_iterations"
    assert scenario["expect"]["llm_calls"] == 2
    assert result.transcript == recorded.transcript


def test_a_scenario_changed_since_its_recording_is_refused(tmp_path, limited, capsys):
    source, cassette, _ = limited
    edited = source.read_text().replace("city: str", "city: str, country: str")
    source.write_text(edited)
    out = tmp_path / "frozen.scenario.yaml"
    assert freeze_main([str(cassette), "--scenario", str(source), "-o", str(out)]) == 2
    err = one_line_error(capsys)
    assert "request 1 (interaction 1): tool lookup's parameters differ" in err
    assert "changed since it was recorded? re-record" in err
    assert not out.exists()


# -- several runs in one cassette ---------------------------------------------------------------


def city_tool(population: int):
    @tool
    def lookup(city: str) -> dict:
        """Look a city up."""
        return {"city": city, "population": population}

    return lookup


def test_a_cassette_holding_several_runs_freezes_the_last_one_and_says_so(tmp_path, capsys):
    cassette = tmp_path / "two.yaml"
    steps = [{"tool_calls": [{"lookup": {"city": "Oslo"}}]}, {"content": "Done."}]
    config = LLMConfig(provider="openai", model="gpt-4o-mini", cassette=str(cassette))
    with running_server(steps) as url:
        for mode, population in (("once", 700), ("new_episodes", 710)):
            bound = config.model_copy(update={"base_url": url})
            llm = OpenAILLM(bound.with_context(LLMContext(record_mode=mode)))
            assert Agent(llm=llm, tools=[city_tool(population)]).run("Oslo?").llm_calls == 2
    assert len(yaml.safe_load(cassette.read_text())["interactions"]) == 3

    _, result = frozen(tmp_path, cassette)
    err = capsys.readouterr().err
    assert "holds 2 runs (run 1: interactions 1-2; run 2: interactions 1, 3)" in err
    assert (
        "froze run 2, the last recorded; the other runs' requests are left out; --run N picks "
        "another" in err
    )
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert result.tool_calls[0].result == '{"city": "Oslo", "population": 710}'

    first = tmp_path / "first.scenario.yaml"
    assert freeze_main([str(cassette), "--run", "1", "-o", str(first)]) == 0
    assert run_scenario(first).tool_calls[0].result == '{"city": "Oslo", "population": 700}'
    capsys.readouterr()
    assert freeze_main([str(cassette), "--run", "3", "-o", str(first)]) == 2
    assert "--run 3: " in one_line_error(capsys)


# -- secrets and bad cassettes ----------------------------------------------------------------


def test_freeze_masks_the_secret_values_a_cassette_holds(tmp_path, monkeypatch):
    key = "sk-freeze-secret-0123456789abcdef"

    @tool
    def whoami() -> str:
        """Who am I."""
        return f"token {key}"

    cassette = tmp_path / "leak.yaml"
    # Recorded while the key was not set (say, elsewhere): the cassette holds it as is.
    record(cassette, [{"tool_calls": [{"whoami": {}}]}, {"content": f"You are {key}."}], [whoami])
    assert key in cassette.read_text()
    monkeypatch.setenv("OPENAI_API_KEY", key)

    out = tmp_path / "frozen.scenario.yaml"
    assert freeze_main([str(cassette), "-o", str(out)]) == 0
    text = out.read_text()
    assert key not in text
    assert "token <OPENAI_API_KEY>" in text and "You are <OPENAI_API_KEY>." in text
    assert run_scenario(out).status == "passed"


BAD_CASSETTES = {
    "uri-a-number": (
        "version: 1\ninteractions:\n- request: {method: POST, uri: 5}\n"
        "  response: {status: 200, body: 7}\n",
        "bad.yaml:3: interaction 1: request.uri: expected a string, got int 5",
    ),
    "body-a-string": (
        "interactions:\n- request: {method: POST, uri: 'http://h/v1/chat/completions'}\n"
        "  response:\n    status: {code: 200}\n    body: 'hello'\n",
        "bad.yaml:5: interaction 1: response.body: expected {string: ...}",
    ),
    "headers-a-list": (
        "interactions:\n- request:\n    method: POST\n    uri: http://h/v1/chat/completions\n"
        "    headers: [a, b]\n  response: {status: {code: 200}, body: {string: '{}'}}\n",
        "bad.yaml:5: interaction 1: request.headers: expected a mapping",
    ),
    "request-a-string": (
        "interactions:\n- request: POST /v1/chat/completions\n"
        "  response: {status: {code: 200}, body: {string: '{}'}}\n",
        "bad.yaml:2: interaction 1: request: expected a mapping",
    ),
    "no-method": (
        "interactions:\n- {request: {uri: x}, response: {status: {code: 200}}}\n"
        "- request: {uri: 'http://h/v1/chat/completions'}\n"
        "  response: {status: {code: 200}, body: {string: '{}'}}\n",
        "bad.yaml:2: interaction 1: request.method: missing",
    ),
    "yaml-syntax": (
        "interactions: [\n",
        "bad.yaml:2: not valid YAML: did not find expected node content "
        "(while parsing a flow node)",
    ),
    "empty": ("", "bad.yaml: the cassette is empty (nothing has been recorded in it)"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASSETTES))
def test_a_malformed_cassette_is_one_line_naming_file_line_interaction_and_field(
    tmp_path, monkeypatch, capsys, case
):
    text, message = BAD_CASSETTES[case]
    monkeypatch.chdir(tmp_path)
    Path("bad.yaml").write_text(text)
    assert freeze_main(["bad.yaml", "-o", "x.scenario.yaml"]) == 2
    assert one_line_error(capsys).startswith(f"harness freeze: {message}")
    assert not Path("x.scenario.yaml").exists()


def test_a_reply_whose_text_is_blank_freezes_and_replays_as_recorded(tmp_path, capsys):
    # A model that says " " before its calls: the blank text is in the recording's next
    # request as the model wrote it, and in the frozen run's; neither is compared, both are
    # sent (blank texts a client adds, as llm-anthropic does, are set aside the same way).
    steps = [
        {"content": " ", "tool_calls": [{"lookup": {"city": "Oslo"}}]},
        {"content": "Oslo: 4000."},
    ]
    cassette = tmp_path / "run.yaml"
    assert record(cassette, steps, [lookup]).termination == "completed"
    scenario, result = frozen(tmp_path, cassette)
    assert scenario["llm"]["script"][0]["content"] == " "
    # The model wrote it: no note blames the client.
    assert "blank text" not in capsys.readouterr().err
    assert result.status == "passed", [e for e in result.expectations if not e.ok]


def test_a_run_continuing_a_conversation_keeps_its_system_text_in_front(tmp_path):
    # A second turn recorded with the first as its history: the frozen scenario starts from
    # that history, system message first (the loop sends a history as given, without
    # agent.system in front of it).
    cassette = tmp_path / "run.yaml"
    config = LLMConfig(provider="openai", model="gpt-4o-mini", cassette=str(cassette))
    earlier = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Population of Oslo?"},
        {"role": "assistant", "content": "About 700,000."},
    ]
    with running_server([{"content": "About 660,000."}]) as url:
        bound = config.model_copy(update={"base_url": url})
        llm = OpenAILLM(bound.with_context(LLMContext(record_mode="once")))
        Agent(llm=llm).run("And Bergen?", earlier)

    scenario, result = frozen(tmp_path, cassette)
    assert scenario["history"] == earlier
    assert "agent" not in scenario
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
