"""Streaming through the loop: ``Agent.astream``, ``StreamEvent``s, ``harness_llm_chunk``,
script steps' ``chunks:``, and the OpenAI source streaming live and from a cassette."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from harness import Agent, hookimpl, tool
from harness._errors import HarnessError
from harness._messages import AssistantMessage
from harness.llm import ScriptedLLM
from harness.llm._base import LLMResponse
from harness.llm._chunks import LLMChunk, ToolCallDelta, pieces
from harness.llm._config import LLMConfig, LLMContext
from harness.providers.openai import OpenAILLM
from harness.serve import running_server

OFFLINE = "http://127.0.0.1:9/v1"  # nothing listens: a replay that used the network fails


@pytest.fixture(autouse=True)
def _no_openai_environment(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"72F and sunny in {city}"


TOOLS = [get_weather]

ONE_CALL = [
    {"tool_calls": [{"get_weather": {"city": "SF"}}]},
    {"content": "It is 72F and sunny in SF."},
]
PARALLEL = [
    {
        "content": "Checking both cities.",
        "tool_calls": [{"get_weather": {"city": "SF"}}, {"get_weather": {"city": "LA"}}],
        "usage": {"prompt_tokens": 40, "completion_tokens": 12},
    },
    {"content": "Sunny in both.", "usage": {"prompt_tokens": 80, "completion_tokens": 5}},
]
RATE_LIMITED = [
    {"tool_calls": [{"get_weather": {"city": "SF"}}]},
    {"error": {"status": 429, "message": "Rate limited"}},
]
TIMEOUT = [{"error": "timeout"}]
TRUNCATED = [{"content": "It is 72F and sun", "finish_reason": "length"}]
MALFORMED = [
    {"tool_calls": [{"name": "get_weather", "raw_arguments": '{"city": "SF"'}]},
    {"content": "Sorry."},
]
UNKNOWN_TOOL = [
    {"tool_calls": [{"get_forecast": {"city": "SF"}}], "unknown_tools": True},
    {"content": "No forecast."},
]
STAGNATION = [{"tool_calls": [{"get_weather": {"city": "SF"}}], "repeat": 5}]
EXHAUSTED = [{"tool_calls": [{"get_weather": {"city": "SF"}}]}]
# The quirks real streams have: empty chunks, an id and name resent with every piece of the
# arguments, arguments split mid-token, finish_reason alone, usage alone in the last chunk.
QUIRKS = [
    {
        "tool_calls": [
            {"id": "call_a", "name": "get_weather", "arguments": {"city": "SF"}},
            {"id": "call_b", "name": "get_weather", "arguments": {"city": "LA"}},
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4},
        "chunks": [
            {},
            {"content": ""},
            {"tool_calls": [{"index": 0, "id": "call_a", "name": "get_weather", "arguments": ""}]},
            {
                "tool_calls": [
                    {"index": 0, "id": "call_a", "name": "get_weather", "arguments": '{"ci'}
                ]
            },
            {
                "tool_calls": [
                    {"index": 1, "id": "call_b", "name": "get_weather", "arguments": '{"city"'}
                ]
            },
            {"tool_calls": [{"index": 0, "arguments": 'ty": "SF"}'}]},
            {"tool_calls": [{"index": 1, "arguments": ': "LA"}'}]},
            {"finish_reason": "tool_calls"},
            {"usage": {"prompt_tokens": 9, "completion_tokens": 4}},
        ],
    },
    {
        "content": "Sunny in both.",
        "chunks": [
            {"content": ""},
            {"content": "Sun"},
            {"content": ""},
            {"content": "ny in both."},
        ],
    },
]

SCRIPTS = {
    "one call": ONE_CALL,
    "parallel calls": PARALLEL,
    "llm error": RATE_LIMITED,
    "timeout": TIMEOUT,
    "truncated": TRUNCATED,
    "malformed arguments": MALFORMED,
    "unknown tool": UNKNOWN_TOOL,
    "stagnation": STAGNATION,
    "script exhausted": EXHAUSTED,
    "chunk quirks": QUIRKS,
}


def comparable(result) -> dict:
    return result.model_dump(exclude={"wall_time"})


async def collect(agent: Agent, text: str = "go", **kwargs) -> list:
    return [event async for event in agent.astream(text, **kwargs)]


@pytest.mark.parametrize("planner", ["agentbuilder", "react"])
@pytest.mark.parametrize("name", list(SCRIPTS))
def test_a_streamed_run_gives_the_unstreamed_runs_result(name, planner):
    script = SCRIPTS[name]
    settings = {"planner": planner, "max_iterations": 8}
    plain = Agent(llm=script, tools=TOOLS, **settings).run("go")
    events = asyncio.run(collect(Agent(llm=script, tools=TOOLS, **settings)))

    assert [e.kind for e in events].count("final") == 1 and events[-1].kind == "final"
    assert comparable(events[-1].result) == comparable(plain)
    # The text streamed for each LLM call is the text of that call's reply.
    replies = [m for m in plain.conversation.messages if isinstance(m, AssistantMessage)]
    streamed: dict[int, str] = {}
    for event in events:
        if event.kind == "llm_delta":
            streamed[event.llm_call] = streamed.get(event.llm_call, "") + event.text
    assert streamed == {i: m.content for i, m in enumerate(replies, 1) if m.content}


def test_astream_yields_the_run_as_it_goes():
    events = asyncio.run(collect(Agent(llm=ONE_CALL, tools=TOOLS, max_iterations=6)))

    shown = [
        (e.kind, e.iteration, e.text or (e.tool_call.name if e.tool_call else None)) for e in events
    ]
    assert shown == [
        ("iteration_start", 1, None),
        ("iteration_start", 2, None),
        ("tool_calls", 2, None),
        ("tool_result", 2, "get_weather"),
        ("iteration_start", 3, None),
        ("llm_delta", 3, "It "),
        ("llm_delta", 3, "is "),
        ("llm_delta", 3, "72F "),
        ("llm_delta", 3, "and "),
        ("llm_delta", 3, "sunny "),
        ("llm_delta", 3, "in "),
        ("llm_delta", 3, "SF."),
        ("iteration_start", 4, None),
        ("final", 4, None),
    ]
    assert events[0].max_iterations == 6
    calls, result = events[2], events[3]
    assert [(c.name, c.arguments) for c in calls.tool_calls] == [("get_weather", {"city": "SF"})]
    assert (result.content, result.status, result.is_error) == ("72F and sunny in SF", "ok", False)
    assert events[-1].result.final.content == "It is 72F and sunny in SF."


def test_tool_results_of_a_parallel_plan_come_as_each_call_finishes():
    second_done = asyncio.Event()

    @tool
    async def slow(key: str) -> str:
        """Waits for the fast one."""
        await second_done.wait()
        return f"slow {key}"

    @tool
    async def fast(key: str) -> str:
        """Answers at once."""
        second_done.set()
        return f"fast {key}"

    script = [{"tool_calls": [{"slow": {"key": "a"}}, {"fast": {"key": "b"}}]}, {"content": "ok"}]

    async def main():
        agent = Agent(llm=script, tools=[slow, fast])
        return await asyncio.wait_for(collect(agent), 10)

    events = asyncio.run(main())
    done = [e.tool_call.name for e in events if e.kind == "tool_result"]
    assert done == ["fast", "slow"]
    # The result keeps the model's order.
    assert [r.name for r in events[-1].result.tool_calls] == ["slow", "fast"]


def test_leaving_the_stream_early_cancels_the_run_and_closes_the_source():
    never = asyncio.Event()
    closed = []

    @tool
    async def stuck(key: str) -> str:
        """Never returns."""
        await never.wait()
        return key

    class Closing(ScriptedLLM):
        async def aclose(self) -> None:
            closed.append(True)

    async def main():
        agent = Agent(llm=Closing([{"tool_calls": [{"stuck": {"key": "a"}}]}]), tools=[stuck])
        stream = agent.astream("go")
        async for event in stream:
            if event.kind == "tool_calls":
                break
        await asyncio.wait_for(stream.aclose(), 10)

    asyncio.run(main())
    assert closed == [True]


def test_arguments_stream_in_pieces_and_a_source_that_cannot_stream_still_does():
    seen: list[LLMChunk] = []

    class Recorder:
        @hookimpl
        def harness_llm_chunk(self, run, chunk):
            seen.append(chunk)

    class WholeReplies:  # only complete(): harness cuts its replies into pieces
        def __init__(self) -> None:
            self.inner = ScriptedLLM(PARALLEL)

        async def complete(self, request) -> LLMResponse:
            return await self.inner.complete(request)

    for llm in (ScriptedLLM(PARALLEL), WholeReplies()):
        seen.clear()
        agent = Agent(llm=llm, tools=TOOLS, plugins=[Recorder()])
        events = asyncio.run(collect(agent))
        assert events[-1].result.termination == "completed"
        first_reply = seen[: seen.index(LLMChunk(usage=PARALLEL_USAGE)) + 1]
        text = [c.content for c in first_reply if c.content]
        assert text == pieces("Checking both cities.")
        args = [d.arguments for c in first_reply for d in c.tool_calls if d.index == 1]
        assert args == ["", '{"city":', ' "LA"}']
        assert first_reply[-2:] == [
            LLMChunk(finish_reason="tool_calls"),
            LLMChunk(usage=PARALLEL_USAGE),
        ]


PARALLEL_USAGE = {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52}


class ChunkLog:
    """Every chunk and where it came among the other LLM hooks."""

    def __init__(self) -> None:
        self.log: list = []

    @hookimpl
    def harness_llm_request(self, run, request):
        self.log.append(("request", request.call))

    @hookimpl
    def harness_llm_chunk(self, run, chunk):
        self.log.append(("chunk", run.llm_calls, chunk))

    @hookimpl
    def harness_llm_response(self, run, response):
        self.log.append(("response", run.llm_calls))

    def chunks(self, call: int) -> list[LLMChunk]:
        return [entry[2] for entry in self.log if entry[0] == "chunk" and entry[1] == call]


def scripted_chunks(step: dict) -> list[LLMChunk]:
    out = []
    for chunk in step["chunks"]:
        calls = tuple(ToolCallDelta(**c) for c in chunk.get("tool_calls", []))
        usage = chunk.get("usage")
        if usage is not None:
            usage = {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]}
        out.append(LLMChunk(chunk.get("content"), calls, chunk.get("finish_reason"), usage))
    return out


def test_a_chunk_given_as_a_plain_string_is_a_piece_of_text():
    observer = ChunkLog()
    step = {"content": "Cold in Oslo", "chunks": ["Cold", " in Oslo", {"finish_reason": "stop"}]}
    llm = ScriptedLLM([step], stream=True)
    result = Agent(llm=llm, tools=[], plugins=[observer]).run("go")

    assert result.final.content == "Cold in Oslo"
    assert [c.content for c in observer.chunks(1)] == ["Cold", " in Oslo", None]


@pytest.mark.hooks("harness_llm_chunk")
def test_the_chunk_hook_sees_a_steps_chunks_exactly_between_request_and_response():
    observer = ChunkLog()
    # stream=True: the source always streams, so a plain run streams too (llm.stream: true).
    result = Agent(llm=ScriptedLLM(QUIRKS, stream=True), tools=TOOLS, plugins=[observer]).run("go")

    assert result.termination == "completed"
    assert observer.chunks(1) == scripted_chunks(QUIRKS[0])
    assert observer.chunks(2) == scripted_chunks(QUIRKS[1])
    kinds = [entry[0] for entry in observer.log]
    assert kinds == ["request", *["chunk"] * 9, "response", "request", *["chunk"] * 4, "response"]
    assert [c.id for c in result.tool_calls] == ["call_a", "call_b"]
    assert result.usage == {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}


@pytest.mark.hooks("harness_llm_chunk")
def test_an_unstreamed_run_sends_no_chunks():
    observer = ChunkLog()
    Agent(llm=QUIRKS, tools=TOOLS, plugins=[observer]).run("go")
    assert [entry[0] for entry in observer.log] == ["request", "response"] * 2


# -- chunks that do not add up --------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (
            {"content": "Sunny.", "chunks": [{"content": "Sun"}, {"content": "ny"}]},
            "the chunks' text is 'Sunny' but the step's content is 'Sunny.'",
        ),
        (
            {
                "tool_calls": [{"get_weather": {"city": "SF"}}],
                "chunks": [
                    {"tool_calls": [{"index": 0, "name": "get_weather", "arguments": '{"city": '}]},
                    {"tool_calls": [{"index": 0, "arguments": '"LA"}'}]},
                ],
            },
            "tool call 0 (get_weather): the chunks' arguments {'city': 'LA'} are not the "
            "step's {'city': 'SF'}",
        ),
        (
            {
                "tool_calls": [{"get_weather": {"city": "SF"}}, {"get_weather": {"city": "LA"}}],
                "chunks": [
                    {"tool_calls": [{"index": 0, "name": "get_weather", "arguments": "{}"}]},
                ],
            },
            "the chunks make 1 tool call(s) but the step has 2",
        ),
        (
            {
                "tool_calls": [{"get_weather": {"city": "SF"}}],
                "chunks": [
                    {"tool_calls": [{"index": 0, "name": "get_weather", "arguments": '{"c'}]}
                ],
            },
            "is not a JSON object; to script malformed arguments, give the step `raw_arguments`",
        ),
        (
            {
                "tool_calls": [{"get_weather": {}}],
                "chunks": [{"tool_calls": [{"index": 0, "id": "call_x", "name": "get_weather"}]}],
            },
            "the chunks give it id 'call_x': give the step's call `id: call_x` too",
        ),
        (
            {"content": "hi", "usage": {"prompt_tokens": 1}, "chunks": [{"content": "hi"}]},
            "the step's usage never arrives: give it in a chunk",
        ),
        (
            {"content": "hi", "chunks": [{"content": "hi"}, {"usage": {"prompt_tokens": 1}}]},
            "a chunk gives usage but the step has none",
        ),
        (
            {"content": "hi", "finish_reason": "length", "chunks": [{"content": "hi"}]},
            "the step's finish_reason 'length' never arrives",
        ),
        (
            {"content": "hi", "chunks": [{"content": "hi", "finish_reason": "length"}]},
            "the chunks' finish_reason is 'length' but the step's is 'stop'",
        ),
        ({"error": "timeout", "chunks": []}, "an error step has no chunks"),
    ],
)
def test_chunks_that_do_not_add_up_to_the_step_are_refused(step, message):
    with pytest.raises(HarnessError) as raised:
        ScriptedLLM([step])
    assert "script step 1: chunks:" in str(raised.value)
    assert message in str(raised.value)


BAD_FILE = """\
name: bad-chunks
input: hi
tools:
  get_weather: {parameters: {city: str}, returns: sunny}
llm:
  stream: true
  script:
    - tool_calls: [{get_weather: {city: SF}}]
      chunks:
        - tool_calls: [{index: 0, name: get_weather, arguments: '{"city": '}]
        - tool_calls: [{index: 0, arguments: '"LA"}'}]
    - content: Sunny.
      chunks:
        - {content: Sun}
        - {content: ny}
        - {content: 3}
"""


def test_a_scenario_whose_chunks_do_not_add_up_is_invalid_with_lines(tmp_path, capsys):
    from harness.cli import main

    path = tmp_path / "bad.scenario.yaml"
    path.write_text(BAD_FILE)
    code = main(["validate", str(path)])
    out, err = capsys.readouterr()
    assert code == 2
    lines = [line for line in out.splitlines() if "bad.scenario.yaml:" in line]
    assert [line.split(": ", 2)[0].rsplit(":", 1)[1] for line in lines] == ["9", "16"]
    assert "llm.script.0.chunks: tool call 0 (get_weather): the chunks' arguments" in lines[0]
    assert "llm.script.1.chunks.2.content: expected a valid string" in lines[1]
    assert "Traceback" not in out + err


# -- the OpenAI source: live against harness serve, and from a cassette ----------------------


def openai_llm(cassette: Path | None, mode: str, base_url: str, **config) -> OpenAILLM:
    llm_config = LLMConfig(
        provider="openai",
        model="gpt-4o-mini",
        cassette=str(cassette) if cassette else None,
        base_url=base_url,
        **config,
    )
    context = LLMContext(
        scenario_id="tests/stream.scenario.yaml::stream",
        record_mode=mode,
        disable_recording=cassette is None,
    )
    return OpenAILLM(llm_config.with_context(context))


@pytest.mark.hooks("harness_llm_chunk")
def test_the_openai_source_streams_a_served_steps_chunks_exactly_live():
    observer = ChunkLog()
    with running_server(QUIRKS) as url:
        llm = openai_llm(None, "none", url, stream=True)
        events = asyncio.run(collect(Agent(llm=llm, tools=TOOLS, plugins=[observer])))

    assert observer.chunks(1) == scripted_chunks(QUIRKS[0])
    assert observer.chunks(2) == scripted_chunks(QUIRKS[1])
    assert [e.text for e in events if e.kind == "llm_delta"] == ["Sun", "ny in both."]
    # The same result as the script run unstreamed in-process.
    assert comparable(events[-1].result) == comparable(Agent(llm=QUIRKS, tools=TOOLS).run("go"))


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_streamed_recording_replays_the_same_stream_offline(tmp_path, api):
    cassette = tmp_path / "stream.yaml"
    recorded_log, replayed_log = ChunkLog(), ChunkLog()
    with running_server(PARALLEL) as url:
        llm = openai_llm(cassette, "once", url, stream=True, api=api)
        recorded = asyncio.run(collect(Agent(llm=llm, tools=TOOLS, plugins=[recorded_log])))
    llm = openai_llm(cassette, "none", OFFLINE, stream=True, api=api)
    replayed = asyncio.run(collect(Agent(llm=llm, tools=TOOLS, plugins=[replayed_log])))

    assert replayed[-1].result.termination == "completed"
    assert comparable(replayed[-1].result) == comparable(recorded[-1].result)
    assert replayed_log.log == recorded_log.log
    deltas = [(e.llm_call, e.text) for e in replayed if e.kind == "llm_delta"]
    assert deltas == [(1, p) for p in pieces("Checking both cities.")] + [
        (2, p) for p in pieces("Sunny in both.")
    ]
    # The same run as the script unstreamed in-process (ids, usage, records, conversation).
    assert comparable(replayed[-1].result) == comparable(Agent(llm=PARALLEL, tools=TOOLS).run("go"))


def test_an_unstreamed_openai_source_streams_its_whole_replies_in_pieces(tmp_path):
    cassette = tmp_path / "plain.yaml"
    with running_server(PARALLEL) as url:
        llm = openai_llm(cassette, "once", url)
        events = asyncio.run(collect(Agent(llm=llm, tools=TOOLS)))
    request = yaml.safe_load(cassette.read_text())["interactions"][0]["request"]
    body = request["parsed_body"]
    assert "stream" not in body
    assert "".join(e.text for e in events if e.kind == "llm_delta" and e.llm_call == 2) == (
        "Sunny in both."
    )


@pytest.mark.hooks("harness_llm_chunk")
def test_the_example_scenario_streams_its_steps_chunks():
    from harness._plugins import default_plugins
    from harness.scenario._loader import build_tools, load_scenario

    root = Path(__file__).resolve().parent.parent
    scenario = load_scenario(root / "scenarios" / "core" / "streamed-reply.scenario.yaml")
    llm = default_plugins().llm_factory(scenario.llm.provider)(scenario.llm)
    observer = ChunkLog()
    tools = list(build_tools(scenario).values())
    result = Agent(llm=llm, tools=tools, plugins=[observer]).run(scenario.input)

    assert result.termination == "completed"
    first = [step.as_chunk() for step in scenario.llm.script[0].chunks]
    assert observer.chunks(1) == first
    assert "".join(c.content or "" for c in observer.chunks(2)) == result.final.content
    unstreamed = ScriptedLLM(scenario.llm.script)
    tools = list(build_tools(scenario).values())
    assert comparable(result) == comparable(Agent(llm=unstreamed, tools=tools).run(scenario.input))
