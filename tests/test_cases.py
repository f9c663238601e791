"""``cases:`` and ``extends:`` (docs/scenarios.md#cases, #extends): one item per case with
its own id (inline, from a .csv or a .jsonl file), ``{{ case.KEY }}`` in inputs, script
texts, expectations and stub templates, case keys merged over the scenario's; a file
starting from another's keys; every mistake a line naming the file, the line and the case.
The cases work in results, baselines, the report, ``-k``, shards and ``harness freeze``.

``harness run`` runs in this process (pytest.main, as the command does); recording goes
through ``harness serve`` on 127.0.0.1 with the real openai SDK.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cli_runs import harness
from scenario_texts import SESSION_TESTS

from harness._errors import HarnessError, ScenarioError
from harness._results import Results
from harness.scenario import load_scenario, run_scenario
from harness.scenario._schema import json_schema
from harness.serve import running_server

pytestmark = SESSION_TESTS

FILE = "scenarios/weather.scenario.yaml"

INLINE = """\
name: weather
input: "What's the weather in {{ case.city }}?"
tools:
  get_weather:
    parameters: {city: str}
    returns: "{{ case.temp }}F in {{ args.city }}"
llm:
  script:
    - tool_calls: [{get_weather: {city: "{{ case.city }}"}}]
    - content: "It is {{ case.temp }}F in {{ case.city }}."
expect:
  termination: completed
  final: {contains: "{{ case.temp }}F"}
  tool_calls: {count: {get_weather: "{{ case.calls }}"}}
cases:
  - {id: sf, city: SF, temp: 72, calls: 1}
  - id: oslo
    city: Oslo
    temp: 41
    calls: 1
    expect: {iterations: 4}
"""


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.harness]\n", encoding="utf-8")
    (tmp_path / "scenarios").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return tmp_path


def write(root: Path, name: str, text: str) -> Path:
    path = root / "scenarios" / name
    path.write_text(text, encoding="utf-8")
    return path


def errors_of(path: Path) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    return str(caught.value).splitlines()


# -- one item per case ----------------------------------------------------------------------


def test_inline_cases_run_as_one_item_each_with_its_id_and_its_values(project, capsys):
    write(project, "weather.scenario.yaml", INLINE)
    status, out = harness(capsys, "run", "--json", "r.json", "--", "-v")
    assert status == 0, out
    assert f"{FILE}::weather[sf] PASSED" in out and f"{FILE}::weather[oslo] PASSED" in out
    results = {s.id: s for s in Results.load(project / "r.json").scenarios}
    assert sorted(results) == [f"{FILE}::weather[oslo]", f"{FILE}::weather[sf]"]
    oslo = results[f"{FILE}::weather[oslo]"]
    assert (oslo.case, oslo.name, oslo.status) == ("oslo", "weather[oslo]", "passed")
    # The input, the script's texts and the stub's template (with args) read the case.
    assert oslo.transcript[0].content == "What's the weather in Oslo?"
    assert oslo.tool_calls[0].arguments == {"city": "Oslo"}
    assert oslo.tool_calls[0].result == "41F in Oslo"
    assert oslo.final.content == "It is 41F in Oslo."
    # The case's expect is merged over the scenario's: both hold.
    paths = {e.path: e for e in oslo.expectations}
    assert paths["iterations"].expected == 4
    assert paths["final.contains"].expected == ["41F"]
    assert "termination" in paths
    # `{{ case.calls }}` alone takes the value itself: a number, not the text "1".
    assert paths["tool_calls.count"].expected == {"get_weather": 1}
    assert "iterations" not in {e.path for e in results[f"{FILE}::weather[sf]"].expectations}


def test_a_failing_case_fails_alone_and_names_its_id(project, capsys):
    write(project, "weather.scenario.yaml", INLINE.replace("calls: 1}", "calls: 2}", 1))
    status, out = harness(capsys, "run", "--json", "r.json")
    assert status == 1, out
    statuses = {s.case: s.status for s in Results.load(project / "r.json").scenarios}
    assert statuses == {"sf": "failed", "oslo": "passed"}
    assert f"FAILED {FILE}::weather[sf]" in out


CSV_SCENARIO = """\
name: capitals
input: "What is the capital of {{ case.country }}?"
llm:
  script:
    - content: "The capital is {{ case.capital }}."
expect:
  final: {contains: "{{ case.capital }}"}
  iterations: 2
cases: capitals.csv
"""

CSV = """\
id,country,capital,expect.iterations
fr,France,Paris,
"no, sweden",Sweden,Stockholm,
jp,Japan,Tokyo,
"""


def test_cases_from_a_csv_file_run_one_item_per_row(project, capsys):
    write(project, "capitals.scenario.yaml", CSV_SCENARIO)
    write(project, "capitals.csv", CSV)
    status, out = harness(capsys, "run", "--json", "r.json")
    assert status == 0, out
    results = Results.load(project / "r.json").scenarios
    assert [s.id for s in results] == [
        "scenarios/capitals.scenario.yaml::capitals[fr]",
        "scenarios/capitals.scenario.yaml::capitals[jp]",
        "scenarios/capitals.scenario.yaml::capitals[no, sweden]",
    ]
    assert [s.final.content for s in results] == [
        "The capital is Paris.",
        "The capital is Tokyo.",
        "The capital is Stockholm.",
    ]
    # An empty cell leaves the scenario's value (expect.iterations: 2) as it is.
    assert all(e.expected == 2 for s in results for e in s.expectations if e.path == "iterations")


def test_a_csv_column_dotted_into_a_scenario_key_is_merged_and_its_errors_name_the_row(project):
    path = write(project, "capitals.scenario.yaml", CSV_SCENARIO)
    write(project, "capitals.csv", CSV.replace("jp,Japan,Tokyo,", "jp,Japan,Tokyo,three"))
    assert errors_of(path) == [
        "scenarios/capitals.csv:4: expect.iterations: expected a whole number or bounds like "
        "{min: 1, max: 5} (case 'jp') (CSV cells are text: give numbers, lists and mappings "
        "in a .jsonl file)"
    ]


def test_cases_from_a_jsonl_file_keep_their_types(project, capsys):
    write(project, "capitals.scenario.yaml", CSV_SCENARIO.replace(".csv", ".jsonl"))
    write(
        project,
        "capitals.jsonl",
        '{"id": "fr", "country": "France", "capital": "Paris"}\n\n'
        '{"id": "jp", "country": "Japan", "capital": "Tokyo", "expect": {"iterations": 2}}\n',
    )
    status, out = harness(capsys, "run", "--json", "r.json")
    assert status == 0, out
    assert [s.case for s in Results.load(project / "r.json").scenarios] == ["fr", "jp"]


@pytest.mark.parametrize(
    ("cases", "files", "expected"),
    [
        ("cases: 3", {}, "scenarios/c.scenario.yaml:4: cases: expected a list of cases"),
        ("cases: []", {}, "scenarios/c.scenario.yaml:4: cases: no cases: give at least one"),
        (
            "cases: nope.csv",
            {},
            "scenarios/c.scenario.yaml:4: cases: nope.csv: no such file (looked for "
            "scenarios/nope.csv, beside the scenario)",
        ),
        (
            "cases: c.txt",
            {"c.txt": "x"},
            "scenarios/c.scenario.yaml:4: cases: c.txt: a cases file is .jsonl",
        ),
        (
            "cases: c.jsonl",
            {"c.jsonl": '{"id": "a"}\n{"id": "b",\n'},
            "scenarios/c.jsonl:2: not a JSON object: ",
        ),
        (
            "cases: c.jsonl",
            {"c.jsonl": '{"id": "a"}\n[1, 2]\n'},
            "scenarios/c.jsonl:2: each line is a JSON object",
        ),
        (
            "cases: c.csv",
            {"c.csv": "id,city\na,SF,x\n"},
            "scenarios/c.csv:2: 3 cells, but the header names 2 columns",
        ),
        (
            "cases: c.csv",
            {"c.csv": "id,city,city\na,SF,LA\n"},
            "scenarios/c.csv:1: column 'city' is named twice",
        ),
        (
            "cases: [{id: a}, {id: a}]",
            {},
            "scenarios/c.scenario.yaml:4: id: case id 'a' is taken by case 1",
        ),
        (
            "cases: [{id: 'a[1]'}]",
            {},
            "scenarios/c.scenario.yaml:4: id: case id 'a[1]': ids are at most 100 characters, "
            "without [, ], :: or line breaks",
        ),
        (
            "cases: [{id: a, name: other}]",
            {},
            "scenarios/c.scenario.yaml:4: name: a case cannot set 'name': it is the scenario",
        ),
        ("cases: [3]", {}, "scenarios/c.scenario.yaml:4: a case is a mapping"),
        (
            "cases: [{id: a, inptu: hello}]",
            {},
            "scenarios/c.scenario.yaml:4: inptu: 'inptu' is no scenario key (did you mean "
            "'input'?) and no {{ case.inptu }} reads it (case 'a')",
        ),
    ],
)
def test_bad_cases_are_one_line_each_naming_file_line_and_field(project, cases, files, expected):
    for name, text in files.items():
        write(project, name, text)
    path = write(
        project, "c.scenario.yaml", f"input: hi\nllm:\n  script: [{{content: ok}}]\n{cases}\n"
    )
    [line] = errors_of(path)
    assert line.startswith(expected), line


def test_a_text_reading_a_key_no_case_has_is_said_once_with_a_hint(project):
    path = write(
        project,
        "c.scenario.yaml",
        """\
input: "Weather in {{ case.cty }}?"
llm: {script: [{content: ok}]}
expect:
  iterations: "{{ case.n }}"
cases:
  - {id: a, city: SF, n: 2}
  - {id: b, city: LA, n: many}
""",
    )
    assert errors_of(path) == [
        "scenarios/c.scenario.yaml:1: input: case.cty: the case has no key 'cty' (did you mean "
        "'city'?) (every case)",
        "scenarios/c.scenario.yaml:4: expect.iterations: expected a whole number or bounds "
        "like {min: 1, max: 5} (case 'b')",
    ]


def test_a_stub_template_reading_a_missing_case_key_is_a_load_error(project):
    path = write(
        project,
        "c.scenario.yaml",
        """\
input: hi
tools:
  t:
    parameters: {city: str}
    returns: "{{ case.tmp }} in {{ args.city }}"
llm: {script: [{content: ok}]}
cases: [{id: a, temp: 3}]
""",
    )
    assert errors_of(path) == [
        "scenarios/c.scenario.yaml:5: tools.t.returns: case.tmp: no case key 'tmp' (did you "
        "mean case.temp?); case keys: id, temp (case 'a')"
    ]


def test_case_in_a_scenario_without_cases_is_a_load_error_naming_cases(project):
    path = write(
        project,
        "c.scenario.yaml",
        'input: hi\ntools:\n  t: {returns: "{{ case.x }}"}\nllm: {script: [{content: ok}]}\n',
    )
    [line] = errors_of(path)
    assert line.startswith("scenarios/c.scenario.yaml:3: tools.t.returns: unknown name 'case'")
    assert "case is known in a scenario with cases:" in line


def test_run_scenario_of_a_file_with_cases_says_to_run_each_case(project):
    path = write(project, "weather.scenario.yaml", INLINE)
    with pytest.raises(HarnessError, match=r"has cases \(sf, oslo\): run each case"):
        run_scenario(path)
    cases = load_scenario(path).case_scenarios
    assert [c.case_id for c in cases] == ["sf", "oslo"]
    assert [run_scenario(c).status for c in cases] == ["passed", "passed"]


# -- in -k, the baseline, the report and shards -------------------------------------------


def test_one_case_is_selected_by_k_or_by_its_id(project, capsys):
    write(project, "weather.scenario.yaml", INLINE)
    status, out = harness(capsys, "run", "-k", "oslo", "--json", "k.json")
    assert status == 0, out
    assert [s.case for s in Results.load(project / "k.json").scenarios] == ["oslo"]
    status, out = harness(capsys, "run", f"{FILE}::weather[sf]", "--json", "id.json")
    assert status == 0, out
    assert [s.case for s in Results.load(project / "id.json").scenarios] == ["sf"]


def test_the_baseline_and_the_report_tell_the_cases_apart(project, capsys):
    path = write(project, "weather.scenario.yaml", INLINE)
    status, out = harness(capsys, "run", "--update-baseline")
    assert status == 0, out
    path.write_text(INLINE.replace("It is {{ case.temp }}F", "Now {{ case.temp }}F"))
    path.write_text(path.read_text().replace("temp: 41", "temp: 40"))
    status, out = harness(capsys, "run", "--json", "r.json", "--html", "r.html")
    assert status == 0, out
    diff = Results.load(project / "r.json").baseline
    assert sorted(c.id for c in diff.changed) == [f"{FILE}::weather[oslo]", f"{FILE}::weather[sf]"]
    html = (project / "r.html").read_text(encoding="utf-8")
    assert "weather[oslo]" in html and "weather[sf]" in html
    assert "Now 40F in Oslo." in html


def test_shards_split_the_cases_of_one_file(project, capsys):
    rows = "".join(f"c{i},Country {i},City {i},\n" for i in range(6))
    write(project, "capitals.scenario.yaml", CSV_SCENARIO)
    write(project, "capitals.csv", "id,country,capital,expect.iterations\n" + rows)
    seen: list[str] = []
    for shard in ("1/2", "2/2"):
        status, out = harness(capsys, "run", "--shard", shard, "--json", f"{shard[0]}.json")
        assert status == 0, out
        ran = [s.case for s in Results.load(project / f"{shard[0]}.json").scenarios]
        assert ran, shard
        seen += ran
    assert sorted(seen) == [f"c{i}" for i in range(6)]


# -- extends ---------------------------------------------------------------------------------

SHARED = """\
agent: {max_iterations: 6, parallel_tools: false}
tools:
  get_weather:
    parameters: {city: str}
    returns: "72F in {{ args.city }}"
  find_restaurants:
    parameters: {location: str}
    returns: [Chez Panisse]
llm:
  script:
    - content: shared reply
"""


def test_extends_starts_from_the_shared_file_merged_as_mappings(project, capsys):
    write(project, "shared.yaml", SHARED)
    write(
        project,
        "weather.scenario.yaml",
        """\
extends: shared.yaml
name: weather
input: Weather in SF?
agent: {max_iterations: 4}
tools:
  get_weather: {returns: "60F in {{ args.city }}"}
llm:
  script:
    - tool_calls: [{get_weather: {city: SF}}]
    - content: It is 60F.
expect: {final: {contains: 60F}}
""",
    )
    scenario = load_scenario(project / FILE)
    # Mappings merge key by key; the script (a list) is the scenario's own.
    assert scenario.agent.max_iterations == 4 and scenario.agent.parallel_tools is False
    assert sorted(scenario.tools) == ["find_restaurants", "get_weather"]
    assert scenario.tools["get_weather"].parameters == {"city": "str"}
    assert len(scenario.llm.script) == 2
    status, out = harness(capsys, "run", "--json", "r.json")
    assert status == 0, out
    [result] = Results.load(project / "r.json").scenarios
    assert result.tool_calls[0].result == "60F in SF"


def test_a_mistake_in_the_extended_file_names_that_file_and_line(project):
    write(project, "shared.yaml", SHARED.replace("max_iterations: 6", "max_iterations: six"))
    path = write(project, "w.scenario.yaml", "extends: shared.yaml\ninput: hi\n")
    assert errors_of(path) == [
        "scenarios/shared.yaml:1: agent.max_iterations: expected a valid integer, got the "
        "string 'six'"
    ]
    write(project, "shared.yaml", SHARED.replace("{city: str}", "{city: str}\n    bogus: 1"))
    [line] = errors_of(path)
    assert line.startswith("scenarios/shared.yaml:5: tools.get_weather.bogus: unknown key")


@pytest.mark.parametrize(
    ("extends", "files", "expected"),
    [
        (
            "nope.yaml",
            {},
            "scenarios/w.scenario.yaml:1: extends: nope.yaml: no such file (looked for "
            "scenarios/nope.yaml; the path is relative to this file)",
        ),
        (
            "[a.yaml]",
            {},
            "scenarios/w.scenario.yaml:1: extends: expected a file name, relative to this file",
        ),
        (
            "loop.yaml",
            {"loop.yaml": "extends: w.scenario.yaml\n"},
            "scenarios/loop.yaml:1: extends: extends itself: scenarios/w.scenario.yaml -> "
            "scenarios/loop.yaml -> scenarios/w.scenario.yaml",
        ),
        (
            "list.yaml",
            {"list.yaml": "- a\n"},
            "scenarios/list.yaml:1: a file to extend is a mapping",
        ),
    ],
)
def test_bad_extends_are_one_line(project, extends, files, expected):
    for name, text in files.items():
        write(project, name, text)
    path = write(project, "w.scenario.yaml", f"extends: {extends}\ninput: hi\n")
    [line] = errors_of(path)
    assert line.startswith(expected), line


def test_extends_and_cases_together(project, capsys):
    write(project, "shared.yaml", SHARED)
    write(
        project,
        "w.scenario.yaml",
        """\
extends: shared.yaml
input: "Eat in {{ case.city }}?"
llm:
  script:
    - tool_calls: [{find_restaurants: {location: "{{ case.city }}"}}]
    - content: Try Chez Panisse.
cases: [{id: sf, city: SF}, {id: la, city: LA}]
""",
    )
    status, out = harness(capsys, "run", "--json", "r.json")
    assert status == 0, out
    runs = Results.load(project / "r.json").scenarios
    assert [s.tool_calls[0].arguments for s in runs] == [{"location": "LA"}, {"location": "SF"}]


def test_the_json_schema_names_cases_and_extends():
    properties = json_schema()["properties"]
    assert "cases" in properties and "extends" in properties
    committed = Path(__file__).resolve().parents[1] / "harness-scenario.schema.json"
    assert '"cases"' in committed.read_text(encoding="utf-8")


# -- freeze writes cases -------------------------------------------------------------------

RECORDED = """\
name: capitals
input: "What is the capital of {{ case.country }}?"
llm: {provider: openai, model: gpt-4o-mini}
expect: {termination: completed}
cases:
  - {id: fr, country: France}
  - {id: jp, country: Japan}
"""


def test_freeze_of_a_scenario_with_cases_writes_one_case_per_recording(
    project, capsys, monkeypatch
):
    for name in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    source = write(project, "capitals.scenario.yaml", RECORDED)
    with running_server([{"content": "It is its largest city."}]) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        status, out = harness(capsys, "record", "scenarios")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert status == 0, out
    for case in ("fr", "jp"):
        assert (project / "cassettes" / "capitals" / f"{case}.yaml").is_file()
    frozen = project / "scenarios" / "frozen.scenario.yaml"
    status, out = harness(capsys, "freeze", "--scenario", str(source), "-o", str(frozen))
    assert status == 0, out
    data = yaml.safe_load(frozen.read_text(encoding="utf-8"))
    assert [s["content"] for s in data["llm"]["script"]] == ["It is its largest city."]  # shared
    assert [(c["id"], c["input"]) for c in data["cases"]] == [
        ("fr", "What is the capital of France?"),
        ("jp", "What is the capital of Japan?"),
    ]
    status, out = harness(capsys, "run", str(frozen), "--json", "f.json")
    assert status == 0, out
    assert [s.case for s in Results.load(project / "f.json").scenarios] == ["fr", "jp"]
    # One case's cassette freezes that case alone; another file is refused, naming them.
    one = project / "one.scenario.yaml"
    cassette = project / "cassettes" / "capitals" / "jp.yaml"
    status, out = harness(
        capsys, "freeze", str(cassette), "--scenario", str(source), "-o", str(one)
    )
    assert status == 0, out
    assert yaml.safe_load(one.read_text())["input"] == "What is the capital of Japan?"
    status, out = harness(capsys, "freeze", str(frozen), "--scenario", str(source))
    assert status == 2
    assert "is not the recording of a case of" in out and "jp (cassettes/capitals/jp.yaml)" in out


@pytest.mark.parametrize("command", ["serve", "mcp-serve", "agent-serve"])
def test_what_serves_one_scenario_refuses_a_file_with_cases(project, capsys, command):
    write(project, "weather.scenario.yaml", INLINE)
    status, out = harness(capsys, command, FILE)
    assert status == 2
    assert f"{FILE} has cases (sf, oslo), and " in out and "serves one scenario" in out


def test_a_remote_scenario_with_cases_is_a_load_error(project):
    write(project, "weather.scenario.yaml", INLINE)
    path = write(
        project,
        "coordinator.scenario.yaml",
        "input: hi\ntools:\n  w: {remote: {scenario: weather.scenario.yaml}}\n"
        "llm: {script: [{content: ok}]}\n",
    )
    [line] = errors_of(path)
    assert line.startswith("scenarios/coordinator.scenario.yaml:3: tools.w.remote.scenario: ")
    assert "has cases (sf, oslo)" in line


def test_validate_counts_the_cases(project, capsys):
    write(project, "weather.scenario.yaml", INLINE)
    status, out = harness(capsys, "validate", "scenarios")
    assert status == 0 and "1 scenario(s) OK (2 cases)" in out
