"""``matrix:``: one scenario across models x planners (and any agent setting): one item
per combination with its own id and cassette, results and baseline diff per combination,
the report's matrix view, and `harness validate` errors for bad keys and values.

Recording goes through `harness serve` on 127.0.0.1 with the real openai SDK; `harness
run` runs in this process (pytest.main, as the command does).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cli_runs import harness
from scenario_texts import SESSION_TESTS

from harness._errors import HarnessError
from harness._results import Results
from harness.scenario import expand_matrix, load_scenario, run_scenario, scenario_id
from harness.serve import running_server

pytestmark = SESSION_TESTS

OFFLINE = "http://127.0.0.1:9/v1"
FILE = "scenarios/lisbon.scenario.yaml"
COMBINATIONS = [
    "model=gpt-4o-mini,planner=react",
    "model=gpt-4o-mini,planner=agentbuilder",
    "model=gpt-4.1-mini,planner=react",
    "model=gpt-4.1-mini,planner=agentbuilder",
]

MATRIX = """\
name: lisbon
matrix:
  model: [gpt-4o-mini, gpt-4.1-mini]
  planner: [react, agentbuilder]
input: What's the weather in Lisbon?
tools:
  get_weather:
    parameters: {city: str}
    returns: "21C and sunny in {{ args.city }}"
llm: {provider: openai}
expect:
  termination: completed
  tool_calls: {sequence: [get_weather], exact: true}
  final: {contains: Lisbon}
"""

STEPS = [
    {"tool_calls": [{"get_weather": {"city": "Lisbon"}}]},
    {"content": "It is 21C and sunny in Lisbon."},
]


@pytest.fixture(autouse=True)
def _no_openai_environment(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.harness]\n", encoding="utf-8")
    write(tmp_path, MATRIX)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write(root: Path, text: str) -> Path:
    path = root / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def cassette(root: Path, combination: str) -> Path:
    return root / "cassettes" / "lisbon" / f"{combination}.yaml"


@pytest.fixture
def recorded(project, monkeypatch, capsys) -> Path:
    with running_server(STEPS) as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        status, out = harness(
            capsys, "run", "scenarios", "--record-mode", "once", "--json", "rec.json"
        )
    monkeypatch.setenv("OPENAI_BASE_URL", OFFLINE)
    assert status == 0, out
    return project


def test_a_2x2_matrix_gives_4_items_with_distinct_ids_cassettes_and_a_matrix_view(recorded, capsys):
    # Replayed offline: nothing listens at OPENAI_BASE_URL.
    status, out = harness(capsys, "run", "scenarios", "--json", "r.json", "--html", "r.html")
    assert status == 0, out
    results = Results.load(recorded / "r.json")
    ids = [s.id for s in results.scenarios]
    assert sorted(ids) == sorted(f"{FILE}::lisbon[{c}]" for c in COMBINATIONS)
    by_id = {s.id: s for s in results.scenarios}
    for combination in COMBINATIONS:
        entry = by_id[f"{FILE}::lisbon[{combination}]"]
        model, planner = (part.split("=")[1] for part in combination.split(","))
        assert entry.status == "passed"
        assert entry.matrix == {"model": model, "planner": planner}
        assert entry.agent.planner == planner
        # agentbuilder takes two iterations per LLM round trip, react one.
        assert entry.iterations == (2 if planner == "react" else 4)
        # Each combination has its own cassette, recorded with its own model.
        stored = yaml.safe_load(cassette(recorded, combination).read_text(encoding="utf-8"))
        models = {i["request"]["parsed_body"]["model"] for i in stored["interactions"]}
        assert models == {model}
    assert len(list((recorded / "cassettes" / "lisbon").glob("*.yaml"))) == 4

    html = (recorded / "r.html").read_text(encoding="utf-8")
    view = html[html.index('id="matrix"') : html.index("</section>", html.index('id="matrix"'))]
    assert view.count('<td class="cell st-passed"') == 4
    assert view.count('<th class="combo">') == 4
    assert f"{FILE}::lisbon</div>" in view  # one row: the scenario


def test_the_baseline_diff_shows_a_change_in_one_combination_only(recorded, capsys):
    status, out = harness(
        capsys,
        "run",
        "scenarios",
        "--baseline",
        "base.json",
        "--update-baseline",
        "--json",
        "a.json",
    )
    assert status == 0, out
    # The model answers differently for one combination only.
    changed = "model=gpt-4.1-mini,planner=react"
    path = cassette(recorded, changed)
    text = path.read_text(encoding="utf-8")
    assert "It is 21C and sunny in Lisbon." in text
    # (Only the reply changes: the tool's result, sent in the requests, stays.)
    path.write_text(
        text.replace("It is 21C and sunny in Lisbon.", "It is 19C and cloudy in Lisbon."),
        encoding="utf-8",
    )

    status, out = harness(capsys, "run", "scenarios", "--baseline", "base.json", "--json", "b.json")
    assert status == 0, out
    diff = Results.load(recorded / "b.json").baseline
    assert [c.id for c in diff.changed] == [f"{FILE}::lisbon[{changed}]"]
    assert diff.unchanged == 3
    assert not (diff.regressions or diff.fixed or diff.added or diff.removed)


def test_one_combination_runs_by_its_id(recorded, capsys):
    wanted = f"{FILE}::lisbon[model=gpt-4o-mini,planner=agentbuilder]"
    status, out = harness(capsys, "run", wanted, "--json", "one.json")
    assert status == 0, out
    assert [s.id for s in Results.load(recorded / "one.json").scenarios] == [wanted]


# -- expansion ------------------------------------------------------------------------------------

SCRIPTED = """\
name: settings
matrix:
  max_iterations: [1, 5]
  agent.parallel_tools: [true, false]
input: hi
tools:
  ping: {parameters: {}, returns: pong}
llm:
  script:
    - tool_calls: [{ping: {}}]
    - content: done
"""


def test_a_matrix_over_agent_settings_expands_in_file_order(tmp_path):
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    variants = expand_matrix(load_scenario(write(tmp_path, SCRIPTED)))
    assert [str(scenario_id(v)) for v in variants] == [
        f"{FILE}::settings[max_iterations=1,agent.parallel_tools=true]",
        f"{FILE}::settings[max_iterations=1,agent.parallel_tools=false]",
        f"{FILE}::settings[max_iterations=5,agent.parallel_tools=true]",
        f"{FILE}::settings[max_iterations=5,agent.parallel_tools=false]",
    ]
    settings = [(v.agent.max_iterations, v.agent.parallel_tools) for v in variants]
    assert settings == [(1, True), (1, False), (5, True), (5, False)]
    results = [run_scenario(v) for v in variants]
    assert [r.termination for r in results] == [
        "max_iterations",
        "max_iterations",
        "completed",
        "completed",
    ]


def test_run_scenario_of_a_matrix_scenario_says_to_run_its_combinations(tmp_path):
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    with pytest.raises(HarnessError, match="has a matrix: run each combination"):
        run_scenario(write(tmp_path, SCRIPTED))


# -- bad input ------------------------------------------------------------------------------------


def test_harness_validate_reports_unknown_matrix_keys_and_values(project, capsys):
    write(
        project,
        MATRIX.replace(
            "  planner: [react, agentbuilder]\n",
            "  planner: [react, agentbilder]\n  modle: [x]\n  max_iterations: [3, zero, 3]\n",
        ),
    )
    status, out = harness(capsys, "validate", FILE)
    assert status == 2
    lines = [line for line in out.splitlines() if line.startswith(FILE)]
    assert lines[0].startswith(f"{FILE}:4: matrix.planner.1: unknown planner 'agentbilder'")
    assert lines[1] == (
        f"{FILE}:5: matrix.modle: unknown matrix key 'modle' (did you mean 'model'?); a "
        "matrix varies model (llm.model), wire (for a target) or an agent setting: planner, "
        "max_iterations, "
        "stagnation, on_validation_error, on_max_iterations, parallel_tools, system, "
        "planner_options, detectors, on_stuck, budget, llm_retries"
    )
    assert lines[2] == f"{FILE}:6: matrix.max_iterations.1: 'zero': expected a valid integer"
    assert lines[3].startswith(
        f"{FILE}:6: matrix.max_iterations.2: '3' is listed twice: each combination would run twice"
    )


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        ("{}", "matrix: an empty matrix"),
        ("{planner: []}", "matrix.planner: no values"),
        (
            "{model: [a], llm.model: [b]}",
            "matrix.'llm.model': 'llm.model' varies the same setting as 'model'",
        ),
        (
            "{max_iterations: [0]}",
            "matrix.max_iterations.0: '0': expected 1 or more, got 0",
        ),
        ("{planner: react}", "matrix.planner: expected a list"),
    ],
)
def test_bad_matrices_are_load_errors_at_their_line(tmp_path, matrix, message):
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    text = MATRIX.replace(
        "matrix:\n  model: [gpt-4o-mini, gpt-4.1-mini]\n  planner: [react, agentbuilder]\n",
        f"matrix: {matrix}\n",
    ).replace("llm: {provider: openai}", "llm: {provider: openai, model: gpt-4o-mini}")
    with pytest.raises(HarnessError) as caught:
        load_scenario(write(tmp_path, text))
    assert f"{FILE}:2: {message}" in str(caught.value)


def test_a_model_matrix_on_a_scripted_scenario_is_a_load_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    text = SCRIPTED.replace("  max_iterations: [1, 5]\n", "  model: [a, b]\n")
    with pytest.raises(HarnessError, match=r":3: matrix.model: a scripted model has no name"):
        load_scenario(write(tmp_path, text))


def test_the_matrix_view_counts_several_runs_of_one_combination():
    from harness._actions import FinalResponse
    from harness._results import ScenarioResult
    from harness.report._matrix import matrix_view

    def entry(suffix: str, status: str, combination: dict) -> ScenarioResult:
        label = ",".join(f"{k}={v}" for k, v in combination.items())
        return ScenarioResult(
            id=f"{FILE}::lisbon[{label}]{suffix}",
            name=f"lisbon[{label}]{suffix}",
            file=FILE,
            status=status,
            termination="completed",
            final=FinalResponse(),
            matrix=combination,
        )

    a, b = {"planner": "react"}, {"planner": "agentbuilder"}
    view = matrix_view(
        [entry("[1]", "passed", a), entry("[2]", "failed", a), entry("", "passed", b)],
        anchors={},
    )
    # Columns sort by their values (results come sorted by id, which is no order to read).
    assert view["columns"] == ["planner=agentbuilder", "planner=react"]
    (row,) = view["rows"]
    assert row["id"] == f"{FILE}::lisbon"
    assert [(c["status"], c["text"]) for c in row["cells"]] == [
        ("passed", "passed"),
        ("failed", "1/2 passed"),
    ]
