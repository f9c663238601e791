"""What a new user met on the way from a first scenario to CI, each now said plainly: the
report's final.data / final.error as JSON (never a Python repr) and a crashed command's
stderr as its lines, in the report and in the terminal; a misspelt `requires:`; a YAML file
not named as a scenario; `validate` agreeing with `run`; did-you-mean and YAML hints;
`harness record` with nothing to record; `tool_calls.include` by status."""

from __future__ import annotations

import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runs import harness
from scenario_texts import SESSION_TESTS

from harness import cli
from harness._errors import ScenarioError
from harness.cli import COMMANDS
from harness.scenario import load_scenario, run_scenario

pytestmark = SESSION_TESTS

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def project(tmp_path, monkeypatch) -> Iterator[Path]:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n", encoding="utf-8")
    (tmp_path / "scenarios").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    # A python: target's module (agent.py) is imported from the project root, which joins
    # sys.path: both are forgotten after the test, as pytester does, or a later test's own
    # agent.py in the same process would be this one (without its function).
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]


def write(project: Path, name: str, text: str) -> Path:
    path = project / "scenarios" / name
    path.write_text(text, encoding="utf-8")
    return path


def load_error(path: Path) -> str:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    return str(caught.value)


STAGNATES = """\
name: stuck
input: hi
tools:
  ping: {parameters: {}, returns: pong}
agent: {stagnation: {window: 2}}
llm:
  script:
    - tool_calls: [{ping: {}}]
      repeat: 5
expect: {termination: stagnation}
"""

# A program that dies the way an agent missing its key does.
CRASHES = f"""\
name: crash
target:
  command: [{sys.executable}, -c, "import sys; sys.stderr.write('Traceback (most recent call last):\\\\n  File agent.py, line 3\\\\nKeyError: OPENAI_API_KEY\\\\n'); sys.exit(3)"]
input: hi
llm: {{script: [{{content: ok}}]}}
"""


def test_the_report_shows_final_data_and_error_as_json_and_stderr_as_its_lines(project, capsys):
    write(project, "stuck.scenario.yaml", STAGNATES)
    write(project, "crash.scenario.yaml", CRASHES)
    status, out = harness(capsys, "run", "--html", "r.html", "--json", "r.json")
    assert status == 1, out
    html = (project / "r.html").read_text(encoding="utf-8")
    # final.data of a stagnation, as results.json has it: JSON keys, not `stagnation=True`.
    assert "stagnation=True" not in html and "detector=None" not in html
    assert "&#34;stagnation&#34;: true" in html
    # The crashed command's stderr: a block of its lines, not one escaped JSON string.
    assert "\\nKeyError" not in html
    block = re.search(r'<div class="minor">stderr</div><pre class="log">(.*?)</pre>', html, re.S)
    assert block is not None
    assert block.group(1).splitlines()[-1] == "KeyError: OPENAI_API_KEY"
    assert "&#34;stderr&#34;" not in html.split('id="diff"')[0].split("Final response")[-1]


def test_a_crashed_command_targets_stderr_is_in_the_terminal(project, capsys):
    write(project, "crash.scenario.yaml", CRASHES)
    status, out = harness(capsys, "run")
    assert status == 1
    # In the failure, as the lines it wrote; its last line heads the failure (and so the
    # short test summary).
    assert "the target's stderr:\n  Traceback (most recent call last):" in out
    assert "\n    File agent.py, line 3\n  KeyError: OPENAI_API_KEY\n" in out
    assert "the command exited with status 3: KeyError: OPENAI_API_KEY" in out


TARGET = """\
target: {{python: "agent:answer", requires: [{requires}]}}
input: hi
llm: {{script: [{{content: ok}}]}}
"""


@pytest.mark.parametrize(
    ("requires", "expected"),
    [
        (
            "opneai",
            "'opneai' is neither an importable module nor a program on PATH (did you mean 'openai', which is installed?)",
        ),
        ("google.genia", "(did you mean 'google.genai', which is installed?)"),
        (
            "google-genai",
            "'google-genai' is an installed distribution, not a module: requires: names the module it imports ('google.genai')",
        ),
    ],
)
def test_a_misspelt_requirement_is_an_error_not_a_silent_skip(project, capsys, requires, expected):
    (project / "agent.py").write_text("def answer(q):\n    return 'ok'\n")
    path = write(project, "t.scenario.yaml", TARGET.format(requires=requires))
    message = load_error(path)
    assert message.startswith("scenarios/t.scenario.yaml:1: target.requires.0: ")
    assert expected in message
    status, out = harness(capsys, "run")
    assert status == 2 and expected in out  # a collection error, not a skip


def test_a_requirement_not_installed_still_skips_and_validate_says_so(project, capsys):
    (project / "agent.py").write_text("def answer(q):\n    return 'ok'\n")
    write(project, "t.scenario.yaml", TARGET.format(requires="framework_not_installed_here"))
    status, out = harness(capsys, "validate", "scenarios")
    assert status == 0, out
    assert (
        "skipped when run here: scenarios/t.scenario.yaml: the target needs "
        "'framework_not_installed_here', which is not installed"
    ) in out
    status, out = harness(capsys, "run")
    assert status == 0 and "1 skipped" in out


WEATHER = "input: hi\nllm: {script: [{content: ok}]}\nexpect: {termination: completed}\n"
HINT = "scenario files are named *.scenario.yaml: rename weather.yaml to weather.scenario.yaml"


def test_a_folder_of_misnamed_scenarios_gets_the_name_to_give_them(project, capsys):
    write(project, "weather.yaml", WEATHER)
    (project / "scenarios" / "docker-compose.yaml").write_text("services: {web: {image: x}}\n")
    status, out = harness(capsys, "run", "scenarios")
    assert status == 5
    assert (
        "harness run: no scenario files in scenarios, but 1 YAML file(s) there read like "
        f"scenarios: scenarios/weather.yaml; {HINT}"
    ) in out
    status, out = harness(capsys, "validate", "scenarios")
    assert status == 5 and HINT in out


def test_validate_and_run_agree_on_a_misnamed_file(project, capsys):
    write(project, "weather.yaml", WEATHER)
    for command in ("validate", "run"):
        status, out = harness(capsys, command, "scenarios/weather.yaml")
        assert status == 2, (command, out)
        assert "scenarios/weather.yaml: not a scenario file name" in out and HINT in out
    (project / "scenarios" / "weather.yaml").rename(project / "scenarios" / "weather.scenario.yml")
    for command in ("validate", "run"):
        status, out = harness(capsys, command, "scenarios/weather.scenario.yml")
        assert status == 0, (command, out)


def test_a_misspelt_option_gets_a_did_you_mean(project, capsys):
    status, out = harness(capsys, "run", "--updatebaseline")
    assert status == 2
    assert "unrecognized arguments: --updatebaseline (did you mean --update-baseline?)" in out


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "expect: {final: {contains: 72}}",
            "scenarios/h.scenario.yaml:3: expect.final.contains: expected a text or a list of "
            'texts, got the number 72: quote it to make it text (contains: "72")',
        ),
        (
            "tools: {lookup_order: {use: lookup_order}}",
            "scenarios/h.scenario.yaml:3: tools.lookup_order.use: unknown tool 'lookup_order' "
            "(known: none): a name alone is a tool a plugin registers (harness_register_tools); "
            'a function of your own is use: "module:function"',
        ),
        (
            "tools: {t: {parameters: {city: str}, returns: '{{ args.cty }}'}}",
            "scenarios/h.scenario.yaml:3: tools.t.returns: args.cty: no argument 'cty' (did you "
            "mean args.city?); arguments: city",
        ),
    ],
)
def test_load_errors_say_what_to_write(project, line, expected):
    path = write(
        project, "h.scenario.yaml", f"input: hi\nllm: {{script: [{{content: ok}}]}}\n{line}\n"
    )
    assert load_error(path).startswith(expected)


@pytest.mark.parametrize("word", ["yes", "on", "True"])
def test_a_yaml_boolean_where_text_goes_is_named_as_written(project, word):
    path = write(project, "h.scenario.yaml", f"input: {word}\nllm: {{script: [{{content: ok}}]}}\n")
    assert load_error(path) == (
        "scenarios/h.scenario.yaml:1: input: expected a valid string, got the boolean "
        f"{(word.lower() not in ('no', 'off') and 'true') or 'false'} (YAML reads an unquoted "
        f'{word} as one): quote it to make it text (input: "{word}")'
    )


def test_validate_finds_an_unknown_argument_in_a_template_before_a_run_would(project, capsys):
    write(
        project,
        "w.scenario.yaml",
        """\
input: hi
tools:
  get_weather:
    parameters: {city: str}
    returns: |
      It is sunny
      in {{ args.cty }}
llm:
  script:
    - tool_calls: [{get_weather: {city: SF}}]
    - content: ok
""",
    )
    status, out = harness(capsys, "validate", "scenarios")
    assert status == 2
    assert (
        "scenarios/w.scenario.yaml:7: tools.get_weather.returns: args.cty: no argument 'cty'" in out
    )


def test_record_of_a_scripted_scenario_says_there_is_nothing_to_record(project, capsys):
    write(project, "w.scenario.yaml", WEATHER)
    status, out = harness(capsys, "record", "scenarios")
    assert status == 0, out
    assert "harness record: nothing to record: the 1 scenario file(s) script their model" in out
    write(project, "r.scenario.yaml", "input: hi\nllm: {provider: openai, model: gpt-4o-mini}\n")
    cli.main(["record", "scenarios/r.scenario.yaml", "--disable-recording"])
    assert "nothing to record" not in capsys.readouterr().err


INCLUDE = """\
input: hi
tools:
  lookup: {{parameters: {{id: int}}, errors: [{{on_call: 1, raise: not found}}], returns: ok}}
llm:
  script:
    - tool_calls: [{{lookup: {{id: 1}}}}]
    - tool_calls: [{{lookup: {{id: 2}}}}]
    - content: done
expect:
  tool_calls:
    include: [{{name: lookup, args: {{id: {id}}}, status: {status}}}]
"""


@pytest.mark.parametrize(
    ("call", "status", "passes"),
    [(1, "error", True), (2, "ok", True), (1, "ok", False), (2, "error", False)],
)
def test_tool_calls_include_can_say_what_became_of_a_call(project, call, status, passes):
    path = write(project, "i.scenario.yaml", INCLUDE.format(id=call, status=status))
    result = run_scenario(path)
    assert (result.status == "passed") is passes, result.expectations
    if not passes:
        [unmet] = result.failed_expectations
        assert unmet.actual["missing"] == [
            {"name": "lookup", "args": {"id": call}, "status": status}
        ]


# -- the docs say what is true -------------------------------------------------------------


def test_the_readme_lists_every_command():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listing = readme[readme.index("## Running suites") :]
    for command in COMMANDS:
        assert re.search(rf"^harness {re.escape(command)}\b", listing, re.M), command


def test_running_md_gives_the_pydantic_floor_of_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    [floor] = [
        d.split(">=")[1] for d in project["project"]["dependencies"] if d.startswith("pydantic>=")
    ]
    running = (ROOT / "docs" / "running.md").read_text(encoding="utf-8")
    stated = re.findall(r"pydantic (\d+\.\d+)", running[running.index("## Supported versions") :])
    assert stated and set(stated) == {floor}


def test_running_md_says_scenario_yml_files_are_collected():
    running = (ROOT / "docs" / "running.md").read_text(encoding="utf-8")
    collection = running[running.index("### Collection") :][:1500]
    assert (
        "*.scenario.yml" in collection
        and "ignored" not in collection.split("*.scenario.yml")[1][:40]
    )


def test_scenarios_md_shows_simclock_sleep_in_a_real_tool(project):
    """The docs' example of a real tool spending simulated time runs as written."""
    text = (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    [code] = re.findall(r"```python\n(# file: sales_tools\.py\n.*?)```", text, re.S)
    [scenario] = re.findall(
        r"```yaml\n(# file: scenarios/slow\.scenario\.yaml\n.*?)```", text, re.S
    )
    (project / "sales_tools.py").write_text(code, encoding="utf-8")
    path = write(project, "slow.scenario.yaml", scenario)
    result = run_scenario(path)
    assert result.status == "passed", result.expectations
    assert result.sim_time == pytest.approx(2.5)
    assert result.tool_calls[0].result == {"region": "north", "sales": 1200}
