"""Judged expectations: the verdict, the prompt, scripted judges, and judges recorded into
the scenario's cassette with the agent's traffic (through `harness serve` on 127.0.0.1,
playing both the agent's model and the judge), replayed offline."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import yaml

from harness import cli
from harness._errors import ScenarioError
from harness._results import build_results
from harness.judge import VerdictError, judge_messages, parse_verdict, prompt_source
from harness.report._html import render_html
from harness.scenario import load_scenario, run_scenario
from harness.serve import running_server

pytestmark = pytest.mark.usefixtures("fresh_plugins")

OFFLINE = "http://127.0.0.1:9/v1"
FINAL_REASON = "It recommends an umbrella because of the rain."
TRANSCRIPT_REASON = "get_weather was called for Oslo before the answer."

AGENT_STEPS = [
    {
        "tool_calls": [{"get_weather": {"city": "Oslo"}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10},
    },
    {
        "content": "Yes, take an umbrella: light rain in Oslo.",
        "usage": {"prompt_tokens": 90, "completion_tokens": 12},
    },
]
JUDGE_STEPS = [
    {
        "content": json.dumps({"pass": True, "score": 0.9, "reason": FINAL_REASON}),
        "usage": {"prompt_tokens": 200, "completion_tokens": 30},
    },
    {
        "content": json.dumps({"pass": True, "score": 0.8, "reason": TRANSCRIPT_REASON}),
        "usage": {"prompt_tokens": 300, "completion_tokens": 25},
    },
]

JUDGED = """\
name: judged
agent: {planner: react, max_iterations: MAX}
input: Should I take an umbrella in Oslo?
tools:
  get_weather:
    parameters: {city: str}
    returns: "9C, light rain in {{ args.city }}"
llm: {provider: openai, model: gpt-4o-mini, match: MATCH}
expect:
  final: {judge: Recommends an umbrella because of the rain}
  transcript:
    judge: {criteria: Looked the weather up for Oslo before answering, model: gpt-4o, threshold: 0.5}
  script_consumed: true
"""


@pytest.fixture(autouse=True)
def _no_openai_environment(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def project(root: Path, text: str, name: str = "judged", config: str = "") -> Path:
    (root / "pyproject.toml").write_text(f"[tool.harness]\n{config}", encoding="utf-8")
    path = root / "scenarios" / f"{name}.scenario.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def judged_project(root: Path, match: str = "body", max_iterations: int = 10) -> Path:
    text = JUDGED.replace("MATCH", match).replace("MAX", str(max_iterations))
    return project(root, text, config='judge_model = "gpt-4.1-mini"\n')


def record(path: Path, monkeypatch) -> object:
    with running_server(AGENT_STEPS, judge_steps=JUDGE_STEPS) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        result = run_scenario(path, "once")
    monkeypatch.setenv("OPENAI_BASE_URL", OFFLINE)
    return result


def seen(result) -> list[tuple]:
    return [(e.path, e.expected, e.actual, e.ok) for e in result.expectations]


def interactions(cassette: Path) -> list[dict]:
    return yaml.safe_load(cassette.read_text(encoding="utf-8"))["interactions"]


def role(interaction: dict) -> str:
    return (interaction["request"]["headers"].get("x-harness-role") or ["agent"])[0]


# -- recorded once, replayed offline -------------------------------------------------------------


def test_a_judged_scenario_recorded_once_replays_offline_with_identical_verdicts(
    tmp_path, monkeypatch
):
    path = judged_project(tmp_path)
    recorded = record(path, monkeypatch)
    assert recorded.status == "passed", seen(recorded)
    assert seen(recorded) == [
        ("final.judge", "Recommends an umbrella because of the rain", FINAL_REASON, True),
        (
            "transcript.judge",
            {
                "criteria": "Looked the weather up for Oslo before answering",
                "model": "gpt-4o",
                "threshold": 0.5,
            },
            f"score 0.8 >= 0.5: {TRANSCRIPT_REASON}",
            True,
        ),
        ("script_consumed", True, True, True),
    ]
    # One cassette: the agent's two requests, then the judges', marked as theirs; the
    # short form's judge is the project's judge_model, the long form names its own.
    stored = interactions(tmp_path / "cassettes" / "judged.yaml")
    assert [role(i) for i in stored] == ["agent", "agent", "judge", "judge"]
    assert [i["request"]["parsed_body"]["model"] for i in stored] == [
        "gpt-4o-mini",
        "gpt-4o-mini",
        "gpt-4.1-mini",
        "gpt-4o",
    ]
    # The judges' cost beside the agent's own usage, never added into it.
    assert recorded.usage == {
        "prompt_tokens": 140,
        "completion_tokens": 22,
        "total_tokens": 162,
        "judge_requests": 2,
        "judge_prompt_tokens": 500,
        "judge_completion_tokens": 55,
        "judge_total_tokens": 555,
    }
    assert recorded.llm_calls == 2

    # Offline (nothing listens at OPENAI_BASE_URL), twice: the same verdicts every time.
    for _ in range(2):
        replayed = run_scenario(path, "none")
        assert replayed.status == "passed"
        assert seen(replayed) == seen(recorded)
        assert replayed.usage == recorded.usage


def test_a_judge_request_never_consumes_an_agent_interaction(tmp_path, monkeypatch):
    # Sequential matching plays the first unplayed interaction of the same method and
    # path: without the marker, the judge would get the agent's unplayed second reply.
    path = judged_project(tmp_path, match="sequential")
    assert record(path, monkeypatch).status == "passed"
    # The agent now stops after its first request, leaving its second reply unplayed.
    judged_project(tmp_path, match="sequential", max_iterations=1)
    replayed = run_scenario(path, "none")
    assert replayed.termination == "max_iterations"
    by_path = {e.path: e for e in replayed.expectations}
    assert by_path["final.judge"].actual == FINAL_REASON
    assert by_path["transcript.judge"].actual == f"score 0.8 >= 0.5: {TRANSCRIPT_REASON}"
    # The agent's reply left unplayed is counted; the judges' interactions never are.
    assert by_path["script_consumed"].actual == "1 replies left unused"


def test_an_agent_request_never_consumes_a_judge_interaction(tmp_path, monkeypatch):
    path = judged_project(tmp_path, match="sequential")
    assert record(path, monkeypatch).status == "passed"
    # Drop the agent's second interaction: its second request must miss, not be answered
    # with the judge's verdict (the next unplayed POST /v1/chat/completions).
    cassette = tmp_path / "cassettes" / "judged.yaml"
    data = yaml.safe_load(cassette.read_text(encoding="utf-8"))
    del data["interactions"][1]
    cassette.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    replayed = run_scenario(path, "none")
    assert replayed.termination == "llm_error"
    assert "cassette miss: request 2 of the run" in replayed.final.error["message"]
    by_path = {e.path: e for e in replayed.expectations}
    # Both judges still got their own recorded verdicts.
    assert by_path["final.judge"].actual == FINAL_REASON
    assert by_path["transcript.judge"].actual == f"score 0.8 >= 0.5: {TRANSCRIPT_REASON}"


def test_a_judge_missing_from_the_cassette_fails_its_expectation_with_the_miss(
    tmp_path, monkeypatch
):
    path = judged_project(tmp_path)
    with running_server(AGENT_STEPS) as url:  # no judge script: recording the judge fails
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        result = run_scenario(path, "once")
    assert result.status == "failed"
    by_path = {e.path: e for e in result.expectations}
    assert not by_path["final.judge"].ok
    assert by_path["final.judge"].actual.startswith("the judge's request failed:")
    assert "judge_script" in by_path["final.judge"].actual
    monkeypatch.setenv("OPENAI_BASE_URL", OFFLINE)
    # The agent's requests were recorded; the judge's, refused by the server, were not.
    stored = interactions(tmp_path / "cassettes" / "judged.yaml")
    assert [role(i) for i in stored] == ["agent", "agent", "judge", "judge"]
    assert [i["response"]["status"]["code"] for i in stored] == [200, 200, 400, 400]


# -- scripted judges -------------------------------------------------------------------------------

SCRIPTED = """\
input: What is the capital of Australia?
llm:
  script:
    - content: The capital of Australia is Sydney.
  judge_script: STEPS
expect:
  final:
    judge: JUDGE
"""


def scripted(tmp_path: Path, steps: list, judge: str = "Names Canberra") -> Path:
    text = SCRIPTED.replace("STEPS", json.dumps(steps)).replace("JUDGE", judge)
    return project(tmp_path, text, name="scripted")


def verdict(passed: bool, score: float, reason: str) -> dict:
    return {"content": json.dumps({"pass": passed, "score": score, "reason": reason})}


def only(result):
    (expectation,) = result.expectations
    return expectation


def test_a_failing_verdict_fails_the_scenario_with_the_reason_as_actual(tmp_path):
    path = scripted(tmp_path, [verdict(False, 0.1, "It names Sydney, not Canberra.")])
    result = run_scenario(path)
    assert result.status == "failed"
    assert only(result).actual == "It names Sydney, not Canberra."
    # The report shows the reason (as text).
    html = render_html(build_results([result]))
    assert "It names Sydney, not Canberra." in html


def test_verdict_fail_expects_the_judge_to_reject_the_answer(tmp_path):
    path = scripted(
        tmp_path,
        [verdict(False, 0.1, "It names Sydney.")],
        judge="{criteria: Names Canberra, verdict: fail}",
    )
    result = run_scenario(path)
    assert result.status == "passed"
    assert only(result).actual == "It names Sydney."


def test_a_threshold_decides_by_the_score(tmp_path):
    # The verdict says pass, but the score is below the threshold.
    path = scripted(
        tmp_path,
        [verdict(True, 0.6, "Mostly right.")],
        judge="{criteria: Names Canberra, threshold: 0.75}",
    )
    result = run_scenario(path)
    assert result.status == "failed"
    assert only(result).actual == "score 0.6 < 0.75: Mostly right."


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("Looks good to me!", "the judge's reply is not JSON"),
        ('{"pass": "yes", "reason": "ok"}', "`pass` is not true or false"),
        ('{"pass": true}', "gives no `reason`"),
        ('{"pass": true, "score": 8, "reason": "ok"}', "`score` 8 is not between 0 and 1"),
    ],
)
def test_a_reply_that_is_no_verdict_fails_with_what_is_wrong(tmp_path, reply, message):
    result = run_scenario(scripted(tmp_path, [{"content": reply}]))
    assert result.status == "failed"
    assert message in only(result).actual


def test_a_judge_script_that_runs_out_fails_the_judge(tmp_path):
    text = SCRIPTED.replace("STEPS", json.dumps([verdict(True, 1, "Right.")])).replace(
        "JUDGE", "Names Canberra\n  transcript: {judge: Answers in one sentence}"
    )
    result = run_scenario(project(tmp_path, text, name="scripted"))
    assert [e.ok for e in result.expectations] == [True, False]
    assert "script exhausted" in result.expectations[1].actual
    assert result.usage == {"judge_requests": 2}


def test_verdicts_in_a_fence_and_without_score_are_read():
    fenced = '```json\n{"pass": true, "reason": "ok"}\n```'
    assert parse_verdict(fenced).score == 1.0
    assert parse_verdict('{"pass": false, "reason": "no"}').score == 0.0
    with pytest.raises(VerdictError, match="empty"):
        parse_verdict("  ")


# -- the prompt ---------------------------------------------------------------------------------


def test_the_prompt_asks_for_a_json_verdict_and_shows_run_text_as_text():
    messages = judge_messages(
        "final answer",
        "Names Paris\n",
        task="Capital of France?",
        final="Paris {{ 7 * 7 }} {% raw %}",
        transcript=[],
    )
    assert [m["role"] for m in messages] == ["system", "user"]
    assert '{"pass": true or false, "score"' in messages[0]["content"]
    assert messages[1]["content"] == (
        "<task>\nCapital of France?\n</task>\n\n<final_answer>\nParis {{ 7 * 7 }} {% raw %}\n"
        "</final_answer>\n\n<criteria>\nNames Paris\n</criteria>"
    )


def test_the_transcript_judge_sees_calls_and_results():
    transcript = [
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1_0",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1_0", "content": "9C"},
    ]
    (_, user) = judge_messages(
        "transcript", "Looked it up", task="Weather in Oslo?", final=None, transcript=transcript
    )
    assert (
        '[2] assistant:\n  -> calls get_weather({"city": "Oslo"}) [id call_1_0]\n'
        "[3] tool (result of call call_1_0):\n9C" in user["content"]
    )


def test_the_docs_show_the_prompt_as_it_is():
    docs = (Path(__file__).resolve().parents[1] / "docs" / "judges.md").read_text()
    for line in prompt_source().splitlines():
        assert line in docs, line


# -- bad input --------------------------------------------------------------------------------------


def errors(path: Path) -> str:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    return str(caught.value)


def test_a_scripted_scenario_judged_without_a_judge_script_is_a_load_error(tmp_path):
    path = project(tmp_path, SCRIPTED.replace("  judge_script: STEPS\n", "").replace("JUDGE", "x"))
    assert (
        "scenarios/judged.scenario.yaml:7: expect.final.judge: a scripted scenario's judge is "
        "scripted too: add llm.judge_script" in errors(path)
    )


@pytest.mark.parametrize(
    ("judge", "field", "message"),
    [
        (
            "{criteria: x, threshold: 1.5}",
            "expect.final.judge.threshold",
            "expected 1 or less, got 1.5",
        ),
        ("{criteria: x, verdict: maybe}", "expect.final.judge.verdict", "'pass' or 'fail'"),
        ("{criteria: '  '}", "expect.final.judge", "criteria is empty"),
        ("{criterion: x}", "expect.final.judge.criterion", "unknown key 'criterion'"),
    ],
)
def test_bad_judges_are_load_errors_with_their_line(tmp_path, judge, field, message):
    path = scripted(tmp_path, [verdict(True, 1, "ok")], judge=judge)
    text = errors(path)
    assert f"scenarios/scripted.scenario.yaml:8: {field}: " in text
    assert message in text


def test_a_judge_script_step_with_tool_calls_is_a_load_error(tmp_path):
    path = scripted(tmp_path, [{"tool_calls": [{"lookup": {}}]}])
    assert "llm.judge_script.0.tool_calls: a judge replies with a JSON verdict" in errors(path)


def test_harness_validate_exits_2_on_a_bad_judge(tmp_path, monkeypatch, capsys):
    path = scripted(tmp_path, [verdict(True, 1, "ok")], judge="{criteria: x, threshold: -1}")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["validate", str(path)]) == 2
    assert "scenarios/scripted.scenario.yaml:8: expect.final.judge.threshold:" in (
        capsys.readouterr().out
    )


# -- harness serve plays the judge ----------------------------------------------------------------


def test_serve_answers_marked_requests_from_the_judge_script_in_turn():
    body = {"model": "m", "messages": [{"role": "user", "content": "grade"}]}
    judge = {"x-harness-role": "judge"}
    serving = running_server(AGENT_STEPS, judge_steps=JUDGE_STEPS)
    with serving as url, httpx.Client(base_url=url, timeout=10) as client:
        replies = [
            client.post("/chat/completions", json=body, headers=judge).json() for _ in range(3)
        ]
        # The agent's request offers the tool its step calls (serve refuses a step that
        # does not fit the request).
        tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
        agent = client.post("/chat/completions", json={**body, "tools": tools}).json()
        assert client.post("/reset").status_code == 204
        again = client.post("/chat/completions", json=body, headers=judge).json()
    contents = [r["choices"][0]["message"]["content"] for r in replies]
    # In turn, starting over after the last: each combination recorded against one
    # server gets the same verdicts.
    assert contents == [
        JUDGE_STEPS[0]["content"],
        JUDGE_STEPS[1]["content"],
        JUDGE_STEPS[0]["content"],
    ]
    assert agent["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert again["choices"][0]["message"]["content"] == JUDGE_STEPS[0]["content"]


def test_serve_without_a_judge_script_refuses_a_judge_request():
    body = {"model": "m", "messages": [{"role": "user", "content": "grade"}]}
    with running_server(AGENT_STEPS) as url, httpx.Client(base_url=url, timeout=10) as client:
        answer = client.post("/chat/completions", json=body, headers={"x-harness-role": "judge"})
    assert answer.status_code == 400
    assert "judge_script" in answer.json()["error"]["message"]


def test_the_docs_name_what_a_judge_costs_in_usage():
    docs = (Path(__file__).resolve().parents[1] / "docs" / "judges.md").read_text()
    for key in ("judge_requests", "judge_prompt_tokens", "judge_completion_tokens"):
        assert key in docs
