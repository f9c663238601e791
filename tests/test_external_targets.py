"""Target kinds and how a target run ends: hangs, crashes, bad targets, skipped targets,
plugin target kinds and plugin exception classification (docs/external.md).

Each test writes a small project (pyproject.toml, an agent module, a scenario) and runs
it for real: the agent talks to harness's server on 127.0.0.1 through the openai SDK.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from harness import hookimpl
from harness._plugins import discover
from harness._results import build_results
from harness.cli import main
from harness.report import render_html
from harness.scenario import run_scenario

AGENT = '''
import asyncio, json, sys, threading, time
import openai

TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "properties": {"q": {"type": "string"}}}}}]


def _round(client, messages):
    reply = client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
    message = reply.choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    for call in message.tool_calls or []:
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "found " + call.function.arguments})
    return message


def loop(question):
    client = openai.OpenAI(max_retries=0)
    messages = [{"role": "user", "content": question}]
    while True:
        message = _round(client, messages)
        if not message.tool_calls:
            return message.content


def crash_after_a_round(question):
    client = openai.OpenAI(max_retries=0)
    messages = [{"role": "user", "content": question}]
    _round(client, messages)
    _round(client, messages)
    raise RuntimeError("the agent fell over")


async def hang_async(question):
    await asyncio.sleep(3600)


HUNG = []  # the threads hang_sync ran in


def hang_sync(question):
    HUNG.append(threading.current_thread())
    while True:
        time.sleep(0.02)


async def blocking_async(question):
    # Blocks its event loop (a sync call inside async code): a cancellation never lands.
    time.sleep(30)


async def loop_async(question):
    client = openai.AsyncOpenAI(max_retries=0)
    messages = [{"role": "user", "content": question}]
    while True:
        reply = await client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "found"})


def limit(question):
    class GraphRecursionError(Exception):
        pass

    loop_once = openai.OpenAI(max_retries=0)
    _round(loop_once, [{"role": "user", "content": question}])
    raise RuntimeError("gave up") from GraphRecursionError("Recursion limit of 1 reached")


class Budget(Exception):
    pass


def over_budget(question):
    raise Budget("spent it all")


# Built when the module is imported, before harness sets OPENAI_BASE_URL: it points
# elsewhere (port 9 on this machine: nothing listens there).
EARLY = openai.OpenAI(api_key="x", base_url="http://127.0.0.1:9/v1", max_retries=0)


def import_time_client(question):
    return EARLY.chat.completions.create(model="m", messages=[]).choices[0].message.content


def elsewhere_after_a_round(question):
    _round(openai.OpenAI(max_retries=0), [{"role": "user", "content": question}])
    return import_time_client(question)


def retried(question):
    client = openai.OpenAI(max_retries=2)
    return _round(client, [{"role": "user", "content": question}]).content


def chained(question, stream=False):
    """The Responses API, each request chained on the previous response's id."""
    client = openai.OpenAI(max_retries=0)
    tools = [{"type": "function", **TOOLS[0]["function"]}]
    asked = {"model": "m", "instructions": "Be brief.", "tools": tools, "input": question}
    while True:
        if stream:
            events = client.responses.create(**asked, stream=True)
            (response,) = [e.response for e in events if e.type == "response.completed"]
        else:
            response = client.responses.create(**asked)
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        asked["previous_response_id"] = response.id
        asked["input"] = [
            {"type": "function_call_output", "call_id": c.call_id, "output": "found " + c.arguments}
            for c in calls
        ]


def chained_streamed(question):
    return chained(question, stream=True)


def returns_none(question):
    return None


def bad_json(question):
    return json.loads("{not json")


def echo_command():
    """Run as a command: one round, then print the answer or fail."""
    question = sys.stdin.read()
    client = openai.OpenAI(max_retries=0)
    messages = [{"role": "user", "content": question}]
    _round(client, messages)
    if "fail" in question:
        sys.stderr.write("something broke\\nexit now\\n")
        sys.exit(3)
    print(_round(client, messages).content)


ANSWER = 42

if __name__ == "__main__":
    echo_command()
'''

SCRIPT = """\
llm:
  script:
    - tool_calls: [{lookup: {q: one}}, {lookup: {q: two}}]
    - content: Both found.
"""


@pytest.fixture
def project(tmp_path, monkeypatch, fresh_plugins):
    """A project folder with an agent module named after the test (imports are cached)."""
    name = "agent_" + "".join(c if c.isalnum() else "_" for c in tmp_path.name)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / f"{name}.py").write_text(AGENT)
    monkeypatch.chdir(tmp_path)
    yield tmp_path, name
    sys.modules.pop(name, None)


def scenario(folder: Path, text: str, name: str = "t") -> Path:
    path = folder / f"{name}.scenario.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def target(module: str, fn: str, extra: str = "") -> str:
    return f"target:\n  python: {module}:{fn}\n{extra}input: look both up\n"


def line_of(code: str) -> int:
    """The line of AGENT (as written to the project's module) that holds ``code``."""
    (number,) = [n for n, line in enumerate(AGENT.splitlines(), 1) if code in line]
    return number


def test_a_crash_mid_run_keeps_what_was_observed(project):
    folder, module = project
    result = run_scenario(scenario(folder, target(module, "crash_after_a_round") + SCRIPT))

    assert result.termination == "error"
    assert result.status == "error"
    assert result.final.error == {
        "type": "error",
        "exception": "RuntimeError",
        "message": "the agent fell over",
        "status": None,
        "where": f"{module}.py:{line_of('the agent fell over')} in crash_after_a_round",
    }
    assert result.llm_calls == 2
    assert [(c.arguments, c.result, c.status) for c in result.tool_calls] == [
        ({"q": "one"}, 'found {"q": "one"}', "ok"),
        ({"q": "two"}, 'found {"q": "two"}', "ok"),
    ]
    # The report shows the calls made before the crash.
    page = render_html(build_results([result]))
    assert "found {&#34;q&#34;: &#34;two&#34;}" in page


@pytest.mark.parametrize("fn", ["hang_async", "hang_sync"])
def test_a_hanging_python_target_is_stopped_at_its_timeout(project, fn):
    folder, module = project
    path = scenario(folder, target(module, fn, "  timeout: 0.5\n") + SCRIPT)
    started = time.monotonic()
    result = run_scenario(path)

    assert time.monotonic() - started < 20
    assert result.termination == "error"
    assert result.final.error["type"] == "timeout"
    assert result.final.error["message"] == (
        "the target did not finish within its timeout (0.5 s) and was stopped; raise "
        "target.timeout if it needs longer"
    )
    # A sync target's thread is interrupted, not left running (the idle threads of
    # earlier runs, kept for the next ones, are not its).
    hung = getattr(sys.modules[module], "HUNG", []) if fn == "hang_sync" else []
    assert len(hung) == (fn == "hang_sync")
    deadline = time.monotonic() + 10
    while any(t.is_alive() for t in hung):
        assert time.monotonic() < deadline, "the target's thread is still running"
        time.sleep(0.05)


def test_an_async_target_that_blocks_its_loop_does_not_hold_up_the_next(project):
    folder, module = project
    blocking = run_scenario(
        scenario(folder, target(module, "blocking_async", "  timeout: 0.5\n") + SCRIPT, "a")
    )
    assert blocking.final.error["type"] == "timeout"
    # The blocked loop is left to it; the next async target gets a loop of its own and runs
    # to its answer instead of waiting behind it (and timing out).
    after = run_scenario(
        scenario(folder, target(module, "loop_async", "  timeout: 5\n") + SCRIPT, "b")
    )
    assert (after.termination, after.final.content) == ("completed", "Both found.")


def test_a_hanging_command_is_killed_at_its_timeout(project):
    folder, _ = project
    code = "import os, time; open('pid', 'w').write(str(os.getpid())); time.sleep(60)"
    path = scenario(
        folder,
        # Long enough for the interpreter to start and write its pid on a loaded machine.
        f'target:\n  command: [{sys.executable}, -c, "{code}"]\n  timeout: 3\ninput: hi\n' + SCRIPT,
    )
    result = run_scenario(path)

    assert result.termination == "error"
    assert result.final.error["type"] == "timeout"
    pid = int((folder / "pid").read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_command_target_answers_on_stdout_and_fails_with_its_stderr(project):
    folder, module = project
    command = f"target:\n  command: [{sys.executable}, {module}.py]\n"
    done = run_scenario(scenario(folder, command + "input: look both up\n" + SCRIPT, "ok"))
    failed = run_scenario(scenario(folder, command + "input: fail please\n" + SCRIPT, "bad"))

    assert (done.termination, done.final.content, done.llm_calls) == ("completed", "Both found.", 2)
    assert [c.status for c in done.tool_calls] == ["ok", "ok"]
    assert failed.termination == "error"
    assert failed.final.error["message"] == "the command exited with status 3"
    assert failed.final.error["exit_status"] == 3
    assert failed.final.error["stderr"] == "something broke\nexit now"
    # What it did before failing is still observed.
    assert failed.llm_calls == 1
    assert [c.status for c in failed.tool_calls] == ["not_run", "not_run"]


def test_the_input_can_replace_a_placeholder_in_argv(project):
    folder, _ = project
    code = "import sys; print(sys.argv[1].upper())"
    path = scenario(
        folder,
        f'target:\n  command: [{sys.executable}, -c, "{code}", "{{input}}"]\ninput: hi there\n',
    )
    result = run_scenario(path)

    assert (result.termination, result.final.content, result.llm_calls) == (
        "completed",
        "HI THERE",
        0,
    )


def test_the_frameworks_limit_exceptions_are_recognized_by_name_also_as_a_cause(project):
    folder, module = project
    result = run_scenario(scenario(folder, target(module, "limit") + SCRIPT))

    assert result.termination == "max_iterations"
    assert result.final.error["type"] == "max_iterations"
    assert result.memory[-1] == {"kind": "final", "content": "gave up"}


def test_a_target_that_raises_is_blamed_with_the_line_of_its_own_code(project):
    from harness.report._text import ending_sentence, format_failure

    folder, module = project
    result = run_scenario(scenario(folder, target(module, "bad_json") + SCRIPT))

    # The innermost frame of the project's code, not the json module's where it raised.
    where = f"{module}.py:{line_of('json.loads(')} in bad_json"
    assert result.final.error["where"] == where
    heading = format_failure(result).splitlines()[0]
    assert heading == (
        f"scenario 't': the target raised JSONDecodeError (at {where}): Expecting property "
        "name enclosed in double quotes: line 1 column 2 (char 1)"
    )
    assert "harness bug" not in format_failure(result)
    assert ending_sentence(result).startswith(f"The target raised JSONDecodeError (at {where})")
    assert where in render_html(build_results([result]))


def test_a_timed_out_or_failed_command_target_is_not_blamed_on_harness(project):
    from harness.report._text import format_failure

    folder, module = project
    path = scenario(folder, target(module, "hang_async", "  timeout: 0.5\n") + SCRIPT)
    command = f"target:\n  command: [{sys.executable}, {module}.py]\ninput: fail please\n"
    failed = run_scenario(scenario(folder, command + SCRIPT, "bad"))

    assert format_failure(run_scenario(path)).splitlines()[0] == (
        "scenario 't': the target did not finish within its timeout (0.5 s) and was stopped; "
        "raise target.timeout if it needs longer"
    )
    assert "where" not in failed.final.error
    # The last line of its stderr says what broke (the whole of it is under it).
    assert format_failure(failed).splitlines()[:4] == [
        "scenario 'bad': the target failed: the command exited with status 3: exit now",
        "the target's stderr:",
        "  something broke",
        "  exit now",
    ]


def test_a_client_built_at_import_time_gets_a_hint(project):
    folder, module = project
    early = run_scenario(scenario(folder, target(module, "import_time_client") + SCRIPT))
    late = run_scenario(scenario(folder, target(module, "elsewhere_after_a_round") + SCRIPT))

    assert (early.llm_calls, early.final.error["exception"]) == (0, "APIConnectionError")
    assert early.final.error["message"] == (
        "Connection error. (no request reached harness's model server: the client talks to "
        "another server: it was given a base URL of its own, or built before harness set "
        "OPENAI_BASE_URL (ANTHROPIC_BASE_URL, ...), its module imported before harness "
        "loaded the scenario; build it inside the function, or take a base_url parameter: "
        "see docs/external.md#clients-built-when-the-module-is-imported)"
    )
    # Once a request reached harness, the client was not the problem.
    assert (late.llm_calls, late.final.error["message"]) == (1, "Connection error.")


def test_a_target_returning_none_gives_no_answer(project):
    from harness.report._text import ending_sentence

    folder, module = project
    text = target(module, "returns_none") + "llm: {script: [{content: hi}]}\n"
    path = scenario(folder, text + "expect: {final: {contains: None}}\n")
    result = run_scenario(path)

    assert (result.termination, result.final.content) == ("completed", None)
    assert result.status == "failed"  # "None" is not its answer
    assert ending_sentence(result) == "Completed without a final answer (the target returned None)"


def test_a_failed_call_the_sdk_retried_keeps_its_status_and_message(project):
    from harness.report._text import trajectory_lines

    folder, module = project
    script = "llm:\n  script:\n    - error: {status: 429, message: Rate limited}\n"
    path = scenario(folder, target(module, "retried") + script + "    - content: done\n")
    result = run_scenario(path)

    assert (result.termination, result.final.content, result.llm_calls) == ("completed", "done", 2)
    failed = [e for e in result.events if e["event"] == "llm_failed"]
    assert failed == [
        {
            "event": "llm_failed",
            "iteration": 1,
            "call": 1,
            "type": "http_error",
            "message": "Rate limited",
            "status": 429,
            "sim": 0.0,
        }
    ]
    assert trajectory_lines(result)[0] == "  1  llm#1 -> failed (HTTP 429: Rate limited)"
    assert "the call failed: HTTP 429: Rate limited" in render_html(build_results([result]))


@pytest.mark.parametrize("fn", ["chained", "chained_streamed"])
def test_a_chained_responses_run_keeps_its_whole_conversation(project, fn):
    folder, module = project
    result = run_scenario(scenario(folder, target(module, fn) + SCRIPT))

    assert (result.termination, result.final.content) == ("completed", "Both found.")
    # Each request sent only its new items: the conversation is rebuilt from the chain.
    assert [(m.role, m.content) for m in result.transcript] == [
        ("system", "Be brief."),
        ("user", "look both up"),
        ("assistant", None),
        ("tool", 'found {"q": "one"}'),
        ("tool", 'found {"q": "two"}'),
        ("assistant", "Both found."),
    ]
    assert [c.name for c in result.transcript[2].tool_calls] == ["lookup", "lookup"]
    assert [m.name for m in result.transcript[3:5]] == ["lookup", "lookup"]
    assert [(c.result, c.status) for c in result.tool_calls] == [
        ('found {"q": "one"}', "ok"),
        ('found {"q": "two"}', "ok"),
    ]


def test_the_report_shows_the_frameworks_limit_not_harnesss(project):
    from harness.report._text import ending_sentence

    folder, module = project
    result = run_scenario(scenario(folder, target(module, "limit") + SCRIPT))

    assert result.termination == "max_iterations"
    # harness's own max_iterations (its default) never applied to the target's loop.
    assert ending_sentence(result) == "Max iterations reached: RuntimeError: gave up"
    assert "Max iterations reached (" not in render_html(build_results([result]))


class _Budget:
    @hookimpl
    def harness_classify_exception(self, exc):
        return "max_iterations" if type(exc).__name__ == "Budget" else None


@pytest.mark.hooks("harness_classify_exception")
def test_a_plugin_classifies_its_frameworks_exception(project):
    folder, module = project
    path = scenario(folder, target(module, "over_budget") + SCRIPT)

    assert run_scenario(path).termination == "error"
    result = run_scenario(path, plugins=[_Budget()])
    assert result.termination == "max_iterations"
    # An ending a plugin classified is not a crash: no `where` (a line number would churn
    # in baselines).
    assert result.final.error == {
        "type": "max_iterations",
        "exception": "Budget",
        "message": "spent it all",
        "status": None,
    }


PLUGIN = '''
import openai
from harness import hookimpl


class Prefixed:
    """Target kind `prefixed`: one request with the value before the input."""

    def check(self, value, root):
        from harness.external import TargetError

        if not isinstance(value, str):
            raise TargetError("prefixed: takes a string")

    async def run(self, value, call):
        async with openai.AsyncOpenAI(base_url=call.base_url, api_key="x", max_retries=0) as client:
            reply = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": value + (call.input or "")}]
            )
        return reply.choices[0].message.content


@hookimpl
def harness_register_targets(register):
    register("prefixed", Prefixed)
'''


@pytest.mark.hooks("harness_register_targets")
def test_a_plugin_registers_a_target_kind(tmp_path, monkeypatch, fresh_plugins):
    (tmp_path / "pyproject.toml").write_text('[tool.harness]\nplugins = ["kinds_plugin"]\n')
    (tmp_path / "kinds_plugin.py").write_text(PLUGIN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = scenario(
        tmp_path,
        """\
        target: {prefixed: "Say: "}
        input: hello
        llm: {script: [{content: hello back}]}
        expect: {termination: completed, final: {equals: hello back}, llm_calls: 1}
        """,
    )
    result = run_scenario(path)
    plugins = discover(tmp_path)
    implemented = plugins.hook.harness_register_targets.get_hookimpls()
    sys.modules.pop("kinds_plugin", None)

    assert result.status == "passed"
    assert "kinds_plugin" in [impl.plugin_name for impl in implemented]
    assert plugins.registered["kinds_plugin"].targets == ["prefixed"]
    bad = scenario(tmp_path, "target: {prefixed: [1]}\ninput: x\n", "bad")
    assert main(["validate", str(bad)]) == 2


def validate(path: Path, capsys) -> tuple[int, str]:
    status = main(["validate", str(path)])
    return status, capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "target: {python: 'no_such_module_xyz:run'}\ninput: x\n",
            "t.scenario.yaml:1: target.python: cannot import 'no_such_module_xyz': "
            "ModuleNotFoundError: No module named 'no_such_module_xyz' (modules import from "
            "the project root)",
        ),
        (
            "target: {python: 'MODULE:ANSWER'}\ninput: x\n",
            "t.scenario.yaml:1: target.python: 'MODULE:ANSWER' is int 42, not a callable: point "
            "python: at a function called with the input",
        ),
        (
            "target: {python: 'MODULE:nothing_here'}\ninput: x\n",
            "t.scenario.yaml:1: target.python: module 'MODULE' has no attribute 'nothing_here'",
        ),
        (
            "target:\n  command: [no-such-program-xyz, run]\ninput: x\n",
            "t.scenario.yaml:2: target.command: command 'no-such-program-xyz' not found on PATH",
        ),
        (
            "target: {python: 'MODULE:loop'}\nagent: {planner: react}\ninput: x\n",
            "t.scenario.yaml:2: agent.planner: planner is a setting of harness's own loop and "
            "cannot apply to a target, which runs its own loop: remove it (only "
            "agent.stagnation applies)",
        ),
        (
            "target: {python: 'MODULE:loop'}\ninput: x\ntools:\n  lookup: {remote: \"http://127.0.0.1:9\"}\n",
            "t.scenario.yaml:4: tools.lookup.remote: a target gets the scenario's tools over MCP "
            "(docs/mcp.md): stubs, use: and code: tools are served, remote: tools are not; "
            "remove it",
        ),
        (
            "target: {python: 'MODULE:loop', command: [ls]}\ninput: x\n",
            "t.scenario.yaml:1: target: give exactly one target kind (command, python); given: "
            "python, command",
        ),
        (
            "target: {pyhton: 'MODULE:loop'}\ninput: x\n",
            "t.scenario.yaml:1: target.pyhton: unknown target kind 'pyhton' (known: command, "
            "python); did you mean 'python'?",
        ),
        (
            "target: {python: 'MODULE:loop', on_stagnation: halt}\ninput: x\n",
            "t.scenario.yaml:1: target.on_stagnation: expected 'observe' or 'stop'",
        ),
    ],
)
def test_bad_targets_are_errors_with_their_line(project, capsys, text, expected):
    folder, module = project
    path = scenario(folder, text.replace("MODULE", module))

    status, out = validate(path, capsys)

    assert status == 2
    assert out.splitlines()[0] == expected.replace("MODULE", module)


def test_a_target_needing_what_is_not_installed_is_skipped_with_the_reason(project):
    folder, module = project
    text = target(module, "loop", "  requires: [no_such_framework_xyz]\n") + SCRIPT
    scenario(folder, text.replace("loop", "missing_function"))

    checked = subprocess.run(
        [sys.executable, "-m", "harness.cli", "validate", "."],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    ran = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", ".", "--", "-rs"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1 skipped" in ran.stdout
    assert "the target needs 'no_such_framework_xyz', which is not installed" in ran.stdout


def test_stagnation_is_observed_without_changing_the_replies(project):
    folder, module = project
    path = scenario(
        folder,
        target(module, "loop")
        + "llm:\n  script:\n    - tool_calls: [{lookup: {q: same}}]\n      repeat: 5\n"
        "    - content: Done at last.\n",
    )
    result = run_scenario(path)

    assert (result.termination, result.final.content, result.llm_calls) == (
        "completed",
        "Done at last.",
        6,
    )
    signature = [["lookup", '{"q":"same"}']]
    assert result.final.data == {
        "stagnation_observed": {"iteration": 4, "signature": signature, "window": 3}
    }
    observed = [e for e in result.events if e["event"] == "stagnation_observed"]
    assert [e["iteration"] for e in observed] == [4, 5]


def _readme_block(first_line: str) -> str:
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    start = text.index(first_line)
    return text[start : text.index("```", start)]


def test_the_readmes_shortest_example_works(tmp_path, monkeypatch, fresh_plugins):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / "myagents").mkdir()
    (tmp_path / "myagents" / "weather.py").write_text(_readme_block("# myagents/weather.py"))
    path = tmp_path / "weather.scenario.yaml"
    path.write_text(_readme_block("# scenarios/weather.scenario.yaml"))
    monkeypatch.chdir(tmp_path)
    try:
        result = run_scenario(path)
    finally:
        for name in [m for m in sys.modules if m == "myagents" or m.startswith("myagents.")]:
            del sys.modules[name]

    assert result.status == "passed"
    assert result.final.content == "It is 18C in Paris."


OFF_THE_MACHINE = """
import openai
from google import genai


def vertex(question):
    client = genai.Client()  # kept: a client let go closes its connections
    return client.models.generate_content(model="gemini-2.5-flash", contents=question).text


def azure(question):
    client = openai.AzureOpenAI(api_version="2024-10-21", max_retries=0)
    messages = [{"role": "user", "content": question}]
    return client.chat.completions.create(model="gpt-4o", messages=messages).choices[0].message.content
"""


@pytest.mark.parametrize("fn", ["vertex", "azure"])
def test_the_users_vertex_and_azure_settings_never_reach_a_target(project, monkeypatch, fn):
    # A user's shell set up for Vertex AI or Azure OpenAI: a target's client that read
    # those variables would send its requests there, off 127.0.0.1. A server here stands
    # in for them: it must get nothing.
    import http.server

    folder, _ = project
    received: list[str] = []

    class Elsewhere(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(self.path)
            self.send_response(500)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    elsewhere = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Elsewhere)
    threading.Thread(target=elsewhere.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{elsewhere.server_address[1]}"
    user = {
        "GOOGLE_GENAI_USE_VERTEXAI": "true",
        "GOOGLE_CLOUD_PROJECT": "my-project",
        "GOOGLE_CLOUD_LOCATION": "us-central1",
        "GOOGLE_VERTEX_BASE_URL": url,
        # No credentials to find (none looked for on the network either).
        "GOOGLE_APPLICATION_CREDENTIALS": str(folder / "no-such-credentials.json"),
        "AZURE_OPENAI_ENDPOINT": url,
        "AZURE_OPENAI_API_KEY": "azure-key-0123456789",
        "OPENAI_API_VERSION": "2024-10-21",
    }
    for name, value in user.items():
        monkeypatch.setenv(name, value)
    module = f"offsite_{fn}_" + "".join(c if c.isalnum() else "_" for c in folder.name)
    (folder / f"{module}.py").write_text(OFF_THE_MACHINE)
    try:
        path = scenario(
            folder,
            f"target:\n  python: {module}:{fn}\ninput: hi\n"
            "llm:\n  script:\n    - content: Served by harness.\n",
        )
        result = run_scenario(path)
    finally:
        elsewhere.shutdown()
        elsewhere.server_close()
        sys.modules.pop(module, None)
    assert received == []
    if fn == "vertex":  # the Gemini API, served by harness
        assert result.final.content == "Served by harness.", result.final.error
    else:  # no Azure endpoint or key left: the client says so, and sends nothing
        assert result.termination == "error"
        assert "AZURE_OPENAI_API_KEY" in result.final.error.message
