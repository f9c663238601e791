"""The fault catalogue as scenario data (docs/scenarios.md#model-faults): ``llm.faults``
placed before a model reply, executed by the own loop's scripted model and by `harness
serve` alike (real SDKs over real HTTP on 127.0.0.1), in front of a recorded model's
cassette, and the tool side's per-call faults."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import anthropic
import httpx
import openai
import pytest

from harness._errors import HarnessError, LLMError
from harness._messages import Conversation
from harness.llm._base import LLMRequest
from harness.llm._config import LLMConfig
from harness.llm._faults import MODEL_FAULTS, ModelFault, with_faults
from harness.llm._script import ScriptStep
from harness.llm._scripted import ScriptedLLM
from harness.scenario import load_scenario, run_scenario
from harness.scenario._loader import load_scenario_text
from harness.serve import create_app, running_app

ROOT = Path(__file__).resolve().parents[1]

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
SCRIPT = [
    {"tool_calls": [{"get_weather": {"city": "Paris"}}]},
    {"content": "It is 18C in Paris."},
]
STEPS = [ScriptStep.model_validate(s) for s in SCRIPT]


def _faulted(kind: str, call: int = 2, **options) -> list[ScriptStep]:
    return with_faults(STEPS, [ModelFault(call=call, kind=kind, **options)])


# -- the data form ------------------------------------------------------------------------


def test_a_fault_is_inserted_before_the_reply_it_names():
    steps = _faulted("http_429", call=2)
    assert [s.error.status if s.error else s.content for s in steps] == [
        None,
        429,
        "It is 18C in Paris.",
    ]
    # The scripted reply 2 is kept: the request after the fault gets it.
    assert steps[2] == STEPS[1]


def test_faults_at_one_call_come_in_their_order_after_the_scripts_own_errors():
    own = [STEPS[0], ScriptStep(error="timeout"), STEPS[1]]
    steps = with_faults(
        own, [ModelFault(call=2, kind="http_500"), ModelFault(call=2, kind="empty_reply")]
    )
    kinds = [
        s.error if isinstance(s.error, str) else getattr(s.error, "status", None) for s in steps
    ]
    assert kinds == [None, "timeout", 500, None, None]
    assert (steps[3].content, steps[4]) == ("", STEPS[1])


@pytest.mark.parametrize("kind", ["malformed_arguments", "schema_arguments"])
def test_a_fault_spoiling_calls_needs_a_reply_with_calls(kind):
    with pytest.raises(ValueError, match="makes none"):
        _faulted(kind, call=2)
    spoiled = _faulted(kind, call=1)[0]
    assert spoiled.tool_calls[0].name == "get_weather"
    if kind == "malformed_arguments":
        assert spoiled.tool_calls[0].raw_arguments == '{"city":'  # '{"city": "Paris"}' cut
    else:
        assert spoiled.tool_calls[0].arguments == {"city": 12345}


def test_a_fault_past_the_end_of_the_script_is_refused_by_the_loader(tmp_path):
    text = "input: hi\nllm:\n  script: [{content: done}]\n  faults: [{call: 3, kind: http_429}]\n"
    with pytest.raises(HarnessError, match="call 3, but the script has 1 replies"):
        load_scenario_text(text, tmp_path / "x.scenario.yaml")


def test_a_recorded_model_takes_only_faults_that_send_no_reply(tmp_path):
    text = (
        "input: hi\nllm:\n  provider: openai\n  model: gpt-4o-mini\n"
        "  faults: [{call: 1, kind: empty_reply}]\n"
    )
    with pytest.raises(HarnessError, match="empty_reply spoils a scripted reply"):
        load_scenario_text(text, tmp_path / "x.scenario.yaml")


def test_a_fault_names_a_conversation_that_exists(tmp_path):
    text = (
        "target: {command: [true]}\ninput: hi\nllm:\n  script: [{content: done}]\n"
        "  conversations: [{name: worker, match: {system_contains: w}, script: [{content: w}]}]\n"
        "  faults: [{call: 1, kind: http_429, conversation: writer}]\n"
    )
    with pytest.raises(HarnessError, match=r"conversation 'writer' is no llm\.conversations entry"):
        load_scenario_text(text, tmp_path / "x.scenario.yaml")


# -- the own loop and the server agree -------------------------------------------------------


def _own_outcomes(steps: list[ScriptStep], requests: int, stream: bool) -> list[str]:
    return asyncio.run(_own(steps, requests, stream))


async def _own(steps: list[ScriptStep], requests: int, stream: bool) -> list[str]:
    """What each of ``requests`` requests gets from the own loop's scripted model."""
    source = ScriptedLLM(steps)
    outcomes = []
    for n in range(1, requests + 1):
        request = LLMRequest(Conversation(), [], {}, n)
        try:
            if stream:
                response = await source.stream(request, lambda chunk: None)
            else:
                response = await source.complete(request)
        except LLMError as exc:
            outcomes.append(f"error {exc.status or exc.type}")
            continue
        message = response.message
        calls = [
            (c.name, c.raw_arguments or json.dumps(c.arguments, ensure_ascii=False))
            for c in message.tool_calls
        ]
        outcomes.append(f"reply {message.content!r} {calls} {message.finish_reason}")
    return outcomes


def _served_outcomes(steps: list[ScriptStep], requests: int, stream: bool) -> list[str]:
    """What each of ``requests`` requests of one conversation gets from `harness serve`
    (the same request again after a failure, the reply added after a reply), through the
    openai SDK with no retries."""
    outcomes: list[str] = []
    messages: list[dict] = [{"role": "user", "content": "Weather in Paris?"}]
    with running_app(create_app(steps, max_delay=1.0)) as url:
        client = openai.OpenAI(base_url=url, api_key="x", max_retries=0, timeout=10)
        for _ in range(requests):
            try:
                if stream:
                    try:
                        with client.chat.completions.stream(
                            model="m", messages=messages, tools=[TOOL]
                        ) as events:
                            for _event in events:
                                pass
                            message = events.get_final_completion().choices[0]
                    except openai.LengthFinishReasonError as cut:
                        # The SDK refuses to parse a reply cut by its length: it is one.
                        message = cut.completion.choices[0]
                else:
                    message = client.chat.completions.create(
                        model="m", messages=messages, tools=[TOOL]
                    ).choices[0]
            except openai.APIStatusError as exc:
                outcomes.append(f"error {exc.status_code}")
                continue
            except openai.APITimeoutError:
                outcomes.append("error timeout")
                continue
            except (openai.APIConnectionError, httpx.HTTPError):
                outcomes.append("error stream_cut")
                continue
            reply = message.message
            calls = [(c.function.name, c.function.arguments) for c in reply.tool_calls or []]
            outcomes.append(f"reply {reply.content!r} {calls} {message.finish_reason}")
            messages.append(reply.model_dump(exclude_none=True))
            for call in reply.tool_calls or []:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": "18C"})
    return outcomes


# Both sides name a failure by what the client sees: the status, or timeout / stream_cut.
_SAME = {
    "error 504": "error timeout",
    "error 529": "error 503",
    "error 400": "error script_exhausted",
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("kind", MODEL_FAULTS)
def test_the_own_loop_and_the_server_execute_a_fault_alike(kind, stream):
    call = 1 if kind in ("malformed_arguments", "schema_arguments") else 2
    steps = _faulted(kind, call=call, **({"seconds": 0.2} if kind == "timeout" else {}))
    own = _own_outcomes(steps, 4, stream)
    served = _served_outcomes(steps, 4, stream)
    assert [_SAME.get(o, o) for o in served] == [_SAME.get(o, o) for o in own]
    if kind == "outage":
        assert own[1:] == ["error 503"] * 3  # this request and every one after it
    elif kind in (
        "malformed_arguments",
        "schema_arguments",
        "truncated",
        "unknown_tool",
        "empty_reply",
    ):
        assert own[call - 1] != own[call]  # a spoiled reply, then the scripted one
    else:
        assert own[1].startswith("error") and "18C" in own[2]


def test_a_served_429_tells_the_sdk_to_retry_in_a_millisecond():
    """The retry-after the SDKs read (retry-after-ms first): a retrying client goes on at once."""
    steps = _faulted("http_429", call=1)
    with running_app(create_app(steps)) as url:
        raw = httpx.post(f"{url}/chat/completions", json={"model": "m", "messages": []})
        assert raw.status_code == 429
        assert raw.headers["retry-after-ms"] == "1"
        assert raw.headers["retry-after"] == "0.001"
        assert raw.json()["error"]["type"] == "rate_limit_error"
    with running_app(create_app(steps)) as url:
        client = openai.OpenAI(base_url=url, api_key="x", max_retries=2)
        started = time.perf_counter()
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], tools=[TOOL]
        )
        assert reply.choices[0].message.tool_calls[0].function.name == "get_weather"
        # The SDK's own backoff would sleep half a second or more.
        assert time.perf_counter() - started < 0.45


def test_overloaded_is_anthropics_529_and_a_503_on_the_other_wires():
    steps = _faulted("overloaded", call=1)
    with running_app(create_app(steps)) as url:
        client = anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="x", max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as failed:
            client.messages.create(
                model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
            )
        assert failed.value.status_code == 529
        assert failed.value.body["error"]["type"] == "overloaded_error"
    with running_app(create_app(steps)) as url:
        raw = httpx.post(f"{url}/chat/completions", json={"model": "m", "messages": []})
        assert raw.status_code == 503 and "overloaded" in raw.json()["error"]["message"]


def test_a_retrying_client_goes_on_past_a_stream_cut_of_a_whole_reply():
    """The openai SDK retries a connection dropped mid-body: the retry gets the reply."""
    steps = _faulted("stream_cut", call=1)
    with running_app(create_app(steps)) as url:
        client = openai.OpenAI(base_url=url, api_key="x", max_retries=1)
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}], tools=[TOOL]
        )
        assert reply.choices[0].message.tool_calls[0].function.name == "get_weather"


def test_an_outage_fails_every_conversation_from_then_on():
    steps = [ScriptStep(error="outage"), *STEPS]
    with running_app(create_app(steps)) as url:
        for question in ("one", "two"):
            raw = httpx.post(
                f"{url}/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": question}]},
            )
            assert raw.status_code == 503
        assert httpx.post(f"{url}/reset").status_code == 204


def test_a_timeout_is_held_for_its_seconds_then_answered_504():
    steps = _faulted("timeout", call=1, seconds=0.3)
    with running_app(create_app(steps, max_delay=5)) as url:
        started = time.perf_counter()
        raw = httpx.post(f"{url}/chat/completions", json={"model": "m", "messages": []})
        held = time.perf_counter() - started
    assert raw.status_code == 504 and 0.3 <= held < 3


# -- through the scenario runner ---------------------------------------------------------


def _scenario(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "case.scenario.yaml"
    path.write_text(body)
    return path


OWN = """\
input: Weather in Paris?
{agent}tools:
  get_weather: {{parameters: {{city: str}}, returns: 18C}}
llm:
  script:
    - tool_calls: [{{get_weather: {{city: Paris}}}}]
    - content: It is 18C in Paris.
  faults: [{{call: 2, kind: http_429}}]
expect:
  termination: completed
"""


def test_a_429_ends_the_own_loop_without_llm_retries_and_not_with_them(tmp_path):
    bare = run_scenario(_scenario(tmp_path, OWN.format(agent="")))
    assert bare.termination == "llm_error" and bare.final.error.status == 429
    retried = run_scenario(_scenario(tmp_path, OWN.format(agent="agent: {llm_retries: {}}\n")))
    assert retried.status == "passed", retried.final.error
    assert retried.llm_calls == 3
    # The wait is the one the answer asked for, on the simulated clock.
    assert retried.sim_time == pytest.approx(0.001)
    failed = [e for e in retried.events if e.event == "llm_failed"]
    assert [(e.call, e.status) for e in failed] == [(2, 429)]


def test_llm_retries_back_off_on_the_simulated_clock_and_give_up_after_max(tmp_path):
    three = "[{{call: 2, kind: timeout}}, {{call: 2, kind: timeout}}, {{call: 2, kind: timeout}}]"
    body = OWN.replace("[{{call: 2, kind: http_429}}]", three)
    policy = "agent: {llm_retries: {max: 2, backoff: 1}}\n"
    result = run_scenario(_scenario(tmp_path, body.format(agent=policy)))
    assert result.termination == "llm_error" and result.final.error.type == "timeout"
    # Two retries, after 1 and 2 simulated seconds: the third timeout ends the run.
    assert result.llm_calls == 4 and result.sim_time == pytest.approx(1 + 2)
    unretried = "agent: {llm_retries: {on: [429]}}\n"
    result = run_scenario(_scenario(tmp_path, body.format(agent=unretried)))
    assert result.llm_calls == 2  # a timeout is not in `on`: no retry


def test_termination_as_a_set_and_requests_per_call(tmp_path):
    body = OWN.format(agent="agent: {llm_retries: {}}\n").replace(
        "  termination: completed\n",
        "  termination: [llm_error, completed]\n  max_requests_per_call: 1\n",
    )
    result = run_scenario(_scenario(tmp_path, body))
    checked = {e.path: (e.ok, e.actual) for e in result.expectations}
    assert checked == {"termination": (True, "completed"), "max_requests_per_call": (False, 2)}


def test_a_recorded_model_fails_in_front_of_its_cassette(tmp_path):
    original = ROOT / "scenarios" / "recorded" / "weather-chat.scenario.yaml"
    cassette = load_scenario(original).cassette_path()
    path = tmp_path / "weather-chat.scenario.yaml"
    text = original.read_text().replace(
        "  model: gpt-4o-mini\n",
        f"  model: gpt-4o-mini\n  cassette: {cassette}\n  faults: [{{call: 2, kind: http_503}}]\n",
    )
    path.write_text(text)
    failed = run_scenario(path)
    assert failed.termination == "llm_error" and failed.final.error.status == 503
    text = text.replace("agent: {planner: react}", "agent: {planner: react, llm_retries: {}}")
    path.write_text(text.replace("llm_calls: 2", "llm_calls: 3"))
    retried = run_scenario(path)
    # The request after the fault is the recorded one: the cassette answers it.
    assert retried.status == "passed", retried.expectations
    assert retried.llm_calls == 3


# -- tools ------------------------------------------------------------------------------


def test_per_call_tool_faults(tmp_path):
    body = """\
input: Weather?
tools:
  get_weather:
    parameters: {city: str}
    returns: sunny
    results:
      - {on_call: 2, latency: 20}
      - {on_call: 3, pad_to: 50}
    errors:
      - {on_call: 4, type: TimeoutError, raise: no answer within 30 s, after: 30}
llm:
  script:
    - tool_calls: [{get_weather: {city: A}}]
    - tool_calls: [{get_weather: {city: B}}]
    - tool_calls: [{get_weather: {city: C}}]
    - tool_calls: [{get_weather: {city: D}}]
    - content: done
"""
    result = run_scenario(_scenario(tmp_path, body))
    calls = result.tool_calls
    assert [c.result for c in calls[:2]] == ["sunny", "sunny"]  # no returns: the tool's own
    assert calls[1].sim_end - calls[1].sim_start == pytest.approx(20)
    assert calls[2].result == ("sunny" * 10)[:50]
    assert calls[3].is_error and "TimeoutError: no answer" in str(calls[3].result)
    assert calls[3].sim_end - calls[3].sim_start == pytest.approx(30)


def test_llm_config_places_a_conversations_faults_in_its_own_script():
    config = LLMConfig.model_validate(
        {
            "script": [{"content": "main"}],
            "conversations": [
                {
                    "match": {"system_contains": "w"},
                    "script": [{"content": "w1"}, {"content": "w2"}],
                }
            ],
            "faults": [{"call": 2, "kind": "http_500", "conversation": 1}],
        }
    )
    assert config.scripted() == list(config.script)
    (worker,) = config.served_conversations()
    assert [s.error.status if s.error else s.content for s in worker.script] == ["w1", 500, "w2"]


def test_a_targets_recorded_model_refuses_faults_in_one_line(tmp_path):
    text = (
        'target: {command: ["true"]}\ninput: hi\nllm:\n  provider: openai\n  model: m\n'
        "  faults: [{call: 1, kind: http_429}]\n"
    )
    with pytest.raises(HarnessError, match=r"a target's recorded model .* takes no llm\.faults"):
        load_scenario_text(text, tmp_path / "x.scenario.yaml")
