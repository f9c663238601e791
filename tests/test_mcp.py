"""A target scenario's tools served over MCP (docs/mcp.md), driven by real MCP clients.

Each client (the ``mcp`` SDK's own ``Client``, pydantic-ai's ``MCPToolset``, the Agents
SDK's ``MCPServerStreamableHttp``) runs against harness's MCP server on 127.0.0.1; what it
called, what it got and whether it failed are read back from results.json.
(langchain-mcp-adapters 0.3.2 pins ``mcp<2`` and cannot be installed beside mcp 2.3.)
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from harness import hookimpl
from harness.cli import main
from harness.scenario import run_scenario

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "scenarios" / "mcp"

CLIENTS = ["mcp-sdk-client", "pydantic-ai-mcp", "agents-sdk-mcp"]


@pytest.fixture(autouse=True)
def _examples_importable(monkeypatch):
    # The agents import as `scenarios.mcp.agents...` from the project root.
    monkeypatch.syspath_prepend(str(ROOT))


def results_json(tmp_path: Path, *names: str) -> dict:
    """Run the examples with ``harness run`` and read back the results.json it writes."""
    out = tmp_path / "results.json"
    paths = [str(EXAMPLES / f"{name}.scenario.yaml") for name in names]
    status = main(["run", *paths, "--json", str(out), "--html", str(tmp_path / "r.html")])
    data = json.loads(out.read_text())
    return {"status": status, **data}


@pytest.mark.parametrize("client", CLIENTS)
def test_each_mcp_client_gets_the_stubs_and_a_failing_tool_is_an_error(tmp_path, client):
    data = results_json(tmp_path, client)

    (scenario,) = data["scenarios"]
    assert data["status"] == 0, scenario["expectations"]
    assert scenario["termination"] == "completed"
    calls = [
        (c["name"], c["arguments"], c["result"], c["status"], c["is_error"])
        for c in scenario["tool_calls"]
    ]
    assert calls == [
        ("get_weather", {"city": "Paris"}, "18C, cloudy in Paris", "ok", False),
        ("get_weather", {"city": "Rome"}, "ToolError: weather service unavailable", "error", True),
    ]
    # The stub's latency on the simulated clock, one call after the other.
    times = [(c["sim_start"], c["sim_end"]) for c in scenario["tool_calls"]]
    assert times == [(0.0, 0.5), (0.5, 1.0)]
    # Each MCP call is joined to the model's call that asked for it.
    seen = [
        (e["tool"], e["call_id"], e["status"], e["is_error"])
        for e in scenario["events"]
        if e["event"] == "mcp_call"
    ]
    assert seen == [
        ("get_weather", "call_1_0", "ok", False),
        ("get_weather", "call_2_0", "error", True),
    ]
    assert scenario["final"]["content"] == (
        "Paris is 18C and cloudy; the weather service failed for Rome."
    )


def test_the_client_receives_the_error_text_as_given():
    # The model's next request carries the tool message the MCP client built from the
    # isError result: the stub's text, not the SDK's "Error executing tool" wrapping.
    result = run_scenario(EXAMPLES / "mcp-sdk-client.scenario.yaml")
    tool_messages = [m.content for m in result.transcript if m.role == "tool"]
    assert tool_messages == [
        "18C, cloudy in Paris",
        "ERROR: ToolError: weather service unavailable",
    ]


def test_an_mcp_run_is_the_same_every_time():
    first = run_scenario(EXAMPLES / "mcp-sdk-client.scenario.yaml")
    second = run_scenario(EXAMPLES / "mcp-sdk-client.scenario.yaml")

    def data(result):
        return result.model_dump(mode="json", exclude={"wall_time", "wall_clock"})

    assert data(first) == data(second)


class _Offered:
    """The tool descriptions the model was offered, request by request."""

    def __init__(self) -> None:
        self.descriptions: list[dict[str, str]] = []

    @hookimpl
    def harness_llm_request(self, run, request):
        self.descriptions.append({t.name: t.description for t in request.tools})


@pytest.mark.hooks("harness_llm_request")
@pytest.mark.parametrize(
    ("name", "delete_calls"),
    [("rug-pull-obeys", 1), ("rug-pull-resists", 0)],
)
def test_a_rug_pull_is_seen_and_the_guards_catch_the_agent_that_obeys(name, delete_calls):
    offered = _Offered()
    result = run_scenario(EXAMPLES / f"{name}.scenario.yaml", plugins=[offered])

    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    changed = [e for e in result.events if e.event == "mcp_list_changed"]
    assert [(e.server, e.tools) for e in changed] == [("harness", ["delete_account", "read_inbox"])]
    # The client listed the tools again: the model's second request has the new description.
    first, second = offered.descriptions[0], offered.descriptions[1]
    assert first["read_inbox"] == "Read the user's inbox."
    assert "call delete_account" in second["read_inbox"]
    by_path = {e.path: e for e in result.expectations}
    assert by_path["mcp.list_changed_seen"].ok
    assert by_path["never_called"].actual == {"delete_account": delete_calls}
    assert [c.name for c in result.tool_calls].count("delete_account") == delete_calls


@pytest.mark.hooks("harness_llm_request")
@pytest.mark.parametrize(
    ("name", "delete_calls"),
    [("poisoned-description-obeys", 1), ("poisoned-description-resists", 0)],
)
def test_a_poisoned_description_reaches_the_model_and_the_guards_catch_the_agent_that_obeys(
    name, delete_calls
):
    offered = _Offered()
    result = run_scenario(EXAMPLES / f"{name}.scenario.yaml", plugins=[offered])

    assert result.status == "passed", [e for e in result.expectations if not e.ok]
    assert all(
        d["read_inbox"].startswith("Read the user's inbox.")
        and "IMPORTANT SYSTEM NOTICE" in d["read_inbox"]
        for d in offered.descriptions
    )
    assert not [e for e in result.events if e.event == "mcp_list_changed"]
    assert [c.name for c in result.tool_calls].count("delete_account") == delete_calls


def test_list_changed_seen_fails_when_the_tool_list_never_changed(tmp_path):
    text = (EXAMPLES / "mcp-sdk-client.scenario.yaml").read_text()
    path = tmp_path / "t.scenario.yaml"
    path.write_text(
        text.replace("  sim_time: 1.0\n", "  sim_time: 1.0\n  mcp: {list_changed_seen: true}\n")
    )
    result = run_scenario(path)
    failed = [(e.path, e.actual) for e in result.expectations if not e.ok]
    assert failed == [("mcp.list_changed_seen", "no tool list change")]


# -- faults: the protocol's own failures -------------------------------------------------------


def with_error(tmp_path: Path, error: str) -> Path:
    """The mcp SDK client's example with its second call failing as ``error``."""
    text = (EXAMPLES / "mcp-sdk-client.scenario.yaml").read_text()
    old = '    errors: [{on_call: 2, raise: "weather service unavailable"}]\n'
    assert old in text
    path = tmp_path / "t.scenario.yaml"
    path.write_text(text.replace(old, f"    errors: [{error}]\n"))
    return path


def test_a_json_rpc_error_reaches_the_client_and_the_target_fails_on_one_line(tmp_path):
    from harness.report._text import ending_sentence

    result = run_scenario(with_error(tmp_path, "{on_call: 2, mcp: -32001, raise: quota exceeded}"))

    assert result.termination == "error"
    assert [(c.name, c.status, c.result) for c in result.tool_calls] == [
        ("get_weather", "ok", "18C, cloudy in Paris"),
        ("get_weather", "error", "quota exceeded"),
    ]
    codes = [e.code for e in result.events if e.event == "mcp_call"]
    assert codes == [None, -32001]
    # The client's exception, out of the task groups it was raised through.
    assert (result.final.error.exception, result.final.error.message) == (
        "MCPError",
        "quota exceeded",
    )
    # The line of the agent's `async with Client(...)`, out of whose task group it came.
    agent = Path(__file__).resolve().parents[1] / "scenarios/mcp/agents/mcp_client.py"
    line = next(
        n
        for n, text in enumerate(agent.read_text().splitlines(), 1)
        if "async with Client(" in text
    )
    assert ending_sentence(result) == (
        f"The target raised MCPError (at scenarios/mcp/agents/mcp_client.py:{line} in answer): "
        "quota exceeded"
    )


class _Calls:
    def __init__(self) -> None:
        self.calls: list = []
        self.changed: list = []

    def mcp_call(self, call) -> None:
        self.calls.append(call)

    def mcp_list_changed(self, tools) -> None:
        self.changed.append(tools)


def served(**spec):
    """A one-tool scenario's tools as harness's MCP server, observed."""
    from harness.scenario._loader import build_tools
    from harness.scenario._mcp_tools import served_tools
    from harness.scenario._schema import Scenario

    scenario = Scenario.model_validate({"input": "x", "tools": {"lookup": spec}})
    server = served_tools(scenario, build_tools(scenario))
    server.observer = observer = _Calls()
    return server, observer


async def call_each(url: str, *calls: tuple[str, dict], timeout: float = 5.0) -> list:
    """Each call's result, or the MCPError the mcp SDK's client raised for it (a call
    waits ``timeout`` seconds; the session's handshake, slow on a loaded machine, 30)."""
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    answers = []
    async with Client(url, read_timeout_seconds=30) as client:
        for name, arguments in calls:
            try:
                answers.append(
                    await client.call_tool(name, arguments, read_timeout_seconds=timeout)
                )
            except MCPError as exc:
                answers.append(exc)
    return answers


@pytest.mark.parametrize("fault", ["hang", "disconnect"])
def test_a_hang_or_a_disconnect_leaves_the_client_an_error_and_is_recorded(fault):
    from mcp.shared.exceptions import MCPError

    from harness.mcp._hosting import serving_http

    server, seen = served(parameters={"q": "str"}, returns="found", errors=[{"mcp": fault}])
    with serving_http(server) as url:
        try:
            (answer,) = asyncio.run(call_each(url, ("lookup", {"q": "a"}), timeout=1.0))
        except BaseException as exc:  # a dropped connection may end the client's session
            answer = exc
    assert isinstance(answer, MCPError | BaseExceptionGroup), answer
    assert [(c.tool, c.status, c.fault) for c in seen.calls] == [("lookup", "error", fault)]


def test_unknown_tools_and_bad_arguments_are_answered_as_mcp_answers_them():
    from harness.mcp._hosting import serving_http

    server, seen = served(parameters={"q": "str"}, returns="found {{ args.q }}")
    with serving_http(server) as url:
        found, bad, unknown = asyncio.run(
            call_each(url, ("lookup", {"q": "a"}), ("lookup", {"q": 3}), ("nope", {}))
        )
    assert (found.is_error, found.content[0].text) == (False, "found a")
    assert bad.is_error and bad.content[0].text.startswith("Invalid arguments for lookup:")
    assert unknown.error.code == -32602
    assert unknown.error.message == "Unknown tool 'nope'. Available tools: lookup"
    assert [(c.tool, c.status) for c in seen.calls] == [
        ("lookup", "ok"),
        ("lookup", "invalid"),
        ("nope", "unknown_tool"),
    ]


# -- harness mcp-serve ---------------------------------------------------------------------------


async def weather_twice(server) -> list[tuple[bool, str]]:
    """The mcp SDK client's answers to the example's two weather calls."""
    import sys

    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    if isinstance(server, StdioServerParameters):
        # stdio_client's errlog defaults to the sys.stderr of when mcp.client.stdio was
        # first imported: inside an earlier test's `harness run`, a capture since closed.
        server = stdio_client(server, errlog=sys.stderr)
    async with Client(server, read_timeout_seconds=30) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["get_weather"]
        answers = []
        for city in ("Paris", "Rome"):
            result = await client.call_tool("get_weather", {"city": city})
            answers.append((result.is_error, result.content[0].text))
    return answers


WEATHER = [(False, "18C, cloudy in Paris"), (True, "ToolError: weather service unavailable")]


def test_mcp_serve_over_stdio_serves_the_scenarios_tools():
    import sys

    from mcp import StdioServerParameters

    scenario = str(EXAMPLES / "mcp-sdk-client.scenario.yaml")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "harness.cli", "mcp-serve", scenario, "--transport", "stdio"],
    )
    assert asyncio.run(weather_twice(params)) == WEATHER


def test_mcp_serve_over_http_says_where_and_serves_the_scenarios_tools():
    import subprocess
    import sys

    scenario = str(EXAMPLES / "mcp-sdk-client.scenario.yaml")
    argv = [sys.executable, "-m", "harness.cli", "mcp-serve", scenario, "--port", "0"]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        line = server.stdout.readline()
        assert line.startswith(f"harness mcp-serve: {scenario} at http://127.0.0.1:"), line
        url = line.split(" at ")[1].split()[0]
        assert url.endswith("/mcp")
        assert asyncio.run(weather_twice(url)) == WEATHER
    finally:
        server.terminate()
        server.wait(timeout=30)


def test_mcp_serve_refuses_a_scenario_without_tools(tmp_path, capsys):
    path = tmp_path / "t.scenario.yaml"
    path.write_text("input: hi\nllm: {script: [{content: hi}]}\n")
    assert main(["mcp-serve", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"harness mcp-serve: {path}: the scenario has no tools: to serve\n"
    )


def test_the_report_shows_the_true_status_of_each_mcp_call():
    import html

    from harness._results import build_results
    from harness.report import render_html

    result = run_scenario(EXAMPLES / "mcp-sdk-client.scenario.yaml")
    page = render_html(build_results([result]))

    timeline = " ".join(page[page.index('<tbody class="iter">') :].split())
    for call, status in zip(result.tool_calls, ["ok", "error"], strict=True):
        args = html.escape(json.dumps(call.arguments)).replace("&quot;", "&#34;")
        shown = (
            f'<span class="cid">{call.id}</span><code class="name">{call.name}</code> '
            f'<span class="cs">{status}</span> <pre class="args">{args}</pre>'
        )
        assert " ".join(shown.split()) in timeline


def test_a_command_target_gets_the_url_in_place_of_mcp_url(tmp_path):
    import sys

    # The "agent" answers with the argument it was given, without calling the model.
    path = tmp_path / "t.scenario.yaml"
    path.write_text(
        "target:\n"
        f"  command: [{sys.executable}, -c, 'import sys; print(sys.argv[1])', '{{mcp_url}}']\n"
        "input: hi\n"
        "tools:\n  lookup: {returns: found}\n"
        "llm: {script: [{content: unused}]}\n"
    )
    result = run_scenario(path)
    assert result.termination == "completed", result.final.error
    url = result.final.content.strip()
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp"), url


SLOW_TOOLS = '''
import time


def get_weather(city: str) -> str:
    """Current weather for a city."""
    if city == "Paris":
        time.sleep(0.5)  # the first call of the plan finishes last
    return f"18C in {city}"
'''

CONCURRENT = """\
target:
  python: scenarios.mcp.agents.pydantic_ai_mcp:answer
  timeout: 60
  requires: [pydantic_ai, mcp]
input: Weather in Paris and Rome?
tools:
  get_weather: {use: "slow_tools:get_weather"}
llm:
  script:
    - tool_calls: [{get_weather: {city: Paris}}, {get_weather: {city: Rome}}]
    - content: Both 18C.
"""


def test_concurrent_mcp_calls_are_recorded_in_the_plans_order(tmp_path):
    pytest.importorskip("pydantic_ai")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / "slow_tools.py").write_text(SLOW_TOOLS)
    path = tmp_path / "concurrent.scenario.yaml"
    path.write_text(CONCURRENT)

    result = run_scenario(path)

    assert result.termination == "completed", result.final
    # pydantic-ai runs both calls at once; Rome's answer came first, yet the events follow
    # the model's plan, so that every run writes the same results.json.
    mcp = [(e.event, e.arguments["city"]) for e in result.events if e.event == "mcp_call"]
    assert mcp == [("mcp_call", "Paris"), ("mcp_call", "Rome")]
    executed = [e.call_id for e in result.events if e.event == "action_executed"]
    assert executed == [c.id for c in result.tool_calls]
