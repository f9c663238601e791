"""Bad scenario files: each kind gives `path:line: field: message`, no traceback, exit 2."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import ScenarioError
from harness.scenario import load_scenario

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
        5,
        "",
        "YAML syntax error",
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
        "'timeout'",
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
