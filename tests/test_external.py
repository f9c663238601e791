"""External targets driven through their real clients (docs/external.md).

Each example scenario of scenarios/external runs its agent (the raw openai SDK sync,
async and streamed, the raw anthropic SDK sync and streamed, pydantic-ai (its OpenAI and Anthropic models), the Agents SDK with its Chat Completions and Responses
models, LangGraph on langchain-openai and on langchain-anthropic, a node program) against harness's server on 127.0.0.1, and the run harness
rebuilds from what crossed the boundary is checked field by field.
"""

from __future__ import annotations

import html
import json
import shutil
from pathlib import Path

import pytest

from harness import hookimpl
from harness._results import build_results
from harness.report import render_html
from harness.report._text import ending_sentence
from harness.scenario import run_scenario

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "scenarios" / "external"

# The examples asking for Paris, then Rome's weather and time in parallel.
CLIENTS = [
    "raw-sync",
    "raw-async",
    "raw-stream",
    "pydantic-ai",
    "agents-sdk-chat",
    "agents-sdk-responses",
    "langgraph",
    "node-command",
    "anthropic-sync",
    "anthropic-stream",
    "pydantic-ai-anthropic",
    "langgraph-anthropic",
    "gemini-sync",
    "gemini-stream",
    "pydantic-ai-google",
    "adk",
]

# The examples on a framework that may not be installed: the modules they import.
FRAMEWORKS = {
    "anthropic-sync": ["anthropic"],
    "anthropic-stream": ["anthropic"],
    "pydantic-ai-anthropic": ["anthropic", "pydantic_ai.models.anthropic"],
    "langgraph-anthropic": ["langgraph", "langchain_anthropic"],
    "gemini-sync": ["google.genai"],
    "gemini-stream": ["google.genai"],
    "pydantic-ai-google": ["google.genai", "pydantic_ai.models.google"],
    "adk": ["google.adk"],
}


@pytest.fixture(autouse=True)
def _examples_importable(monkeypatch):
    # The agents beside the examples import as `scenarios.external.agents...` from the
    # project root, which a plain `pytest` does not put on sys.path.
    monkeypatch.syspath_prepend(str(ROOT))


def run_example(name: str, **kwargs):
    if name == "node-command" and shutil.which("node") is None:
        pytest.skip("node is not installed")
    for module in FRAMEWORKS.get(name, []):
        pytest.importorskip(module, reason=f"{name} needs {module}, which is not installed")
    return run_scenario(EXAMPLES / f"{name}.scenario.yaml", **kwargs)


@pytest.mark.parametrize("name", CLIENTS)
def test_each_client_is_observed_as_a_run(name):
    result = run_example(name)

    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert result.termination == "completed"
    assert (result.llm_calls, result.iterations) == (3, 3)
    calls = [
        (c.name, c.arguments, c.result, c.status, c.group, c.iteration) for c in result.tool_calls
    ]
    assert calls == [
        ("get_weather", {"city": "Paris"}, "18C, cloudy in Paris", "ok", 1, 1),
        ("get_weather", {"city": "Rome"}, "24C, sunny in Rome", "ok", 2, 2),
        ("get_time", {"city": "Rome"}, "14:00 in Rome", "ok", 2, 2),
    ]
    assert [c.id for c in result.tool_calls] == ["call_1_0", "call_2_0", "call_2_1"]
    assert result.parallel_groups == [["get_weather", "get_time"]]
    assert result.final.content == (
        "Paris is 18C and cloudy; Rome is 24C and sunny, and it is 14:00 there."
    )
    assert result.final.error is None
    # Only the last reply reports usage in the script; the others report zeros.
    assert result.usage == {"prompt_tokens": 90, "completion_tokens": 20, "total_tokens": 110}
    # The conversation: the last request's messages and the last reply.
    assert result.transcript[-1].content == result.final.content
    assert [m.tool_call_id for m in result.transcript if m.role == "tool"] == [
        "call_1_0",
        "call_2_0",
        "call_2_1",
    ]


def test_an_external_run_keeps_its_model_calls_on_the_wall_clock():
    result = run_example("raw-sync")

    spans = result.wall_clock
    assert [s.call for s in spans] == [1, 2, 3]
    starts = [s.start for s in spans]
    # Real time: each call after the one before, none at 0, each ending after it starts.
    assert starts == sorted(set(starts)) and starts[0] > 0
    assert all(s.start <= s.end <= result.wall_time + 0.001 for s in spans)
    assert all(round(t, 3) == t for s in spans for t in (s.start, s.end))
    # Like wall_time, in results.json but not in a baseline; an own-loop run has none.
    results = build_results([result])
    assert '"wall_clock"' in results.to_json()
    assert '"wall_clock"' not in results.to_baseline_json()
    own = run_scenario(ROOT / "scenarios" / "core" / "roundtrip.scenario.yaml")
    assert own.wall_clock == [] and "wall_clock" not in own.model_dump_json()


def test_an_external_run_is_the_same_every_time():
    first, second = run_example("raw-async"), run_example("raw-async")

    def data(result):
        return result.model_dump(mode="json", exclude={"wall_time", "wall_clock"})

    assert data(first) == data(second)


class _Seen:
    """Records the hooks an external run fires."""

    def __init__(self):
        self.seen = []

    @hookimpl
    def harness_llm_request(self, run, request):
        self.seen.append(("request", request.call, [t.name for t in request.tools]))

    @hookimpl
    def harness_llm_response(self, run, response):
        self.seen.append(("response", [c.name for c in response.message.tool_calls]))

    @hookimpl
    def harness_action_executed(self, run, action, result):
        self.seen.append(("executed", action.tool_call.name, result.result))

    @hookimpl
    def harness_agent_end(self, run, final):
        self.seen.append(("end", run.termination.value))


@pytest.mark.hooks(
    "harness_llm_request", "harness_llm_response", "harness_action_executed", "harness_agent_end"
)
def test_the_same_hooks_fire_as_for_the_own_loop():
    seen = _Seen()
    run_example("agents-sdk-chat", plugins=[seen])

    tools = ["get_weather", "get_time"]
    assert seen.seen == [
        ("request", 1, tools),
        ("response", ["get_weather"]),
        ("executed", "get_weather", "18C, cloudy in Paris"),
        ("request", 2, tools),
        ("response", ["get_weather", "get_time"]),
        ("executed", "get_weather", "24C, sunny in Rome"),
        ("executed", "get_time", "14:00 in Rome"),
        ("request", 3, tools),
        ("response", []),
        ("end", "completed"),
    ]


def test_stagnation_stop_refuses_the_request_after_the_repeated_plan():
    result = run_example("stagnation-stop")

    assert result.status == "passed"
    assert result.termination == "stagnation"
    # Four identical plans ran (window 3: the fourth stagnates); request 5 got the 400.
    assert result.llm_calls == 5
    assert [c.status for c in result.tool_calls] == ["ok"] * 4
    assert result.final.data == {
        "stagnation": True,
        "signature": [["get_weather", '{"city":"Paris"}']],
        "window": 3,
    }
    assert result.memory == [
        {
            "kind": "error",
            "content": "Stagnation detected: the same tool plan was requested 4 times in a row",
        }
    ]
    # The report says what happened to a target: its plans ran, its next request was
    # refused (not "the next identical plan was declined", as for harness's own loop).
    assert ending_sentence(result) == (
        "Stagnation: the same plan ran 4 times in a row; the agent's next request was "
        "refused (HTTP 400)"
    )
    page = html.unescape(render_html(build_results([result])))
    assert (
        "the same plan ran again in the 3 iterations below; the agent's next request was "
        "refused (HTTP 400)" in page
    )
    assert "the next identical plan was declined" not in page


@pytest.mark.parametrize(
    ("name", "exception", "llm_calls"),
    [
        ("pydantic-ai-limit", "UsageLimitExceeded", 2),
        ("agents-sdk-max-turns", "MaxTurnsExceeded", 3),
        ("langgraph-limit", "GraphRecursionError", 2),
    ],
)
def test_a_frameworks_own_limit_ends_the_run_at_max_iterations(name, exception, llm_calls):
    result = run_example(name)

    assert result.status == "passed"
    assert result.termination == "max_iterations"
    assert result.llm_calls == llm_calls
    assert result.final.error["type"] == "max_iterations"
    assert result.final.error["exception"] == exception
    # The calls of the last reply never ran: no later request carried their results.
    assert result.tool_calls[-1].status == "not_run"
    assert result.tool_calls[-1].result is None
    # The report says what is known: no request carried those results (the agent may have
    # run them), not that they did not run.
    page = html.unescape(render_html(build_results([result])))
    unseen = sum(1 for c in result.tool_calls if c.status == "not_run")
    assert f"{unseen} result{'' if unseen == 1 else 's'} not seen" in page
    assert " not run · " not in page


def test_a_frameworks_cached_async_client_works_scenario_after_scenario():
    # langchain-openai caches one httpx client per base URL and timeout for the process;
    # each scenario runs on an event loop of its own, so async targets share one loop that
    # outlives them (as an application's does) or the second run's requests fail with
    # "Event loop is closed".
    results = [run_example(name) for name in ("langgraph", "langgraph-limit", "langgraph")]

    assert [r.termination for r in results] == ["completed", "max_iterations", "completed"]
    assert [r.status for r in results] == ["passed"] * 3
    wall = {"wall_time", "wall_clock"}
    assert results[0].model_dump(exclude=wall) == results[2].model_dump(exclude=wall)


def test_an_llm_error_step_ends_the_run_in_llm_error():
    result = run_example("llm-error")

    assert result.termination == "llm_error"
    assert result.final.error == {
        "type": "http_error",
        "message": "The model is overloaded",
        "status": 503,
    }
    assert result.llm_calls == 2
    assert [(c.name, c.status) for c in result.tool_calls] == [("get_weather", "ok")]


def test_the_report_shows_the_observed_tool_calls():
    result = run_example("raw-sync")
    page = render_html(build_results([result]))

    timeline = " ".join(page[page.index('<tbody class="iter">') :].split())
    for call in result.tool_calls:
        args = html.escape(json.dumps(call.arguments)).replace("&quot;", "&#34;")
        shown = (
            f'<span class="cid">{call.id}</span><code class="name">{call.name}</code> '
            f'<span class="cs">ok</span> <pre class="args">{args}</pre>'
            f'<pre class="result">{call.result}</pre>'
        )
        assert " ".join(shown.split()) in timeline
    # The parallel plan is drawn in lanes side by side.
    assert (
        '<div class="lanes"><span title="get_weather">get_weather</span>'
        '<span title="get_time">get_time</span></div>'
    ) in timeline
