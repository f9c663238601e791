"""Stochastic script steps: ``one_of: [{weight: W, ...step}, ...]``, a simulated model
whose runs differ, drawn with a seed from the scenario's id, the run's number and
``harness run --seed`` (docs/scenarios.md#stochastic-steps): for the own loop, for targets
served the script, and for ``harness serve``.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from scenario_texts import SESSION_TESTS

from harness._errors import LLMError
from harness._messages import Conversation
from harness.llm._base import LLMRequest
from harness.llm._script import draw_material, parse_step, uniform
from harness.llm._scripted import ScriptedLLM
from harness.scenario import load_scenario
from harness.serve import create_app, running_app

pytestmark = SESSION_TESTS

WEIGHTED = """\
name: weather
input: What's the weather in SF?
repeat: {runs}
llm:
  script:
    - one_of:
        - {{weight: 8, content: It is 72F in SF.}}
        - {{weight: 2, content: It is 60F in SF.}}
expect:
  final: {{contains: 72F}}
"""


@pytest.fixture
def project(cli_project):
    """An empty project as the current directory; ``project.run_harness(*args)``."""
    return cli_project


def _write(project, name: str, text: str) -> None:
    (project.path / "scenarios" / f"{name}.scenario.yaml").write_text(text, encoding="utf-8")


def _outcomes(project) -> list[str]:
    data = json.loads((project.path / "reports/results.json").read_text())
    return [s["status"] for s in data["scenarios"]]


def test_forty_runs_of_an_80_percent_step_pass_about_80_percent_and_the_same_on_rerun(project):
    _write(project, "weather", WEIGHTED.format(runs=40))
    status, out = project.run_harness("run", "--", "-q")
    assert status == 1, out  # some runs drew the wrong answer
    first = _outcomes(project)
    assert 22 <= first.count("passed") <= 38
    data = json.loads((project.path / "reports/results.json").read_text())
    assert {s["seed"] for s in data["scenarios"]} == {0}  # the seed in each run's results
    assert data["scenarios"][0]["repeats"]["stochastic"] is True
    project.run_harness("run", "--", "-q")
    assert _outcomes(project) == first  # the same draws every time
    # Another seed draws otherwise (and says so in the results).
    project.run_harness("run", "--seed", "7", "--", "-q")
    other = _outcomes(project)
    assert other != first and 22 <= other.count("passed") <= 38
    data = json.loads((project.path / "reports/results.json").read_text())
    assert {s["seed"] for s in data["scenarios"]} == {7}


def test_a_scenario_without_stochastic_steps_has_no_seed_in_its_results(project):
    text = "input: hi\nrepeat: 2\nllm:\n  script:\n    - content: It is 72F.\n"
    _write(project, "plain", text)
    status, out = project.run_harness("run", "--seed", "3")
    assert status == 0, out
    data = json.loads((project.path / "reports/results.json").read_text())
    assert all("seed" not in s for s in data["scenarios"])
    assert "stochastic" not in data["scenarios"][0]["repeats"]


def _ask(llm: ScriptedLLM, call: int) -> str:
    request = LLMRequest(conversation=Conversation(), tools=[], call=call)
    try:
        return asyncio.run(llm.complete(request)).message.content or ""
    except LLMError as exc:
        return f"error {exc.status}"


def test_a_drawn_error_fails_the_call_and_the_step_answers_the_next_one():
    steps = [
        {"one_of": [{"weight": 1, "error": {"status": 503}}, {"weight": 1, "content": "ok"}]},
        {"content": "done"},
    ]
    for seed in range(20):
        llm = ScriptedLLM(steps, draws=draw_material("s", None, seed))
        answers = [_ask(llm, n) for n in range(1, 12)]
        # Failures until the step gives its reply, then the next step.
        first_ok = answers.index("ok")
        assert answers[:first_ok] == ["error 503"] * first_ok
        assert answers[first_ok + 1] == "done"
    # Over many seeds both options come: the draw depends on the seed.
    starts = {_ask(ScriptedLLM(steps, draws=draw_material("s", None, s)), 1) for s in range(20)}
    assert starts == {"ok", "error 503"}


def test_a_drawn_stream_cut_fails_the_call_as_a_drawn_error_does():
    # A cut reply (docs/scenarios.md#model-faults) never arrives: like an error it takes
    # no place, so the step draws again for the next call.
    steps = [
        {"one_of": [{"weight": 1, "cut": 0.5, "content": "half"}, {"weight": 1, "content": "ok"}]},
        {"content": "done"},
    ]
    for seed in range(20):
        llm = ScriptedLLM(steps, draws=draw_material("s", None, seed))
        answers = [_ask(llm, n) for n in range(1, 12)]
        first_ok = answers.index("ok")
        assert answers[:first_ok] == ["error None"] * first_ok
        assert answers[first_ok + 1] == "done"
    starts = {_ask(ScriptedLLM(steps, draws=draw_material("s", None, s)), 1) for s in range(20)}
    assert starts == {"ok", "error None"}


def test_draws_are_by_weight_and_depend_on_every_input():
    step = parse_step(0, {"one_of": [{"weight": 9, "content": "a"}, {"content": "b"}]})
    drawn = [step.draw(uniform("m", "script 1", n)).content for n in range(2000)]
    assert 0.87 < drawn.count("a") / 2000 < 0.93
    fractions = {
        uniform(draw_material(sid, run, seed), "script 1", 0)
        for sid in ("a::a", "b::b")
        for run in (1, 2)
        for seed in (0, 1)
    }
    assert len(fractions) == 8


def test_a_one_of_step_is_checked_like_any_step(project):
    text = """\
input: hi
tools:
  get_weather: {parameters: {city: str}, returns: 72F}
llm:
  script:
    - one_of:
        - {weight: 3, tool_calls: [{get_weater: {city: SF}}]}
        - {weight: 1, content: hello}
"""
    _write(project, "bad", text)
    _write(project, "worse", text.replace("content: hello}", "content: hello, repeat: 2}"))
    status, out = project.run_harness("validate", "scenarios")
    assert status == 2, out
    assert "bad.scenario.yaml:7: llm.script.0.one_of.0.tool_calls.0: calls tool 'get_weater'" in out
    assert "did you mean 'get_weather'?" in out
    assert "worse.scenario.yaml:8: llm.script.0.one_of.1: a one_of option is one reply" in out


def test_a_one_of_step_holds_its_replies_only(project):
    _write(
        project,
        "bad",
        "input: hi\nllm:\n  script:\n    - one_of: [{content: a}]\n      content: b\n",
    )
    status, out = project.run_harness("validate", "scenarios")
    assert status == 2, out
    assert "a one_of step holds its replies in one_of only" in out and "move content" in out


def test_a_streamed_option_streams_its_own_chunks(project):
    text = """\
name: streamed
input: hi
repeat: 6
llm:
  stream: true
  script:
    - one_of:
        - {content: It is 72F., chunks: ["It is ", "72F."]}
        - {content: It is 60F., chunks: ["It is", " 60F."]}
expect:
  final: {contains: 72F}
"""
    _write(project, "streamed", text)
    project.run_harness("run", "--", "-q")
    data = json.loads((project.path / "reports/results.json").read_text())
    finals = {s["final"]["content"] for s in data["scenarios"]}
    assert finals == {"It is 72F.", "It is 60F."}


def test_served_one_of_steps_draw_anew_for_each_request_and_by_seed():
    import openai

    steps = [parse_step(0, {"one_of": [{"content": "heads"}, {"content": "tails"}]})]

    def answers(seed: int) -> list[str]:
        app = create_app(steps, draws=f"harness serve\x00seed {seed}")
        with running_app(app) as url:
            client = openai.OpenAI(base_url=url, api_key="sk-test", max_retries=0)
            return [
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "flip"}]
                )
                .choices[0]
                .message.content
                for _ in range(16)
            ]

    first = answers(0)
    assert set(first) == {"heads", "tails"}  # the same request, answered either way
    assert answers(0) == first
    assert answers(1) != first


def test_a_target_is_served_its_scripts_one_of_steps_and_its_conversations(project):
    (project.path / "agent.py").write_text(
        """\
import os, openai

def run(text):
    client = openai.OpenAI(base_url=os.environ["OPENAI_BASE_URL"], max_retries=0)
    main = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": text}]
    ).choices[0].message.content
    side = client.chat.completions.create(
        model="m",
        messages=[{"role": "system", "content": "You are the critic."},
                  {"role": "user", "content": main}],
    ).choices[0].message.content
    return f"{main} / {side}"
""",
        encoding="utf-8",
    )
    text = """\
name: target
input: weather?
repeat: 24
target: {python: "agent:run"}
llm:
  script:
    - one_of: [{weight: 3, content: sunny}, {weight: 1, content: rainy}]
  conversations:
    - match: {system_contains: the critic}
      script:
        - one_of: [{content: fine}, {content: poor}]
expect:
  final: {contains: sunny}
"""
    _write(project, "target", text)
    project.run_harness("run", "--", "-q")
    data = json.loads((project.path / "reports/results.json").read_text())
    finals = [s["final"]["content"] for s in data["scenarios"]]
    assert {f.split(" / ")[0] for f in finals} == {"sunny", "rainy"}
    assert {f.split(" / ")[1] for f in finals} == {"fine", "poor"}
    assert load_scenario(project.path / "scenarios/target.scenario.yaml").stochastic
    project.run_harness("run", "--", "-q")
    again = json.loads((project.path / "reports/results.json").read_text())
    assert [s["final"]["content"] for s in again["scenarios"]] == finals


SUB_AGENT_DRAWS = """\
name: two-draws
input: Pick one.
tools:
  helper: {agent: helper}
agents:
  helper:
    tools:
      look: {parameters: {}, returns: seen}
    llm:
      script:
        - tool_calls: [{look: {}}]
        - one_of: [{content: a}, {content: b}, {content: c}, {content: d}]
llm:
  script:
    - tool_calls: [{helper: {task: Pick one.}}]
    - one_of: [{content: a}, {content: b}, {content: c}, {content: d}]
"""


def test_a_sub_agent_draws_apart_from_the_agent_that_calls_it(tmp_path):
    # The same `one_of` at the same step (the second) of the agent's script and its
    # sub-agent's: drawn with the same material, the two would pick alike at every seed.
    from harness.scenario import run_scenario

    path = tmp_path / "two.scenario.yaml"
    path.write_text(SUB_AGENT_DRAWS)
    picks = []
    for seed in range(24):
        result = run_scenario(path, seed=seed, record_mode="none")
        picks.append((result.tool_calls[0].sub_run.final.content, result.final.content))
    assert {own for _, own in picks} == {"a", "b", "c", "d"}
    assert {sub for sub, _ in picks} == {"a", "b", "c", "d"}
    assert any(sub != own for sub, own in picks)
    # And the same seed draws the same again.
    again = run_scenario(path, seed=5, record_mode="none")
    assert (again.tool_calls[0].sub_run.final.content, again.final.content) == picks[5]
