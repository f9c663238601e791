"""Messages and the Conversation: OpenAI form, save/load round trip."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from harness import Agent, HarnessError, tool
from harness._messages import (
    AssistantMessage,
    Conversation,
    SystemMessage,
    ToolCall,
    ToolMessage,
    UserMessage,
    clean_data,
    clean_reply,
    clean_text,
)

EVERY_FIELD = Conversation(
    messages=[
        SystemMessage(content="You are terse."),
        UserMessage(content="Weather in SF and LA? ünïcødé ✓"),
        AssistantMessage(
            content="Checking.",
            tool_calls=[
                ToolCall(id="call_1_0", name="get_weather", arguments={"city": "SF", "days": 2}),
                ToolCall(id="call_1_1", name="get_weather", raw_arguments='{"city": '),
            ],
            finish_reason="tool_calls",
        ),
        ToolMessage(tool_call_id="call_1_0", name="get_weather", content="72F"),
        ToolMessage(
            tool_call_id="call_1_1",
            name="get_weather",
            content="Invalid arguments for get_weather: Invalid JSON",
            is_error=True,
        ),
        AssistantMessage(content="SF: 72F; LA: unknown", finish_reason="length"),
    ]
)


def test_save_and_load_give_back_every_field(tmp_path):
    path = tmp_path / "conversation.json"
    EVERY_FIELD.save(path)
    loaded = Conversation.load(path)

    assert loaded == EVERY_FIELD
    assert loaded.model_dump() == EVERY_FIELD.model_dump()
    assert loaded.messages[2].tool_calls[1].raw_arguments == '{"city": '
    assert loaded.messages[4].is_error is True
    assert loaded.messages[5].finish_reason == "length"
    # Saved as readable JSON with every field spelled out.
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved["messages"][4] == {
        "role": "tool",
        "tool_call_id": "call_1_1",
        "name": "get_weather",
        "content": "Invalid arguments for get_weather: Invalid JSON",
        "is_error": True,
    }


def test_a_sent_conversation_equals_its_loaded_copy(tmp_path):
    conversation = EVERY_FIELD.model_copy(deep=True)
    conversation.to_openai()  # fills the per-message cache
    conversation.save(tmp_path / "c.json")

    assert Conversation.load(tmp_path / "c.json") == conversation


def test_a_run_conversation_round_trips(tmp_path):
    @tool
    def get_weather(city: str) -> str:
        """Weather."""
        return "72F"

    script = [{"tool_calls": [{"get_weather": {"city": "SF"}}]}, {"content": "72F."}]
    result = Agent(llm=script, tools=[get_weather], system="Be brief.").run("Weather?")
    result.conversation.save(tmp_path / "run.json")

    loaded = Conversation.load(tmp_path / "run.json")
    assert loaded == result.conversation
    assert loaded.to_openai() == result.conversation.to_openai()


def test_to_openai_is_the_chat_completions_form():
    assert EVERY_FIELD.to_openai() == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in SF and LA? ünïcødé ✓"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_1_0",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "SF", "days": 2}'},
                },
                {
                    "id": "call_1_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": '},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1_0", "content": "72F"},
        {
            "role": "tool",
            "tool_call_id": "call_1_1",
            "content": "Invalid arguments for get_weather: Invalid JSON",
        },
        {"role": "assistant", "content": "SF: 72F; LA: unknown"},
    ]


def test_to_openai_returns_a_new_list_and_follows_appends():
    conversation = Conversation(messages=[UserMessage(content="a")])
    first = conversation.to_openai()
    first.append({"role": "user", "content": "mutated by the caller"})
    conversation.append(AssistantMessage(content="b"))

    assert conversation.to_openai() == [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
    ]


def test_to_openai_follows_a_replaced_message_list():
    conversation = Conversation(messages=[UserMessage(content="a")])
    conversation.to_openai()
    conversation.messages = [UserMessage(content="b")]

    assert conversation.to_openai() == [{"role": "user", "content": "b"}]


def test_from_openai_reads_chat_completions_messages():
    conversation = Conversation.from_openai(EVERY_FIELD.to_openai())

    assert conversation.to_openai() == EVERY_FIELD.to_openai()
    assert conversation.messages[2].tool_calls[1].raw_arguments == '{"city": '
    assert conversation.messages[2].tool_calls[0].arguments == {"city": "SF", "days": 2}


def test_messages_are_immutable():
    message = UserMessage(content="hi")
    with pytest.raises(ValidationError):
        message.content = "changed"  # type: ignore[misc]


def test_load_rejects_a_message_with_an_unknown_role(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{"messages": [{"role": "robot", "content": "beep"}]}', encoding="utf-8")

    with pytest.raises(HarnessError, match=r"bad.json: not a saved conversation: .*robot"):
        Conversation.load(path)


# An OpenAI history as an SDK client keeps it: compact arguments, a tool result.
OPENAI_HISTORY = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_a", "content": "18C"},
    {"role": "assistant", "content": "18C in Paris."},
]


def test_load_reads_a_plain_openai_message_list_and_save_writes_one_back_exactly(tmp_path):
    source = tmp_path / "history.json"
    source.write_text(json.dumps(OPENAI_HISTORY), encoding="utf-8")
    conversation = Conversation.load(source)
    assert [type(m).__name__ for m in conversation.messages] == [
        "SystemMessage",
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
        "AssistantMessage",
    ]
    assert conversation.messages[2].tool_calls[0].arguments == {"city": "Paris"}
    saved = tmp_path / "again.json"
    conversation.save(saved, format="openai")
    # The model's own argument text is kept: the list is the one the API was sent.
    assert json.loads(saved.read_text(encoding="utf-8")) == OPENAI_HISTORY
    assert Conversation.load(saved) == conversation


def test_both_forms_round_trip_exactly(tmp_path):
    for form in ("harness", "openai"):
        first, second = tmp_path / f"1.{form}.json", tmp_path / f"2.{form}.json"
        EVERY_FIELD.save(first, format=form)
        Conversation.load(first).save(second, format=form)
        assert first.read_text(encoding="utf-8") == second.read_text(encoding="utf-8")
    assert Conversation.load(tmp_path / "1.harness.json") == EVERY_FIELD


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"role": "user"}', "not a conversation: expected a list of OpenAI messages"),
        ("[1, 2]", "item 0 is int 1; expected a harness message or an OpenAI message dict"),
        ("{nope", "not JSON"),
    ],
)
def test_load_says_what_is_wrong_with_anything_else(tmp_path, text, message):
    path = tmp_path / "odd.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(HarnessError, match=r"odd\.json: ") as raised:
        Conversation.load(path)
    assert message in str(raised.value)


def test_save_refuses_an_unknown_format(tmp_path):
    with pytest.raises(HarnessError, match="format is 'harness' or 'openai', got 'yaml'"):
        EVERY_FIELD.save(tmp_path / "c.yaml", format="yaml")  # type: ignore[arg-type]


# -- generated conversations -----------------------------------------------------------------

text = st.text(max_size=20)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False)  # NaN != NaN; Infinity must survive
    | text,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(text, children, max_size=3),
    max_leaves=10,
)
tool_calls = st.builds(
    ToolCall,
    id=st.text(min_size=1, max_size=10),
    name=st.from_regex(r"[a-z_]{1,12}", fullmatch=True),
    arguments=st.dictionaries(text, json_values, max_size=4),
    raw_arguments=st.none() | text,
)
messages = st.one_of(
    st.builds(SystemMessage, content=text),
    st.builds(UserMessage, content=text),
    st.builds(
        AssistantMessage,
        content=st.none() | text,
        tool_calls=st.lists(tool_calls, max_size=3),
        finish_reason=st.sampled_from([None, "stop", "tool_calls", "length"]),
    ),
    st.builds(
        ToolMessage,
        tool_call_id=text,
        name=text,
        content=text,
        is_error=st.booleans(),
    ),
)


@settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    max_examples=60,
)
@given(conversation=st.builds(Conversation, messages=st.lists(messages, max_size=8)))
def test_generated_conversations_round_trip_exactly(conversation, tmp_path):
    path = tmp_path / "generated.json"
    conversation.save(path)
    loaded = Conversation.load(path)

    assert loaded == conversation
    assert loaded.model_dump() == conversation.model_dump()
    assert loaded.to_openai() == conversation.to_openai()


# -- text that cannot be encoded ---------------------------------------------------------------

LONE = "\ud800"  # what json.loads makes of a model's "\ud800"
ESCAPED = "report-\udcff.txt"  # what os.listdir gives for a non-UTF-8 name (surrogateescape)


def test_lone_surrogates_from_tools_and_models_become_replacement_characters(tmp_path):
    @tool
    def list_files(folder: str) -> str:
        """A filename that is not UTF-8."""
        return ESCAPED

    @tool
    def stat_files(folder: str) -> dict:
        """The same name as a key and a value."""
        return {ESCAPED: [ESCAPED, "ok 😀"]}

    @tool
    def open_file(folder: str) -> str:
        """Fails naming the file."""
        raise FileNotFoundError(f"no such file: {ESCAPED}")

    script = [
        {
            "content": f"Looking {LONE}",
            "tool_calls": [
                {"list_files": {"folder": f"docs{LONE}"}},
                {"stat_files": {"folder": "docs"}},
                {"open_file": {"folder": "docs"}},
            ],
        },
        {"content": f"Found {LONE}"},
    ]
    result = Agent(llm=script, tools=[list_files, stat_files, open_file]).run("?")

    # Saving and dumping no longer fail.
    path = tmp_path / "conversation.json"
    result.conversation.save(path)
    assert Conversation.load(path) == result.conversation
    json.loads(result.model_dump_json())

    assert result.final.content == "Found \ufffd"
    reply = result.conversation.messages[1]
    assert reply.content == "Looking \ufffd"
    assert reply.tool_calls[0].arguments == {"folder": "docs\ufffd"}
    assert [r.result for r in result.tool_calls] == [
        "report-\ufffd.txt",
        {"report-\ufffd.txt": ["report-\ufffd.txt", "ok 😀"]},
        "FileNotFoundError: no such file: report-\ufffd.txt",
    ]
    # What the model sees is still exactly json.dumps(result).
    assert result.conversation.messages[3].content == json.dumps(result.tool_calls[1].result)
    assert result.tool_calls[0].arguments == {"folder": "docs\ufffd"}


def test_a_lone_surrogate_in_an_llm_error_message_is_replaced_too():
    # An HTTP error body is the server's JSON, where "\ud800" is a legal escape.
    result = Agent(llm=[{"error": {"status": 500, "message": f"bad {LONE}"}}]).run("?")

    assert result.termination == "llm_error"
    assert result.final.error["message"] == "bad \ufffd"
    assert result.memory[-1]["content"] == "LLM error: bad \ufffd"
    json.loads(result.model_dump_json())


def test_clean_text_keeps_ordinary_text_as_is():
    for text in ["plain", "ünïcødé ✓ 😀", ""]:
        assert clean_text(text) is text
    data = {"a": ["ünï", {"b": "😀"}]}
    assert clean_data(data) is data
    message = AssistantMessage(content="ok ✓", tool_calls=[ToolCall(id="1", name="f")])
    assert clean_reply(message) is message


def test_clean_text_replaces_each_lone_half_and_joins_a_split_pair():
    assert clean_text(f"a{LONE}b\udc80") == "a\ufffdb\ufffd"
    assert clean_text("\ud83d\ude00") == "😀"  # a pair given as two code points
