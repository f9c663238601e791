"""A failing tool is observed as failed on the OpenAI wires too (issue 43,
docs/wires.md#tool-failures).

Chat Completions and the Responses API have no failure flag: a failed tool's result is
text, in the form its framework writes it. Each agent here is written as its framework's
docs show it, with a tool that fails for the city asked about, and runs against harness's
server on 127.0.0.1: the Agents SDK (its default model on the Responses API, Chat
Completions, an agent as a tool, a handoff), LangGraph's ``create_react_agent`` with a
``ToolNode`` that handles tool errors and langgraph-supervisor's worker built the same way,
Microsoft Agent Framework on the Responses API, pydantic-ai's ``ModelRetry`` on both OpenAI
models, and a raw openai SDK loop that sends ``{"error": ...}``. The call must be
``error``, as the same failure is on the wires with a flag and over MCP.
"""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

from harness.scenario import run_scenario

AGENTS = '''
import json

FAILURE = "no weather station in Atlantis"


def get_weather(city: str) -> str:
    """The weather in a city."""
    if city == "Atlantis":
        raise ValueError(FAILURE)
    return f"18C in {city}"


def _sdk():
    from agents import set_tracing_disabled

    set_tracing_disabled(True)


async def agents_sdk(question):
    """The Agents SDK's quickstart agent, on its default model (the Responses API)."""
    from agents import Agent, Runner, function_tool

    _sdk()
    agent = Agent(
        name="Weather agent",
        instructions="Answer with the tool.",
        tools=[function_tool(get_weather)],
    )
    return (await Runner.run(agent, question)).final_output


async def agents_sdk_chat(question):
    """The same agent on Chat Completions."""
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
    from openai import AsyncOpenAI

    _sdk()
    agent = Agent(
        name="Weather agent",
        instructions="Answer with the tool.",
        tools=[function_tool(get_weather)],
        model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=AsyncOpenAI()),
    )
    return (await Runner.run(agent, question)).final_output


async def agents_sdk_as_tool(question):
    """An agent as a tool (Agent.as_tool): the researcher's tool fails."""
    from agents import Agent, Runner, function_tool

    _sdk()
    researcher = Agent(
        name="researcher",
        instructions="You research the weather with the tool.",
        tools=[function_tool(get_weather)],
    )
    coordinator = Agent(
        name="coordinator",
        instructions="You coordinate a researcher.",
        tools=[researcher.as_tool(tool_name="research", tool_description="Finds the weather.")],
    )
    return (await Runner.run(coordinator, question)).final_output


async def agents_sdk_handoff(question):
    """A handoff: the triage agent hands the question over, the weather agent's tool fails."""
    from agents import Agent, Runner, function_tool

    _sdk()
    weather = Agent(
        name="Weather agent",
        instructions="You answer weather questions with the tool.",
        tools=[function_tool(get_weather)],
        handoff_description="Knows the weather.",
    )
    triage = Agent(
        name="Triage agent",
        instructions="You hand the question to the right agent.",
        handoffs=[weather],
    )
    return (await Runner.run(triage, question)).final_output


def _weather_node():
    from langgraph.prebuilt import ToolNode

    # LangGraph's "handle tool errors": the error goes back to the model as an error
    # ToolMessage (status="error"), which Chat Completions carries as its text only.
    return ToolNode([get_weather], handle_tool_errors=True)


def langgraph_react(question):
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    agent = create_react_agent(ChatOpenAI(model="gpt-4o-mini", max_retries=0), _weather_node())
    result = agent.invoke({"messages": [{"role": "user", "content": question}]})
    return result["messages"][-1].content


def langgraph_json(question):
    """A failure in words of its own, made recognised as docs/wires.md says: the object form."""
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import ToolNode, create_react_agent

    node = ToolNode([get_weather], handle_tool_errors=lambda e: json.dumps({"error": str(e)}))
    agent = create_react_agent(ChatOpenAI(model="gpt-4o-mini", max_retries=0), node)
    result = agent.invoke({"messages": [{"role": "user", "content": question}]})
    return result["messages"][-1].content


def langgraph_supervisor(question):
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
    from langgraph_supervisor import create_supervisor

    model = ChatOpenAI(model="gpt-4o-mini", max_retries=0)
    expert = create_react_agent(
        model=model,
        tools=_weather_node(),
        name="weather_expert",
        prompt="You are a weather expert with a weather tool.",
    )
    workflow = create_supervisor(
        [expert], model=model, prompt="You are a team supervisor managing a weather expert."
    )
    result = workflow.compile().invoke({"messages": [{"role": "user", "content": question}]})
    return result["messages"][-1].content


async def agent_framework(question):
    """Microsoft Agent Framework's getting-started agent (OpenAIChatClient: Responses API)."""
    from agent_framework import Agent
    from agent_framework.openai import OpenAIChatClient

    agent = Agent(
        client=OpenAIChatClient(model="gpt-4o-mini"),
        instructions="Answer with the tool.",
        tools=[get_weather],
    )
    return (await agent.run(question)).text


def _pydantic_agent(model):
    from pydantic_ai import Agent, ModelRetry

    agent = Agent(model, instructions="Answer with the tools.")

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """The weather in a city."""
        if city == "Atlantis":
            raise ModelRetry(FAILURE)
        return f"18C in {city}"

    return agent


async def pydantic_chat(question):
    from pydantic_ai.models.openai import OpenAIChatModel

    return (await _pydantic_agent(OpenAIChatModel("gpt-4o-mini")).run(question)).output


async def pydantic_responses(question):
    from pydantic_ai.models.openai import OpenAIResponsesModel

    return (await _pydantic_agent(OpenAIResponsesModel("gpt-4o-mini")).run(question)).output


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


def openai_chat_loop(question):
    """The openai SDK's function-calling loop; a failure goes back as {"error": ...}."""
    from openai import OpenAI

    client = OpenAI(max_retries=0)
    messages = [{"role": "user", "content": question}]
    while True:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=[WEATHER_TOOL]
        )
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            try:
                content = get_weather(**json.loads(call.function.arguments))
            except ValueError as exc:
                content = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
            messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
'''

SCRIPT = """\
  script:
    - tool_calls: [{get_weather: {city: Atlantis}}]
    - content: There is no weather station in Atlantis.
"""

AS_TOOL = """\
  script:
    - tool_calls: [{research: {input: weather in Atlantis}}]
    - content: There is no weather station in Atlantis.
  conversations:
    - name: researcher
      match: {system_contains: You research}
      script:
        - tool_calls: [{get_weather: {city: Atlantis}}]
        - content: No weather station in Atlantis.
"""

HANDOFF = """\
  script:
    - tool_calls: [{transfer_to_weather_agent: {}}]
    - tool_calls: [{get_weather: {city: Atlantis}}]
    - content: There is no weather station in Atlantis.
"""

SUPERVISOR = """\
  script:
    - tool_calls: [{transfer_to_weather_expert: {}}]
    - content: There is no weather station in Atlantis.
  conversations:
    - name: expert
      match: {system_contains: You are a weather expert}
      script:
        - tool_calls: [{get_weather: {city: Atlantis}}]
        - content: No weather station in Atlantis.
"""

# agent -> (its script, the modules it needs, the text its failed result must hold).
AGENT_SDK = "An error occurred while running the tool"
CASES = {
    "agents_sdk": (SCRIPT, ["agents"], AGENT_SDK),
    "agents_sdk_chat": (SCRIPT, ["agents"], AGENT_SDK),
    "agents_sdk_as_tool": (AS_TOOL, ["agents"], AGENT_SDK),
    "agents_sdk_handoff": (HANDOFF, ["agents"], AGENT_SDK),
    "langgraph_react": (SCRIPT, ["langgraph.prebuilt", "langchain_openai"], "Please fix"),
    "langgraph_json": (SCRIPT, ["langgraph.prebuilt", "langchain_openai"], '{"error": "no'),
    "langgraph_supervisor": (SUPERVISOR, ["langgraph_supervisor", "langchain_openai"], "fix"),
    "agent_framework": (SCRIPT, ["agent_framework.openai"], "Error: Function failed."),
    "pydantic_chat": (SCRIPT, ["pydantic_ai.models.openai"], "no weather station"),
    "pydantic_responses": (SCRIPT, ["pydantic_ai.models.openai"], "no weather station"),
    "openai_chat_loop": (SCRIPT, ["openai"], "no weather station"),
}


@pytest.fixture
def project(tmp_path, monkeypatch, fresh_plugins):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / "openai_failing_agents.py").write_text(AGENTS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def scenario(folder: Path, agent: str, llm: str) -> Path:
    path = folder / f"{agent}.scenario.yaml"
    text = textwrap.dedent(
        f"""\
        target: {{python: "openai_failing_agents:{agent}", timeout: 60}}
        input: What's the weather in Atlantis?
        expect: {{termination: completed, script_consumed: true}}
        """
    )
    path.write_text(text + "llm:\n" + llm)
    return path


@pytest.mark.parametrize("agent", sorted(CASES))
def test_a_failed_tool_call_on_an_openai_wire_is_observed_as_an_error(project, agent):
    llm, needs, said = CASES[agent]
    for module in needs:
        pytest.importorskip(module)

    result = run_scenario(scenario(project, agent, llm))

    assert result.status == "passed", (result.final, [e for e in result.expectations if not e.ok])
    (call,) = [c for c in result.tool_calls if c.name == "get_weather"]
    assert call.arguments == {"city": "Atlantis"}
    assert (call.status, call.is_error) == ("error", True), call.result
    assert said in str(call.result)
    # The calls that did not fail (the handoff, the agent called as a tool) stay ok.
    assert {c.status for c in result.tool_calls if c is not call} <= {"ok"}


@pytest.mark.parametrize("agent", ["agents_sdk_chat", "openai_chat_loop"])
def test_a_recorded_failure_freezes_into_a_stub_that_fails_the_same_way(
    project, monkeypatch, agent
):
    from harness.cli import main
    from harness.serve import running_server

    pytest.importorskip(CASES[agent][1][0])
    path = project / f"{agent}.scenario.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            target: {{python: "openai_failing_agents:{agent}", timeout: 60}}
            input: What's the weather in Atlantis?
            llm: {{provider: openai, model: gpt-4o-mini, cassette: {agent}.yaml}}
            """
        )
    )
    steps = [
        {"tool_calls": [{"get_weather": {"city": "Atlantis"}}]},
        {"content": "There is no weather station in Atlantis."},
    ]
    with running_server(steps) as upstream:
        monkeypatch.setenv("OPENAI_BASE_URL", upstream)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-upstream-0123456789abcdef")
        recorded = run_scenario(path, record_mode="once")
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    out = project / "frozen.scenario.yaml"

    # Without --scenario: harness's own loop with the recorded tools as stubs.
    assert main(["freeze", str(project / f"{agent}.yaml"), "-o", str(out)]) == 0
    frozen = run_scenario(out)

    (recorded_call,) = recorded.tool_calls
    (frozen_call,) = frozen.tool_calls
    assert recorded_call.status == frozen_call.status == "error"
    assert frozen_call.result == recorded_call.result


# -- the failure forms, read from each framework's installed source ------------------------


def _agents_sdk_texts():
    from agents.tool import default_tool_error_function, default_tool_timeout_error_message

    return [
        default_tool_error_function(None, ValueError("no city")),
        default_tool_timeout_error_message(tool_name="get_weather", timeout_seconds=2.5),
    ]


def _langgraph_texts():
    from langgraph.prebuilt import tool_node

    kwargs = {"tool_name": "get_weather", "tool_kwargs": {"city": "x"}, "error": "bad city"}
    return [
        tool_node.TOOL_CALL_ERROR_TEMPLATE.format(error=repr(ValueError("no city"))),
        tool_node.INVALID_TOOL_NAME_ERROR_TEMPLATE.format(
            requested_tool="get_wether", available_tools="get_weather"
        ),
        tool_node.TOOL_INVOCATION_ERROR_TEMPLATE.format(**kwargs),
        tool_node.TOOL_EXECUTION_ERROR_TEMPLATE.format(**kwargs),
    ]


def _agent_framework_texts():
    from agent_framework import Content
    from agent_framework._tools import _function_execution_error_result

    call = Content.from_function_call(call_id="c", name="get_weather", arguments={})
    return [
        _function_execution_error_result(
            call, "get_weather", ValueError("no city"), {"include_detailed_errors": detailed}
        ).result
        for detailed in (False, True)
    ]


def _pydantic_ai_texts():
    import warnings

    from pydantic_ai.messages import RetryPromptPart

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # deprecated for v3, still sent by 2.x
        part = RetryPromptPart(content="no city", tool_name="get_weather")
    return [part.model_response()]


def _llamaindex_texts():
    from llama_index.core.tools import FunctionTool
    from llama_index.core.tools.calling import call_tool

    def get_weather(city: str) -> str:
        """The weather in a city."""
        raise ValueError("no city")

    return [call_tool(FunctionTool.from_defaults(fn=get_weather), {"city": "x"}).content]


# FAILURE_TEXTS row -> (the module it needs, its texts as the installed framework writes them).
FRAMEWORK_TEXTS = {
    "openai-agents": ("agents", _agents_sdk_texts),
    "langgraph (langgraph-prebuilt)": ("langgraph.prebuilt", _langgraph_texts),
    "agent-framework-core": ("agent_framework", _agent_framework_texts),
    "pydantic-ai-slim": ("pydantic_ai", _pydantic_ai_texts),
    "llama-index-core": ("llama_index.core", _llamaindex_texts),
}


def test_every_framework_row_is_checked_against_its_installed_source():
    from harness.wires._failures import FAILURE_TEXTS

    assert [row.framework for row in FAILURE_TEXTS] == list(FRAMEWORK_TEXTS)


@pytest.mark.parametrize("framework", list(FRAMEWORK_TEXTS))
def test_each_frameworks_failure_text_is_recognised(framework):
    from harness.wires._failures import failure_form

    module, texts = FRAMEWORK_TEXTS[framework]
    pytest.importorskip(module)
    for text in texts():
        assert failure_form(text) == framework, text


def test_the_object_and_exception_forms_and_what_is_no_failure():
    from harness.wires import ANTHROPIC_MESSAGES, GEMINI, OPENAI_CHAT, OPENAI_RESPONSES
    from harness.wires._failures import failure_form

    assert failure_form('{"error": "ValueError: no city"}') == "error object"
    assert failure_form(' {"error": {"code": 404, "message": "no city"}}\n') == "error object"
    assert failure_form("LookupError: no city named 'Atlantis'") == "exception"
    if importlib.util.find_spec("pydantic_ai") is not None:
        from pydantic_ai.messages import ToolReturnPart

        # pydantic-ai 2.x sends a retried or failed tool return in the object form.
        part = ToolReturnPart(tool_name="f", content="no city", tool_call_id="c", outcome="retried")
        assert failure_form(part.model_response_str()) == "error object"
    results = [
        "18C in Paris",
        '{"temp": 18, "error": null}',
        '{"error": ""}',
        '{"errors": ["x"]}',
        '["error"]',
        "{not json, error}",
        "Error: could not find it",  # a failure text of the user's own: not recognised
        "There was an error: none.",
    ]
    assert [failure_form(text) for text in results] == [None] * len(results)

    # Each wire reads the forms, flag or no flag.
    failed = '{"error": "no city"}'
    chat = [
        {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f"}}]},
        {"role": "tool", "tool_call_id": "a", "content": failed},
    ]
    responses = [
        {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "a", "output": failed},
    ]
    anthropic = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f"}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "a", "content": failed}],
        },
    ]
    gemini = [
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "f", "response": {"result": failed}}}],
        },
    ]
    for wire, items, call_id in [
        (OPENAI_CHAT, chat, "a"),
        (OPENAI_RESPONSES, responses, "a"),
        (ANTHROPIC_MESSAGES, anthropic, "a"),
        (GEMINI, gemini, "call_0_f"),
    ]:
        assert wire.tool_results(items)[call_id].failed, wire.name
        # The messages a run keeps say so too.
        assert [m.is_error for m in wire.messages(items) if m.role == "tool"] == [True], wire.name
