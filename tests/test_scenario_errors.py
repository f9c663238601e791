"""Bad scenario files: each kind gives `path:line: field: message`, no traceback, exit 2."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness._errors import ScenarioError
from harness.cli import main
from harness.scenario import build_tools, load_scenario, run_scenario

GOOD = """\
name: ok
tools:
  get_weather:
    parameters: {city: str}
    returns: "sunny in {{ args.city }}"
llm:
  script:
    - tool_calls: [{get_weather: {city: SF}}]
    - content: Sunny.
"""


def write(tmp_path: Path, text: str, name: str = "case.scenario.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


# (description, file text, expected line, expected field, a fragment of the message)
CASES = [
    (
        "yaml syntax",
        'name: x\nllm:\n  script:\n    - content: "unterminated\n',
        4,  # where the quote opens, not the end of the file where YAML noticed
        "",
        "YAML syntax error",
    ),
    (
        "a value with ': ' that is not quoted",
        "name: x\ninput: Note: it rains\n",
        2,
        "",
        "YAML syntax error at column 12: mapping values are not allowed in this context; "
        "a value containing ': ' must be quoted: write input: \"Note: it rains\"",
    ),
    (
        "a key indented more than its siblings",
        "name: x\nagent:\n  planner: react\n   max_iterations: 3\n",
        4,
        "",
        "this line is indented more than line 3 above it",
    ),
    (
        "a quoted string never closed",
        'name: x\nllm:\n  script:\n    - content: "unterminated\n    - content: ok\n',
        4,
        "",
        "the quoted string that starts at line 4, column 16 is never closed",
    ),
    (
        "a dedented key read as a top-level key",
        "name: x\nexpect:\n  termination: completed\nfinal: {contains: x}\n",
        4,
        "final",
        "unknown key 'final'; 'final' is read as a key of the top level (by its "
        "indentation); if it belongs to 'expect' above, indent it under 'expect'",
    ),
    (
        "a dedented stub key read as a tool",
        "name: x\ntools:\n  get_weather:\n    parameters: {city: str}\n  returns: 72F\n",
        5,
        "tools.returns",
        "'returns' is read as a key of 'tools' (by its indentation); if it belongs to "
        "'get_weather' above, indent it under 'get_weather'",
    ),
    (
        "unknown key",
        "name: x\ntools:\n  t:\n    parameters: {a: str}\n    retruns: 1\n",
        5,
        "tools.t.retruns",
        "unknown key 'retruns' (did you mean 'returns'?)",
    ),
    (
        "wrong type",
        "name: x\nagent:\n  max_iterations: lots\n",
        3,
        "agent.max_iterations",
        "valid integer",
    ),
    (
        "undefined tool in script",
        "name: x\ntools:\n  get_weather: {parameters: {city: str}}\nllm:\n  script:\n"
        "    - content: hi\n    - tool_calls: [{get_wether: {city: SF}}]\n",
        7,
        "llm.script.1.tool_calls.0",
        "calls tool 'get_wether', which the scenario does not define (did you mean 'get_weather'?)",
    ),
    (
        "template that does not parse",
        "name: x\ntools:\n  t:\n    parameters: {a: str}\n    returns:\n      ok: fine\n"
        "      broken: '{{ args.a '\n",
        7,
        "tools.t.returns.broken",
        "template does not parse",
    ),
    (
        "unknown planner",
        "name: x\nagent:\n  planner: reactt\n",
        3,
        "agent.planner",
        "unknown planner 'reactt'",
    ),
    (
        "use target that does not import",
        "name: x\ntools:\n  real:\n    use: no_such_module_xyz:fn\n",
        4,
        "tools.real.use",
        "cannot import 'no_such_module_xyz'",
    ),
    (
        "unknown short-form type",
        "name: x\ntools:\n  t:\n    parameters: {a: strng}\n",
        4,
        "tools.t.parameters.a",
        "unknown type 'strng'",
    ),
    (
        "duplicate key",
        "name: x\nname: y\n",
        2,
        "name",
        "duplicate key 'name'",
    ),
    (
        "unknown expectation",
        "name: x\nexpect:\n  termination: completed\n  finall: {contains: x}\n",
        4,
        "expect.finall",
        "unknown expectation 'finall' (did you mean 'final'?)",
    ),
    (
        "tag pytest -m cannot select",
        "name: x\ntags: [ok, not ok]\n",
        2,
        "tags.1",
        "cannot be selected with pytest -m",
    ),
    (
        "not a mapping",
        "- a\n- b\n",
        1,
        "",
        "a scenario file is a mapping",
    ),
    (
        "a provider that rejects its config",
        "name: x\nllm:\n  provider: openai\n",
        2,
        "llm",
        "provider openai needs llm.model",
    ),
    (
        "bad error step",
        "name: x\nllm:\n  script:\n    - error: teapot\n",
        4,
        "llm.script.0.error",
        "expected an HTTP error or timeout: write error: {status: 429} (and a message: if you "
        "like) or error: timeout",
    ),
    (
        "infinite tool latency",
        "name: x\ntools:\n  t:\n    latency: .inf\n",
        4,
        "tools.t.latency",
        ".inf is not a finite number",
    ),
    (
        "nan script latency",
        "name: x\nllm:\n  script:\n    - content: hi\n      latency: .nan\n",
        5,
        "llm.script.0.latency",
        ".nan is not a finite number",
    ),
    (
        "infinite expect bound",
        "name: x\nexpect:\n  sim_time: {max: .inf}\n",
        3,
        "expect.sim_time.max",
        "not a finite number",
    ),
    (
        "use target without a signature",
        "name: x\ntools:\n  a: {use: 'collections:OrderedDict'}\n",
        3,
        "tools.a.use",
        "cannot use 'collections:OrderedDict' as a tool: no signature found",
    ),
    (
        "use target whose parameters have no JSON Schema",
        "name: x\ntools:\n  a:\n    use: 'harness:tool'\n",
        4,
        "tools.a.use",
        "cannot use 'harness:tool' as a tool: ",
    ),
    (
        "use target that is not callable",
        "name: x\ntools:\n  a:\n    use: 'os.path:sep'\n",
        4,
        "tools.a.use",
        "cannot use 'os.path:sep' as a tool: it is a builtins.str object, not a function",
    ),
    (
        "template naming an unknown variable",
        "name: x\ntools:\n  t:\n    returns: '{{ argz.city }}'\n",
        4,
        "tools.t.returns",
        "unknown name 'argz' (templates see args, call, faker)",
    ),
    (
        "unknown name on a line of a block template",
        "name: x\ntools:\n  t:\n    returns: |\n      one\n      {{ fakr.name() }}\n",
        6,
        "tools.t.returns",
        "unknown name 'fakr'",
    ),
    (
        "template that does not parse in a block scalar",
        "name: x\ntools:\n  t:\n    returns: |\n      {{ oops\n",
        5,
        "tools.t.returns",
        "template does not parse",
    ),
    (
        "exact without sequence",
        "name: x\nexpect:\n  tool_calls: {exact: true}\n",
        3,
        "expect.tool_calls",
        "give sequence too",
    ),
    (
        "two errors on one call",
        "name: x\ntools:\n  t:\n    errors:\n      - {on_call: 1, raise: a}\n"
        "      - {on_call: 1, raise: b}\n",
        6,
        "tools.t.errors.1.on_call",
        "call 1 already has an error",
    ),
    (
        "two results for one call",
        "name: x\ntools:\n  t:\n    results:\n      - {on_call: 2, returns: a}\n"
        "      - {on_call: 2, returns: b}\n",
        6,
        "tools.t.results.1.on_call",
        "call 2 already has a result",
    ),
    (
        "duplicate call id in one step",
        "name: x\ntools: {t: {}}\nllm:\n  script:\n    - tool_calls:\n"
        "        - {id: same, name: t}\n        - {id: same, name: t}\n",
        7,
        "llm.script.0.tool_calls.1.id",
        "duplicate call id 'same'",
    ),
    (
        "unknown finish_reason",
        "name: x\nllm:\n  script:\n    - content: ok\n      finish_reason: banana\n",
        5,
        "llm.script.0.finish_reason",
        "unknown finish_reason 'banana'",
    ),
    (
        "a boolean as max_iterations",
        "name: x\nagent:\n  max_iterations: true\n",
        3,
        "agent.max_iterations",
        "valid integer",
    ),
    (
        "a boolean as repeat",
        "name: x\nllm:\n  script:\n    - content: ok\n      repeat: true\n",
        5,
        "llm.script.0.repeat",
        "valid integer",
    ),
    (
        "a number as parallel_tools",
        "name: x\nagent:\n  parallel_tools: 1\n",
        3,
        "agent.parallel_tools",
        "valid boolean",
    ),
    (
        "a tool name the API rejects",
        "name: x\ntools:\n  get weather!: {returns: a}\n",
        3,
        "tools.get weather!",
        "not accepted by the OpenAI API",
    ),
    (
        "negative sim_time",
        "name: x\nexpect:\n  sim_time: -1\n",
        3,
        "expect.sim_time",
        "-1 is negative",
    ),
    (
        "fractional iterations",
        "name: x\nexpect:\n  iterations: 2.5\n",
        3,
        "expect.iterations",
        "2.5 is not a whole number",
    ),
    (
        "expected tool the script never calls",
        "name: x\ntools: {get_weather: {}}\nllm:\n  script:\n    - tool_calls: [{get_weather: {}}]\n"
        "expect:\n  tool_calls:\n    count: {get_wether: 0}\n",
        8,
        "expect.tool_calls.count.get_wether",
        "no call can be to 'get_wether': the script never calls it (did you mean 'get_weather'?)",
    ),
    (
        "expected parallel group naming an undefined tool",
        "name: x\nexpect:\n  parallel_groups:\n    - [a, b]\n",
        4,
        "expect.parallel_groups.0.0",
        "no call can be to 'a'",
    ),
    (
        "requested tools naming an undefined tool",
        "name: x\ntools: {t: {}}\nexpect:\n  requests:\n    - call: 1\n      tools: [t, u]\n",
        6,
        "expect.requests.0.tools.1",
        "'u' is not one of the scenario's tools",
    ),
    (
        "a default that does not match its type",
        "name: x\ntools:\n  t:\n    parameters:\n      a: {type: int, default: abc}\n",
        5,
        "tools.t.parameters.a.default",
        "default 'abc' is not a int",
    ),
    (
        "dict type without a value type",
        "name: x\ntools:\n  t:\n    parameters: {a: 'dict[str]'}\n",
        4,
        "tools.t.parameters.a",
        "dict[str, T]",
    ),
    (
        "a JSON Schema whose type is not object",
        "name: x\ntools:\n  t:\n    schema: {type: string}\n",
        4,
        "tools.t.schema.type",
        "a tool's arguments are a JSON object",
    ),
    (
        "a tab",
        "name: x\nagent:\n\tplanner: react\n",
        3,
        "",
        "a tab character; YAML indents with spaces only",
    ),
    (
        "a key YAML 1.1 reads as a boolean",
        "name: x\non: push\n",
        2,
        "on",
        "unknown key 'on'",
    ),
    (
        "two tools in one call mapping",
        "name: x\ntools: {t: {}, u: {}}\nllm:\n  script:\n    - tool_calls:\n"
        "        - {t: {}, u: {}}\n",
        6,
        "llm.script.0.tool_calls.0",
        "one tool per mapping",
    ),
    (
        "a control character",
        "name: x\ninput: 'a\x01b'\n",
        2,
        "",
        "character #x0001 is not allowed",
    ),
    (
        "a history item that is not a message",
        "name: x\nhistory:\n  - {role: user, content: hi}\n  - {role: robot, content: x}\n",
        4,
        "history.1",
        "unknown message role 'robot'",
    ),
]


@pytest.mark.parametrize(
    ("kind", "text", "line", "field", "fragment"), CASES, ids=[c[0] for c in CASES]
)
def test_bad_file_message_names_line_and_field(tmp_path, kind, text, line, field, fragment):
    path = write(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    prefix = f"{path.as_posix()}:{line}: " + (f"{field}: " if field else "")
    matching = [m for m in message.splitlines() if m.startswith(prefix)]
    assert matching, f"no line starts with {prefix!r} in:\n{message}"
    assert any(fragment in m for m in matching), message
    assert "Traceback" not in message
    assert "errors.pydantic.dev" not in message


@pytest.mark.parametrize(
    ("kind", "text", "line", "field", "fragment"), CASES, ids=[c[0] for c in CASES]
)
def test_validate_command_exits_2_without_traceback(
    tmp_path, capsys, kind, text, line, field, fragment
):
    path = write(tmp_path, text)
    assert main(["validate", str(path)]) == 2
    out, err = capsys.readouterr()
    printed = out + err
    assert f":{line}: " in printed
    assert fragment in printed
    assert "Traceback" not in printed


@pytest.fixture
def project(pytester, monkeypatch):
    """A throw-away project where `harness run` runs in this process (as test_cli does)."""
    from harness import _plugins as plugins

    plugins.discovery.reset()
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (pytester.path / "scenarios").mkdir()
    monkeypatch.chdir(pytester.path)
    yield pytester.path
    plugins.discovery.reset()


@pytest.mark.filterwarnings("ignore:Benchmarks are automatically disabled")
@pytest.mark.parametrize(
    ("kind", "text", "line", "field", "fragment"), CASES, ids=[c[0] for c in CASES]
)
def test_run_command_exits_2_with_the_message(project, capsys, kind, text, line, field, fragment):
    (project / "scenarios" / "ok.scenario.yaml").write_text(GOOD, encoding="utf-8")
    (project / "scenarios" / "bad.scenario.yaml").write_text(text, encoding="utf-8")
    assert main(["run"]) == 2
    out, err = capsys.readouterr()
    prefix = f"scenarios/bad.scenario.yaml:{line}: " + (f"{field}: " if field else "")
    own = [m for m in out.splitlines() if m.startswith(prefix)]
    assert own and any(fragment in m for m in own), out + err
    assert "Traceback" not in out + err


def test_use_of_an_object_that_is_no_function_names_it_by_import_path(tmp_path, monkeypatch):
    (tmp_path / "lock_holder_for_use_test.py").write_text(
        "import threading\nLOCK = threading.Lock()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    path = write(tmp_path, "name: x\ntools:\n  a: {use: 'lock_holder_for_use_test:LOCK'}\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    assert message == (
        f"{path.as_posix()}:3: tools.a.use: cannot use 'lock_holder_for_use_test:LOCK' as a "
        "tool: it is a _thread.lock object, not a function; point use: at a function or a @tool"
    )  # no repr, whose memory address would change from run to run


def test_a_file_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "latin1.scenario.yaml"
    path.write_bytes("name: x\ninput: caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == (
        f"{path.as_posix()}:2: the file is not UTF-8 (byte e9 at column 11): save it as UTF-8"
    )


def test_keys_stay_the_strings_written(tmp_path):
    # YAML 1.1 reads `on`, `no`, `1.0` as a boolean and a float: as keys they are names.
    path = write(
        tmp_path,
        """\
        name: x
        input: go
        agent: {planner: react}
        tools:
          t:
            parameters: {on: str, no: int, 1.0: bool}
            returns: "{{ args.on }} {{ args.no }} {{ args['1.0'] }}"
        llm:
          script:
            - tool_calls: [{t: {on: a, no: 1, 1.0: true}}]
            - content: done
        """,
    )
    schema = build_tools(load_scenario(path))["t"].parameters
    assert sorted(schema["properties"]) == ["1.0", "no", "on"]
    assert run_scenario(path).tool_calls[0].result == "a 1 True"


def test_every_problem_is_reported_at_once(tmp_path):
    path = write(
        tmp_path,
        """\
        name: x
        agent: {planner: nope}
        tools:
          a: {parameters: {x: strr}}
          b: {returns: "{{ oops"}
        llm:
          script:
            - tool_calls: [{c: {}}]
        """,
    )
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    fields = [issue[2] for issue in info.value.issues]
    assert fields == [
        "agent.planner",
        "tools.a.parameters.x",
        "tools.b.returns",
        "llm.script.0.tool_calls.0",
    ]


def test_validate_accepts_good_files_and_folders(tmp_path, capsys):
    write(tmp_path, GOOD, "a.scenario.yaml")
    write(tmp_path, GOOD.replace("name: ok", "name: ok2"), "b.scenario.yaml")
    assert main(["validate", str(tmp_path)]) == 0
    assert "2 scenario" in capsys.readouterr().out


def test_unknown_tools_true_allows_a_hallucinated_name(tmp_path):
    path = write(
        tmp_path,
        """\
        name: x
        tools: {get_weather: {parameters: {city: str}}}
        llm:
          script:
            - tool_calls: [{get_wether: {city: SF}}]
              unknown_tools: true
        """,
    )
    assert load_scenario(path).llm.script[0].unknown_tools


def test_scripted_provider_rejects_cassette_keys(tmp_path):
    path = write(tmp_path, "name: x\nllm:\n  cassette: c.yaml\n")
    with pytest.raises(ScenarioError, match=r"llm\.cassette: cassette is for recorded models"):
        load_scenario(path)


def test_missing_history_file_is_reported(tmp_path):
    path = write(tmp_path, "name: x\nhistory: saved.json\n")
    with pytest.raises(ScenarioError, match=r":2: history: cannot read history file"):
        load_scenario(path)


def test_unreadable_path_is_a_scenario_error(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read the file"):
        load_scenario(tmp_path / "missing.scenario.yaml")


def test_validate_reports_every_problem_of_a_file_in_one_run(tmp_path):
    # A typo in the schema and one in an expectation key (checked against the plugins'
    # registry, after the schema) are both shown the first time.
    path = write(
        tmp_path,
        "name: two\ninput: hi\nagent: {max_iteration: 3}\nexpect:\n  terminaton: completed\n",
    )
    with pytest.raises(ScenarioError) as raised:
        load_scenario(path)
    assert [(line, field) for _, line, field, _ in raised.value.issues] == [
        (3, "agent.max_iteration"),
        (5, "expect.terminaton"),
    ]
    assert "unknown key 'max_iteration' (did you mean 'max_iterations'?)" in str(raised.value)
    assert "unknown expectation 'terminaton' (did you mean 'termination'?)" in str(raised.value)


@pytest.mark.parametrize(
    ("expect", "message"),
    [
        ("iterations: true", "expected a whole number or bounds like {min: 1, max: 5}"),
        ("sim_time: [1]", "expected a number or bounds like {min: 1, max: 5}"),
    ],
)
def test_a_bad_count_or_range_says_what_bounds_look_like(tmp_path, expect, message):
    path = write(tmp_path, f"name: x\ninput: hi\nexpect:\n  {expect}\n")
    with pytest.raises(ScenarioError) as raised:
        load_scenario(path)
    assert str(raised.value).endswith(message), str(raised.value)
