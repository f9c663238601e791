"""Every cassette other projects recorded (tests/fixtures/foreign-cassettes/) through
`harness freeze`: it freezes into a scenario that passes as written, or is refused in one
line that names the real cause and a remedy, and the remedy works.

The recordings are real: simonw/llm, pydantic-ai, the Agents SDK under openllmetry and
logfire, crewAI, chatlas, OpenTelemetry's OpenAI instrumentation, LangChain under
dd-trace-py; Chat Completions and the Responses API, streamed and not, gzip bodies,
parallel calls over both APIs, handoffs, chained responses, an output tool, vcrpy's older
httpx layout. README.md there names their sources. Damaged copies of them (a stream cut
off, a body that is not JSON, a request contradicting its reply, the last answer removed)
are made in the tests: each is refused in one line naming its cause.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from harness._modelwires import wire_for
from harness.cassettes._format import load_cassette_file
from harness.cassettes._matching import parse_json_body
from harness.cli import main
from harness.scenario import run_scenario
from harness.wires import read_answer

FOREIGN = Path(__file__).parent / "fixtures" / "foreign-cassettes"


def freeze_main(argv: list[str]) -> int:
    """``harness freeze ARGV...``, in this process."""
    return main(["freeze", *argv])


def _agno_answer() -> str:
    """The answer of agno's recording (long), read from its uncompressed version."""
    interactions = load_cassette_file(FOREIGN / "agno-chat-failing-tool.yaml")
    return json.loads(interactions[1].response["body"]["string"])["choices"][0]["message"][
        "content"
    ]


# name -> the final answer and the tool calls of the frozen run, in order.
PASSES = {
    # agno: a failing tool's error text as its result; agno's own telemetry POST left out.
    "agno-chat-failing-tool.yaml": (_agno_answer(), ["unreliable_search"]),
    # The same run with brotli-compressed response bodies (`Content-Encoding: br`).
    "agno-chat-failing-tool-brotli.yaml": (_agno_answer(), ["unreliable_search"]),
    # Gemini: calls without ids (pydantic-ai gives them its own), a tool's error sent back
    # as {"error": ...}, thought signatures; whole and streamed.
    "pydantic-ai-test_google_model_retry.yaml": (
        "The capital of France is Paris.",
        ["get_capital", "get_capital"],
    ),
    "pydantic-ai-test_google_streaming_tool_call_thought_signature.yaml": (
        "The capital of Mexico is Mexico City.",
        ["get_country"],
    ),
    "llm-test_openai_responses-test_responses_tool_use.yaml": (
        "1231 * 2331 = 2,869,461",
        ["multiply"],
    ),
    "llm-test_tools-test_tool_use_basic.yaml": (
        "The result of \\( 1231 \\times 2331 \\) is \\( 2,869,461 \\).",
        ["multiply"],
    ),
    "llm-test_tools-test_tool_use_chain_of_two_calls.yaml": (
        "YES",
        ["lookup_population", "can_have_dragons"],
    ),
    "llm-test_tools_streaming-test_tools_streaming_variant_a.yaml": (
        "The current version of *llm* is **0.fixed-version**.",
        ["llm_version"],
    ),
    # Agents SDK handoffs: the next agent's instructions and (no) tools on request 2.
    "openllmetry-test_agent_with_handoff_spans.yaml": (
        "Task has been delegated to Agent A. Agent A will handle the request. If you have "
        "more instructions or need an update on the task's progress, please let me know!",
        ["transfer_to_agenta"],
    ),
    "logfire-test_openai_agents-test_responses.yaml": (
        "The random number generated is 4, and it's been handed off to agent2.",
        ["random_number", "transfer_to_agent2"],
    ),
    # Chained on a server-side conversation, between a create and a delete of it.
    "pydantic-ai-test_openai_conversation_id_tool_call_continuation.yaml": (
        "TOOL-PAI-5222",
        ["get_conversation_code"],
    ),
    # Chained with previous_response_id: the second turn, with the first as history.
    "pydantic-ai-test_openai_previous_response_id.yaml": ('The secret code is "sesame."', []),
    # Three parallel calls in one Chat Completions reply (crewAI's native tool calling).
    "crewai-test_openai_parallel_native_tool_calling_test_agent_kickoff.yaml": (
        "The latest release notes for OpenAI, Anthropic, and Gemini models highlight "
        "significant updates and improvements in each respective technology. OpenAI's notes "
        "detail new features and optimizations that enhance user interaction and performance. "
        "Anthropic's release emphasizes their focus on safety and alignment in AI development, "
        "showcasing advancements in responsible AI practices. Gemini's notes underline their "
        "innovative approaches and cutting-edge functionalities designed to push the "
        "boundaries of current AI capabilities.",
        ["parallel_local_search_one", "parallel_local_search_two", "parallel_local_search_three"],
    ),
    # Two parallel calls to one tool; bodies pretty-printed by the project's serializer,
    # the second request without tools.
    "opentelemetry-python-contrib-test_chat_completion_tool_calls_with_content.yaml": (
        "Today, the weather in Seattle is 50 degrees and raining, while in San Francisco, "
        "it's 70 degrees and sunny.",
        ["get_current_weather", "get_current_weather"],
    ),
    # The Anthropic Messages API (pydantic-ai's AnthropicModel): four parallel tool_use
    # blocks in one message; a streamed run of Anthropic's own text editor tool (no schema
    # in the request); thinking blocks sent back signed before a tool_result.
    "pydantic-ai-test_anthropic_multiple_parallel_tool_calls.yaml": (
        "Based on the retrieved information, we can see the family relationships:\n"
        "- Alice and Bob are married\n- Charlie is their son\n"
        "- Daisy is their daughter and Charlie's younger sister\n\n"
        "Therefore, Daisy is the youngest in the family. She is described as Charlie's "
        "younger sister, which indicates she is the youngest among the four family members.",
        ["retrieve_entity_info"] * 4,
    ),
    "pydantic-ai-test_anthropic_text_editor_toolset_stream.yaml": (
        "The file `/tmp/example.py` contains a single line of Python code:\n\n"
        '```python\nprint("hello world")\n```\n\n'
        'It\'s a simple script that prints **"hello world"** to the console.',
        ["str_replace_based_edit_tool"],
    ),
    "pydantic-ai-test_anthropic_tool_with_thinking.yaml": (
        "Based on the information that you're from Mexico, the largest city in your country "
        "is **Mexico City** (Ciudad de México). \n\nMexico City is not only the largest city in "
        "Mexico but also one of the largest metropolitan areas in the world. The city proper "
        "has a population of approximately 9.2 million people, while the greater Mexico City "
        "metropolitan area (which includes surrounding municipalities) has over 21 million "
        "inhabitants, making it one of the most populous urban agglomerations globally.\n\n"
        "Mexico City serves as the country's capital and is the political, economic, and "
        "cultural center of Mexico.",
        ["get_user_country"],
    ),
    # simonw/llm's llm-anthropic: two parallel tool_use blocks, sent back with a " " text
    # block in front of them (set aside: the frozen run sends none).
    "llm-anthropic-test_tools.yaml": (
        "Here are two great names for your pet pelican:\n\n1. **Charles** - A sophisticated "
        "and dignified name, perfect for a pelican with personality!\n2. **Sammy** - A "
        "friendly and playful name that gives off warm, approachable vibes.\n\nEither of these "
        "would make an excellent name for your feathered friend! \U0001f985",
        ["pelican_name_generator", "pelican_name_generator"],
    ),
    # simonw/llm-gemini: streamGenerateContent without alt=sse (a JSON array of chunks),
    # thoughts, two calls in two replies, the ids the client made for them sent back.
    "llm-gemini-test_tools.yaml": (
        "How about Charles and Sammy?",
        ["pelican_name_generator", "pelican_name_generator"],
    ),
    # One agent run on each vendor: Gemini, then Chat Completions with the Gemini run as
    # its history (the last run is frozen, the other run's requests listed as left out).
    "pydantic-ai-test_openai_multiple_agent_tool_calls.yaml": (
        "The capital of England is London.",
        ["get_capital"],
    ),
    # The Responses API's own web_search tool offered (and used within the reply): a
    # scenario cannot offer it, so it is set aside with a note.
    "pydantic-ai-test_openai_responses_model_web_search_tool_without_external_access.yaml": (
        "1889 ([toureiffel.paris](https://www.toureiffel.paris/en/news/history-and-culture/"
        "133-years-and-1083-feet?utm_source=openai))",
        [],
    ),
    # The Responses API streamed, two parallel calls, the client's own call ids sent back.
    "chatlas-test_chat_callbacks.yaml": (
        "Joe's favorite color is red, and Hadley's favorite color is red.",
        ["test_tool", "test_tool"],
    ),
}

# name -> (what the one-line refusal says, the remedy as a scenario's agent section or None).
REFUSED = {
    # llm-anthropic's prefill: the request ends with the assistant's start of an answer.
    "llm-anthropic-test_prompt_with_prefill_and_stop_sequences.yaml": (
        "interaction 1: the run's first request ends with an assistant message (a prefill the "
        "model goes on from), and a scenario's input is a user's text: cannot freeze it",
        None,
    ),
    "pydantic-ai-test_openai_previous_response_id_auto_mode.yaml": (
        "interaction 1 continues response resp_68b9bda81f5c8197a5a51a20a9f4150a000497db2a4c777b "
        "(previous_response_id), which the cassette does not hold: the conversation before it "
        "was not recorded, so no scenario can replay it; record the run from its first request",
        None,
    ),
}

NOTES = {
    "pydantic-ai-test_openai_responses_model_web_search_tool_without_external_access.yaml": [
        "the recording offers tools the API runs itself (web_search), which a scenario cannot "
        "offer: set aside, not compared"
    ],
    "llm-anthropic-test_tools.yaml": [
        "the recording's client sent model turns back with a blank text the frozen run does "
        'not send (interaction 2; llm-anthropic puts a " " text block in front of tool_use '
        "blocks): set aside, not compared"
    ],
    "pydantic-ai-test_openai_multiple_agent_tool_calls.yaml": [
        "holds 2 runs (run 1: interactions 1-2, Gemini API; run 2: interactions 3-4, Chat "
        "Completions): froze run 2, the last recorded; the other runs' requests are left out; "
        "--run N picks another"
    ],
    "pydantic-ai-test_google_model_retry.yaml": [
        "the recording's client sent back call ids of its own "
        "(pyd_ai_2b1b70a1b6c14e179d3cbf64d2370617 for call_0_get_capital;"
    ],
    "chatlas-test_chat_callbacks.yaml": [
        "the recording's client sent back call ids of its own (fc_0ac6a4d9e19151d50169fb7cb76ccc"
        "81939c747589e4dddeb4 for call_34p5hj7tG0wChdmQiqYeVrby;",
    ],
    "opentelemetry-python-contrib-test_chat_completion_tool_calls_with_content.yaml": [
        "the recording offers different tools on different requests (request 1: "
        "get_current_weather; request 2: none)",
    ],
    "openllmetry-test_agent_with_handoff_spans.yaml": [
        "the system text changes at request 2 of the recording ('You decide which agent to "
        "handoff to.' -> 'Agent A does something.')",
        "the recording offers different tools on different requests (request 1: "
        "handoff_to_agent_a, handoff_to_agent_b, transfer_to_agenta, transfer_to_agentb; "
        "request 2: none)",
    ],
    "pydantic-ai-test_openai_conversation_id_tool_call_continuation.yaml": [
        "left out interactions 1 (POST /v1/conversations), 4 (DELETE /v1/conversations/conv_",
        "compared on the whole conversation rebuilt from the recorded responses",
    ],
}


# Recordings that end on a call no later request answers (an output tool): the frozen
# scenario marks that tool ends_run, and its run ends there, completed, with the call's
# arguments as final.data.output -> (tool, the output's keys).
OUTPUT_TOOL = {
    "pydantic-ai-test_openai_responses_output_type.yaml": ("final_result", ["age", "name"]),
    # LangChain's bind_tools: one request, and the run is the model's call (vcrpy's older
    # httpx layout: status_code, http_version and content).
    "dd-trace-py-test_lcel_with_tools_openai.yaml": ("add", ["a", "b"]),
}


def test_every_foreign_cassette_has_an_outcome():
    names = sorted(p.name for p in FOREIGN.glob("*.yaml"))
    assert names == sorted({*PASSES, *REFUSED, *OUTPUT_TOOL})
    projects = {name.split("-test")[0] for name in names}
    assert len(names) >= 10 and len(projects) >= 4


def _traits(path: Path) -> set[str]:
    """What a cassette's recording holds, read from the file itself."""
    raw = yaml.safe_load(path.read_text())["interactions"]
    traits = set()
    for entry in raw:
        response = entry["response"]
        if "status_code" in response:
            traits.add("vcrpy's older httpx layout")
        if isinstance((response.get("body") or {}).get("string"), bytes):
            traits.add("gzip bodies")
    for interaction in load_cassette_file(path):
        wire = wire_for(interaction.request["uri"].split("?")[0])
        if wire is None or interaction.request["uri"].endswith("/count_tokens"):
            continue
        api = wire.api
        body = interaction.request_json or parse_json_body(interaction.request["body"])
        if isinstance(body, dict) and body.get("previous_response_id"):
            traits.add("a previous_response_id chain")
        answer = interaction.response["body"]["string"] or b""
        streamed = answer.lstrip().startswith((b"data:", b"event:"))
        traits.add(f"{api}{' streamed' if streamed else ''}")
        reply = read_answer(wire, answer)
        if reply is not None and len(reply.tool_calls) > 1:
            traits.add(f"{api} parallel calls")
    return traits


def test_the_corpus_holds_every_kind_of_recording_the_issue_names():
    found = set().union(*(_traits(p) for p in FOREIGN.glob("*.yaml")))
    assert found >= {
        "chat",
        "chat streamed",
        "responses",
        "responses streamed",
        "chat parallel calls",
        "responses parallel calls",
        "a previous_response_id chain",
        "messages",
        "messages streamed",
        "messages parallel calls",
        "gzip bodies",
        "vcrpy's older httpx layout",
    }, found


@pytest.fixture(autouse=True)
def _no_openai_environment(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


_SECRET_HEADERS = re.compile(
    r"(?i)^(cookie|set-cookie|openai-organization|openai-project|anthropic-organization-id)$"
)


def _secrets(path: Path) -> list[str]:
    """The values of a cassette's secret headers (at least 8 characters, to be telling)."""
    found = []
    for entry in yaml.safe_load(path.read_text())["interactions"]:
        for side in (entry["request"], entry["response"]):
            for name, values in (side.get("headers") or {}).items():
                if _SECRET_HEADERS.match(name):
                    values = values if isinstance(values, list) else [values]
                    found.extend(v for v in map(str, values) if len(v) >= 8)
    return found


@pytest.mark.parametrize("name", sorted(PASSES))
def test_a_foreign_cassette_freezes_into_a_scenario_that_passes(tmp_path, capsys, name):
    answer, calls = PASSES[name]
    out = tmp_path / "frozen.scenario.yaml"
    assert freeze_main([str(FOREIGN / name), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    for note in NOTES.get(name, []):
        assert note in err
    # Cookies, organization and project ids the recording kept reach neither the frozen
    # scenario nor what freeze printed.
    for secret in _secrets(FOREIGN / name):
        assert secret not in out.read_text() and secret not in err, secret
    result = run_scenario(out)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert result.final.content == answer
    assert [c.name for c in result.tool_calls] == calls
    scenario = yaml.safe_load(out.read_text())
    assert scenario["expect"]["final"]["equals"] == answer


def test_each_run_of_a_two_vendor_recording_freezes_and_passes(tmp_path, capsys):
    # pydantic-ai ran one agent on Gemini, then on Chat Completions with the first run as
    # its message history: --run 1 is the Gemini run (its `tools` one object, not a list).
    name = "pydantic-ai-test_openai_multiple_agent_tool_calls.yaml"
    out = tmp_path / "gemini.scenario.yaml"
    assert freeze_main([str(FOREIGN / name), "--run", "1", "-o", str(out)]) == 0
    assert "froze run 1, as asked; the other runs' requests are left out" in capsys.readouterr().err
    scenario = yaml.safe_load(out.read_text())
    assert scenario["input"] == "What is the capital of France?"
    assert scenario["tools"]["get_capital"]["results"] == [{"on_call": 1, "returns": "Paris"}]
    result = run_scenario(out)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert result.final.content == "The capital of France is Paris.\n"
    # Run 2 carries run 1 as its history, under the ids pydantic-ai made up for Gemini's
    # calls: the Gemini run is not taken for the start of run 2.
    out = tmp_path / "openai.scenario.yaml"
    assert freeze_main([str(FOREIGN / name), "-o", str(out)]) == 0
    history = yaml.safe_load(out.read_text())["history"]
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[1]["tool_calls"][0]["id"] == "pyd_ai_504f8147f83f44f3a5f14d87bfd01bda"


def test_thinking_blocks_freeze_into_the_steps_reasoning(tmp_path):
    out = tmp_path / "frozen.scenario.yaml"
    name = "pydantic-ai-test_anthropic_tool_with_thinking.yaml"
    assert freeze_main([str(FOREIGN / name), "-o", str(out)]) == 0
    steps = yaml.safe_load(out.read_text())["llm"]["script"]
    assert steps[0]["reasoning"].startswith(
        'The user is asking about the largest city in "the user country".'
    )
    assert steps[0]["reasoning"].endswith("Let me call the get_user_country function first.")
    assert steps[0]["tool_calls"][0]["name"] == "get_user_country"


@pytest.mark.parametrize("name", sorted(OUTPUT_TOOL))
def test_a_recording_that_ends_on_an_output_tool_freezes_into_a_run_that_ends_there(
    tmp_path, capsys, name
):
    tool, keys = OUTPUT_TOOL[name]
    out = tmp_path / "frozen.scenario.yaml"
    assert freeze_main([str(FOREIGN / name), "-o", str(out)]) == 0
    assert "the frozen scenario marks it ends_run: true" in capsys.readouterr().err
    scenario = yaml.safe_load(out.read_text())
    assert scenario["tools"][tool]["ends_run"] is True
    result = run_scenario(out)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert result.termination == "completed"
    assert result.final.data["output_tool"] == tool
    assert sorted(result.final.data["output"]) == keys
    assert scenario["expect"]["final"]["data"] == result.final.data
    # The recorded reply was the last: no request after the output tool's call.
    assert result.llm_calls == len(scenario["llm"]["script"])


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_foreign_cassette_that_cannot_be_frozen_is_refused_in_one_line(tmp_path, capsys, name):
    says, remedy = REFUSED[name]
    out = tmp_path / "frozen.scenario.yaml"
    cassette = FOREIGN / name
    assert freeze_main([str(cassette), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err
    assert "re-record" not in err
    assert not out.exists()
    if remedy is None:
        return
    # The remedy the line names works.
    assert f"max_iterations: {remedy['max_iterations']}" in err
    settings = tmp_path / "settings.scenario.yaml"
    settings.write_text(
        yaml.safe_dump({"input": "-", "agent": remedy, "llm": {"script": [{"content": "-"}]}})
    )
    assert freeze_main([str(cassette), "--scenario", str(settings), "-o", str(out)]) == 0
    result = run_scenario(out)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert result.llm_calls == 1


def test_the_chained_run_is_frozen_with_the_chain_as_history(tmp_path):
    out = tmp_path / "frozen.scenario.yaml"
    name = "pydantic-ai-test_openai_previous_response_id.yaml"
    assert freeze_main([str(FOREIGN / name), "-o", str(out)]) == 0
    scenario = yaml.safe_load(out.read_text())
    assert scenario["input"] == "What is the secret code?"
    assert [m["role"] for m in scenario["history"]] == ["user", "assistant"]
    assert scenario["history"][0]["content"] == "The secret key is sesame"
    # Run 1 (the first turn) freezes too.
    assert freeze_main([str(FOREIGN / name), "--run", "1", "-o", str(out)]) == 0
    assert run_scenario(out).status == "passed"


def test_a_handoff_stays_one_run_with_every_agents_tools(tmp_path):
    out = tmp_path / "frozen.scenario.yaml"
    name = "logfire-test_openai_agents-test_responses.yaml"
    assert freeze_main([str(FOREIGN / name), "-o", str(out)]) == 0
    scenario = yaml.safe_load(out.read_text())
    assert sorted(scenario["tools"]) == ["random_number", "transfer_to_agent2"]
    assert scenario["tools"]["transfer_to_agent2"]["results"] == [
        {"on_call": 1, "returns": "{'assistant': 'agent2'}"}
    ]
    # The two calls came in one reply: the frozen run keeps them parallel.
    assert scenario["expect"]["parallel_groups"] == [["random_number", "transfer_to_agent2"]]


def test_paths_in_messages_are_normalized(tmp_path, capsys):
    name = "pydantic-ai-test_openai_previous_response_id_auto_mode.yaml"
    roundabout = FOREIGN / ".." / "foreign-cassettes" / "." / name
    assert freeze_main([str(roundabout)]) == 2
    err = capsys.readouterr().err
    assert str(FOREIGN / name) in err and "/../" not in err and "/./" not in err


# -- damaged recordings, made from the corpus's own ------------------------------------------


def _damaged(tmp_path: Path, name: str, edit) -> Path:
    """A copy of the corpus cassette ``name`` whose interactions ``edit`` changed."""
    data = yaml.safe_load((FOREIGN / name).read_text())
    edit(data["interactions"])
    path = tmp_path / f"damaged-{name}"
    path.write_text(yaml.safe_dump(data, sort_keys=False, width=100))
    return path


def _cut(interactions, number: int, fraction: float) -> None:
    """Interaction ``number``'s response body cut off at ``fraction`` of its length."""
    body = interactions[number - 1]["response"]["body"]
    body["string"] = body["string"][: int(len(body["string"]) * fraction)]


def _refusal(capsys, cassette: Path, tmp_path: Path) -> tuple[str, str]:
    """freeze's one-line refusal, and the line of the cassette it names (nothing written)."""
    out = tmp_path / "frozen.scenario.yaml"
    assert freeze_main([str(cassette), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert not out.exists()
    found = re.match(rf"harness freeze: {re.escape(str(cassette))}:(\d+): ", err)
    assert found is not None, err
    return err, cassette.read_text().splitlines()[int(found.group(1)) - 1]


CUT_STREAMS = {
    # simonw/llm, Chat Completions streamed: the last reply (the answer) or the first.
    ("llm-test_tools-test_tool_use_basic.yaml", 2): "no finish_reason and no [DONE]",
    ("llm-test_tools-test_tool_use_basic.yaml", 1): "no finish_reason and no [DONE]",
    # chatlas, the Responses API streamed: cut at two thirds.
    ("chatlas-test_chat_callbacks.yaml", 2): "no response.completed, response.incomplete or "
    "response.failed event",
    ("chatlas-test_chat_callbacks.yaml", 1): "no response.completed, response.incomplete or "
    "response.failed event",
}


@pytest.mark.parametrize(("name", "number"), sorted(CUT_STREAMS))
def test_a_cut_off_stream_is_refused_naming_the_interaction_and_the_cause(
    tmp_path, capsys, name, number
):
    cassette = _damaged(tmp_path, name, lambda interactions: _cut(interactions, number, 2 / 3))
    err, line = _refusal(capsys, cassette, tmp_path)
    assert f": interaction {number}: the streamed response is cut off (" in err
    assert CUT_STREAMS[name, number] in err
    assert "use a recording whose streams ran to their end" in err
    # Not blamed on a missing --scenario or on the client.
    assert "--scenario" not in err and "client" not in err
    assert "string:" in line  # the line of the cut body


def test_a_stream_cut_between_two_events_is_refused_too(tmp_path, capsys):
    # No half line to notice: only its missing end tells.
    def edit(interactions):
        body = interactions[1]["response"]["body"]
        ending = body["string"].index('"finish_reason":"stop"')
        body["string"] = body["string"][: body["string"].rindex("data:", 0, ending)]

    cassette = _damaged(tmp_path, "llm-test_tools-test_tool_use_basic.yaml", edit)
    err, _ = _refusal(capsys, cassette, tmp_path)
    assert "interaction 2: the streamed response is cut off (no finish_reason and no [DONE])" in err


def test_every_stream_of_the_corpus_ran_to_its_end():
    # The rule a cut-off stream breaks, checked against real ones: OpenAI's (finish_reason
    # and [DONE]), an OpenAI-compatible provider's ([DONE] and no finish_reason on a reply
    # of calls), the Responses API's (response.completed), Anthropic's (message_stop),
    # Gemini's (a finishReason).
    streams = 0
    for path in FOREIGN.glob("*.yaml"):
        for interaction in load_cassette_file(path):
            uri, answer = interaction.request["uri"], interaction.response["body"]["string"]
            if not answer.lstrip().startswith((b"data:", b"event:")):
                continue
            wire = wire_for(urlparse(uri).path)
            assert wire is not None, uri
            reply = read_answer(wire, answer)
            assert reply is not None and reply.cut_off is None and reply.not_json is None
            streams += 1
    assert streams >= 6


def test_a_last_reply_of_parallel_calls_freezes_into_a_run_its_iteration_limit_ends(
    tmp_path, capsys
):
    # crewAI's three parallel calls, and the answer after them removed: an output tool is
    # one call, so freeze ends the frozen run by its iteration limit, and says so.
    name = "crewai-test_openai_parallel_native_tool_calling_test_agent_kickoff.yaml"
    cassette = _damaged(tmp_path, name, lambda interactions: interactions.pop())
    out = tmp_path / "frozen.scenario.yaml"
    assert freeze_main([str(cassette), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert (
        "the recording ends on 3 call(s) (to parallel_local_search_one, "
        "parallel_local_search_two, parallel_local_search_three) that no later request "
        "answers: its client stopped the run there, so the frozen scenario says "
        "agent.max_iterations: 2 (two iterations per recorded reply)"
    ) in err
    scenario = yaml.safe_load(out.read_text())
    assert scenario["agent"]["max_iterations"] == 2
    assert not any(spec.get("ends_run") for spec in scenario["tools"].values())
    result = run_scenario(out)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert result.termination == "max_iterations"
    assert result.llm_calls == 1 and len(result.tool_calls) == 3


def test_a_last_call_to_a_tool_the_request_never_offered_ends_at_the_limit(tmp_path, capsys):
    # dd-trace-py's one-request recording, its request without the tools: the model called
    # `add` though nothing offered it. No output tool: the client stopped on the made-up call.
    name = "dd-trace-py-test_lcel_with_tools_openai.yaml"

    def unoffered(interactions):
        request = interactions[0]["request"]
        body = json.loads(request["body"])
        del body["tools"]
        request["body"] = json.dumps(body)

    cassette = _damaged(tmp_path, name, unoffered)
    out = tmp_path / "frozen.scenario.yaml"
    assert freeze_main([str(cassette), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert (
        "the recording ends on 1 call(s) (to add; its request never offered add: the model "
        "made the call up) that no later request answers"
    ) in err
    assert "output tool" not in err
    result = run_scenario(out)
    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert result.termination == "max_iterations"


def _set_request_body(number: int, edit):
    def apply(interactions):
        request = interactions[number - 1]["request"]
        request["body"] = edit(request["body"])

    return apply


def test_a_request_body_that_is_not_json_is_refused_with_the_json_error(tmp_path, capsys):
    name = "crewai-test_openai_parallel_native_tool_calling_test_agent_kickoff.yaml"
    # A comma lost in an edit.
    edit = _set_request_body(2, lambda body: body.replace('"role":"tool",', '"role":"tool"', 1))
    err, line = _refusal(capsys, _damaged(tmp_path, name, edit), tmp_path)
    assert "interaction 2: the request body is not valid JSON (Expecting ',' delimiter: " in err
    assert "of the body): the cassette was edited or damaged; restore the body" in err
    assert line.lstrip().startswith("body:")


def test_a_response_body_that_is_neither_json_nor_a_stream_is_refused_with_a_remedy(
    tmp_path, capsys
):
    name = "crewai-test_openai_parallel_native_tool_calling_test_agent_kickoff.yaml"

    def edit(interactions):
        body = interactions[0]["response"]["body"]
        body["string"] = body["string"].replace('"object"', "object", 1)

    err, line = _refusal(capsys, _damaged(tmp_path, name, edit), tmp_path)
    assert "interaction 1: the response body is neither JSON (Expecting property name" in err
    assert "nor Server-Sent Events: the cassette was edited or damaged; restore the body" in err
    assert line.lstrip().startswith("string:")


def test_a_request_sending_back_a_call_under_another_tool_name_is_a_contradiction(tmp_path, capsys):
    name = "crewai-test_openai_parallel_native_tool_calling_test_agent_kickoff.yaml"
    renamed = '"name":"parallel_local_search_one_v2","arguments"'
    edit = _set_request_body(
        2, lambda body: body.replace('"name":"parallel_local_search_one","arguments"', renamed)
    )
    out = tmp_path / "frozen.scenario.yaml"
    assert freeze_main([str(_damaged(tmp_path, name, edit)), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not out.exists(), err
    assert (
        "request 2 (interaction 2): the cassette contradicts itself: the reply to request 1 "
        "(interaction 1) calls parallel_local_search_one under id call_kz1qLLRsugXwWiQMeH9oFAep, "
        "and this request sends back a call to parallel_local_search_one_v2 under the same id"
    ) in err
    assert "the recording's client sent this" not in err


@pytest.mark.parametrize(
    "body",
    [
        '{"choices": [{"message": "hi"}]}',
        'data: {"choices": [{"delta": "x"}]}\n\ndata: [DONE]\n\n',
        '{"choices": [{"message": {"content": 5, "tool_calls": [{"function": "f"}]}}]}',
    ],
)
def test_a_reply_of_the_wrong_shape_inside_is_refused_in_one_line(tmp_path, capsys, body):
    name = "crewai-test_openai_parallel_native_tool_calling_test_agent_kickoff.yaml"

    def edit(interactions):
        interactions[0]["response"]["body"]["string"] = body

    err, _ = _refusal(capsys, _damaged(tmp_path, name, edit), tmp_path)
    assert "interaction 1: the response body is not a Chat Completions response" in err
    assert "internal error" not in err


def test_a_response_that_failed_is_refused_not_frozen_as_an_empty_answer(tmp_path, capsys):
    # The Responses API can answer 200 with a response whose status is `failed`: read as
    # a reply, it would freeze as an answer with no text.
    name = "chatlas-test_chat_callbacks.yaml"

    def edit(interactions):
        body = interactions[1]["response"]["body"]
        body["string"] = (
            body["string"]
            .replace('"type":"response.completed"', '"type":"response.failed"')
            .replace('"status":"completed"', '"status":"failed"')
            .replace('"error":null', '"error":{"code":"server_error","message":"boom"}')
        )

    err, _ = _refusal(capsys, _damaged(tmp_path, name, edit), tmp_path)
    assert "interaction 2: the model's response failed (status failed: boom)" in err
