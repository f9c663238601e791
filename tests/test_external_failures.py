"""A failing tool is observed as failed on every wire (issue 43, docs/wires.md#tool-failures).

Each agent is written as its framework's docs show it, with a tool that fails for the
city asked about: the raw anthropic SDK's own loop (``is_error: true``), the SDK's tool
runner (``client.beta.messages.tool_runner``, which says so itself, over a message
thread), pydantic-ai's ``ModelRetry`` on AnthropicModel and on GoogleModel, google-genai's
manual loop (``{"error": ...}``) and its automatic function calling. Each runs against
harness's server on 127.0.0.1; the call must be ``error``, as the same failure of a tool
harness serves over MCP is.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.scenario import run_scenario

AGENTS = '''
import anthropic
from google import genai
from google.genai import types

FAILURE = "no weather station in Atlantis"


def get_weather(city: str) -> str:
    """The weather in a city."""
    if city == "Atlantis":
        raise ValueError(FAILURE)
    return f"18C in {city}"


WEATHER_TOOL = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


def anthropic_own_loop(question):
    """The loop of Anthropic's tool-use docs: a failed tool goes back with is_error."""
    client = anthropic.Anthropic(max_retries=0)
    messages = [{"role": "user", "content": question}]
    while True:
        reply = client.messages.create(
            model="claude-sonnet-4-6", max_tokens=1024, tools=[WEATHER_TOOL], messages=messages
        )
        messages.append({"role": "assistant", "content": reply.content})
        if reply.stop_reason != "tool_use":
            return "".join(b.text for b in reply.content if b.type == "text")
        results = []
        for block in reply.content:
            if block.type != "tool_use":
                continue
            try:
                text, failed = get_weather(**block.input), False
            except ValueError as exc:
                text, failed = str(exc), True
            results.append(
                {"type": "tool_result", "tool_use_id": block.id, "content": text, "is_error": failed}
            )
        messages.append({"role": "user", "content": results})


def anthropic_tool_runner(question):
    """The SDK's tool runner, as Anthropic's docs recommend it."""
    client = anthropic.Anthropic(max_retries=0)
    runner = client.beta.messages.tool_runner(
        model="claude-sonnet-4-6",
        max_tokens=1024,
        tools=[anthropic.beta_tool(get_weather)],
        messages=[{"role": "user", "content": question}],
    )
    final = runner.until_done()
    return "".join(b.text for b in final.content if b.type == "text")


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


async def pydantic_anthropic(question):
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    model = AnthropicModel("claude-sonnet-4-6", provider=AnthropicProvider())
    return (await _pydantic_agent(model).run(question)).output


async def pydantic_google(question):
    from pydantic_ai.models.google import GoogleModel
    from pydantic_ai.providers.google import GoogleProvider

    model = GoogleModel("gemini-2.5-flash", provider=GoogleProvider())
    return (await _pydantic_agent(model).run(question)).output


async def pydantic_anthropic_mcp(question, mcp_url):
    """The same agent, its tool on an MCP server (harness's)."""
    from pydantic_ai import Agent
    from pydantic_ai.mcp import MCPToolset
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    model = AnthropicModel("claude-sonnet-4-6", provider=AnthropicProvider())
    agent = Agent(model, toolsets=[MCPToolset(mcp_url)], instructions="Answer with the tools.")
    async with agent:
        return (await agent.run(question)).output


GEMINI_TOOLS = [
    types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name="get_weather",
                description="The weather in a city.",
                parameters_json_schema=WEATHER_TOOL["input_schema"],
            )
        ]
    )
]


def gemini_manual_loop(question):
    """google-genai's manual function calling: a failure goes back under `error`."""
    client = genai.Client()
    config = types.GenerateContentConfig(
        tools=GEMINI_TOOLS,
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    contents = [types.Content(role="user", parts=[types.Part(text=question)])]
    while True:
        reply = client.models.generate_content(
            model="gemini-2.5-flash", contents=contents, config=config
        )
        contents.append(reply.candidates[0].content)
        if not reply.function_calls:
            return reply.text or ""
        parts = []
        for call in reply.function_calls:
            try:
                response = {"output": get_weather(**call.args)}
            except ValueError as exc:
                response = {"error": str(exc)}
            parts.append(
                types.Part.from_function_response(name=call.name, response=response)
            )
        contents.append(types.Content(role="user", parts=parts))


def gemini_automatic(question):
    """google-genai's automatic function calling: the SDK runs the Python function."""
    client = genai.Client()
    reply = client.models.generate_content(
        model="gemini-2.5-flash",
        contents=question,
        config=types.GenerateContentConfig(tools=[get_weather]),
    )
    return reply.text or ""
'''

SCRIPT = """\
  script:
    - tool_calls: [{get_weather: {city: Atlantis}}]
    - content: There is no weather station in Atlantis.
"""

# agent -> the modules it needs.
NEEDS = {
    "anthropic_own_loop": ["anthropic"],
    "anthropic_tool_runner": ["anthropic"],
    "pydantic_anthropic": ["pydantic_ai.models.anthropic"],
    "pydantic_google": ["pydantic_ai.models.google"],
    "gemini_manual_loop": ["google.genai"],
    "gemini_automatic": ["google.genai"],
}


@pytest.fixture
def project(tmp_path, monkeypatch, fresh_plugins):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / "failing_agents.py").write_text(AGENTS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def scenario(folder: Path, agent: str, llm: str = SCRIPT, extra: str = "") -> Path:
    path = folder / f"{agent}.scenario.yaml"
    text = textwrap.dedent(
        f"""\
        target: {{python: "failing_agents:{agent}", timeout: 60}}
        input: What's the weather in Atlantis?
        expect: {{termination: completed, script_consumed: true}}
        """
    )
    path.write_text(text + "llm:\n" + llm + extra)
    return path


@pytest.mark.parametrize("agent", sorted(NEEDS))
def test_a_failed_tool_call_is_observed_as_an_error(project, agent):
    for module in NEEDS[agent]:
        pytest.importorskip(module)

    result = run_scenario(scenario(project, agent))

    assert result.status == "passed", (result.final, [e for e in result.expectations if not e.ok])
    (call,) = result.tool_calls
    assert (call.name, call.arguments) == ("get_weather", {"city": "Atlantis"})
    assert (call.status, call.is_error) == ("error", True)
    assert "no weather station in Atlantis" in str(call.result)
    executed = [e for e in result.events if e.event == "action_executed"]
    assert [e.status for e in executed] == ["error"]


SERVED_TOOL = """\
tools:
  get_weather:
    description: The weather in a city.
    parameters: {city: str}
    results: [{on_call: 1, returns: no weather station in Atlantis, is_error: true}]
"""


def test_the_same_failure_has_the_same_status_wherever_the_tool_lives(project):
    pytest.importorskip("pydantic_ai.models.anthropic")
    pytest.importorskip("mcp")

    own = run_scenario(scenario(project, "pydantic_anthropic"))
    served = run_scenario(scenario(project, "pydantic_anthropic_mcp", extra=SERVED_TOOL))

    for result in (own, served):
        assert result.status == "passed", result.final
    ((own_call,), (served_call,)) = own.tool_calls, served.tool_calls
    assert (own_call.status, own_call.is_error) == (served_call.status, served_call.is_error)
    assert (own_call.status, own_call.is_error) == ("error", True)
    assert own_call.result == served_call.result == "no weather station in Atlantis"


def test_each_wire_reads_its_own_failure_signal():
    from harness.wires import ANTHROPIC_MESSAGES, GEMINI, OPENAI_CHAT, OPENAI_RESPONSES

    anthropic = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f"}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "boom", "is_error": True}
            ],
        },
    ]
    gemini = [
        {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "f", "response": {"error": "boom"}}}],
        },
    ]
    responses = [
        {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "a", "output": "boom", "status": "incomplete"},
    ]
    chat = [
        {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "Error: boom"},
    ]

    assert ANTHROPIC_MESSAGES.tool_results(anthropic)["a"].failed
    assert GEMINI.tool_results(gemini)["call_0_f"].failed
    assert OPENAI_RESPONSES.tool_results(responses)["a"].failed
    # Chat Completions has no failure flag: a text in no failure form (the user's own
    # words) is a result (the forms: tests/test_external_openai_failures.py).
    assert not OPENAI_CHAT.tool_results(chat)["a"].failed
    # A success on the same wires is none.
    anthropic[1]["content"][0]["is_error"] = False
    gemini[1]["parts"][0]["functionResponse"]["response"] = {"output": "18C"}
    del responses[1]["status"]
    assert not ANTHROPIC_MESSAGES.tool_results(anthropic)["a"].failed
    assert not GEMINI.tool_results(gemini)["call_0_f"].failed
    assert not OPENAI_RESPONSES.tool_results(responses)["a"].failed
    # The messages a run keeps say so too.
    assert [m.is_error for m in GEMINI.messages(gemini) if m.role == "tool"] == [False]


def test_a_google_genai_target_is_given_one_gemini_key(project, monkeypatch, caplog):
    pytest.importorskip("google.genai")
    monkeypatch.setenv("GEMINI_API_KEY", "the-users-own-key")  # removed for the target

    with caplog.at_level("WARNING"):
        result = run_scenario(scenario(project, "gemini_manual_loop"))

    assert result.status == "passed", result.final
    # google-genai warns on every client when both keys are set.
    assert "Both GOOGLE_API_KEY and GEMINI_API_KEY are set" not in caplog.text


@pytest.mark.parametrize(
    ("agent", "provider"), [("anthropic_own_loop", "anthropic"), ("gemini_manual_loop", "gemini")]
)
def test_a_flagged_failure_freezes_into_a_stub_that_fails_the_same_way(
    project, monkeypatch, agent, provider
):
    from harness.cli import main
    from harness.serve import running_server

    for module in NEEDS[agent]:
        pytest.importorskip(module)
    steps = [
        {"tool_calls": [{"get_weather": {"city": "Atlantis"}}]},
        {"content": "There is no weather station in Atlantis."},
    ]
    with running_server(steps) as upstream:
        path = project / f"{agent}.scenario.yaml"
        root = upstream.removesuffix("/v1")
        path.write_text(
            f"target: {{python: 'failing_agents:{agent}', timeout: 60}}\n"
            "input: What's the weather in Atlantis?\n"
            f"llm: {{provider: {provider}, base_url: '{root}', cassette: {agent}.yaml}}\n"
        )
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-upstream-0123456789abcdef")
        monkeypatch.setenv("GEMINI_API_KEY", "upstream-gemini-key-0123456789")
        recorded = run_scenario(path, record_mode="once")
    out = project / "frozen.scenario.yaml"

    # Without --scenario: harness's own loop, the recorded tool a stub. The result's
    # text is plain ("no weather station in Atlantis"): only the wire's flag says it failed.
    assert main(["freeze", str(project / f"{agent}.yaml"), "-o", str(out)]) == 0
    frozen = run_scenario(out)

    ((recorded_call,), (frozen_call,)) = recorded.tool_calls, frozen.tool_calls
    assert recorded_call.status == frozen_call.status == "error"
    assert frozen_call.result == recorded_call.result == "no weather station in Atlantis"
