"""Hostile scenario files: each test is an attack written as its author would write it.

docs/scenarios.md ("Bounds") is the contract: every such file ends in one line naming the
file, the line and the field (or a run that ends in error with such a line), never in a
traceback, a hang or an exhausted machine, and never costs the other scenarios their
results. The tests that could hang on a regression carry a pytest-timeout bound.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from harness._errors import ScenarioError
from harness.cli import main
from harness.scenario import load_scenario, run_scenario

GOOD = """\
name: good
input: hi
llm:
  script:
    - content: done
"""


def write(folder: Path, text: str, name: str = "attack.scenario.yaml") -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load_error(path: Path) -> str:
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    assert "Traceback" not in message
    return message


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


# -- YAML tags and odd names ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "field", "tag"),
    [
        (  # on a mapping: PyYAML's safe loader keeps the mapping and drops the tag
            "name: x\nagent: !!python/object/apply:os.system {max_iterations: 3}\n",
            2,
            "agent",
            "!!python/object/apply:os.system",
        ),
        (
            "name: x\ntags: !!python/tuple [a, b]\n",
            2,
            "tags",
            "!!python/tuple",
        ),
        (
            "name: x\ninput: !shell rm -rf ~\n",
            2,
            "input",
            "!shell",
        ),
        (  # a tag that changes what a plain value reads as
            "name: x\nseed: !!str 123\n",
            2,
            "seed",
            "!!str",
        ),
        (
            "name: x\ntools:\n  t:\n    returns: !!python/object/new:os.system [id]\n",
            4,
            "tools.t.returns",
            "!!python/object/new:os.system",
        ),
    ],
    ids=["mapping", "sequence", "local-scalar", "str-on-a-number", "nested"],
)
def test_every_yaml_tag_is_refused_at_its_line(tmp_path, text, line, field, tag):
    path = write(tmp_path, text)
    message = load_error(path)
    assert message.startswith(f"{path.as_posix()}:{line}: {field}: a YAML tag ({tag}) ")
    assert "remove it" in message
    assert main(["validate", str(path)]) == 2


def test_a_nul_in_a_parameter_name_is_refused(tmp_path):
    path = write(
        tmp_path,
        """\
        name: x
        tools:
          t:
            parameters: {"city\\0; rm -rf ~": str}
            returns: ok
        """,
    )
    message = load_error(path)
    assert message == (
        f"{path.as_posix()}:4: tools.t.parameters.'city\\x00; rm -rf ~': a parameter name "
        "holds a control character ('\\x00'): name it with printable characters"
    )


def test_a_nul_in_a_json_schema_property_is_refused(tmp_path):
    path = write(
        tmp_path,
        """\
        name: x
        tools:
          t:
            schema: {properties: {"a\\0b": {type: string}}}
            returns: ok
        """,
    )
    message = load_error(path)
    assert message == (
        f"{path.as_posix()}:4: tools.t.schema.properties.'a\\x00b': a parameter name holds "
        "a control character ('\\x00'): name it with printable characters"
    )


# -- numbers ----------------------------------------------------------------------------------


LATENCY_BOMB = """\
name: bomb
input: go
tools:
  slow:
    returns: ok
    latency: 1.0e+308
llm:
  script:
    - tool_calls: [{slow: {}}]
    - tool_calls: [{slow: {}}]
    - content: done
"""


def test_a_latency_that_overflows_the_clock_is_refused_where_it_is_read(tmp_path):
    # Twice 1e308 simulated seconds is infinity: results.json cannot hold it.
    path = write(tmp_path, LATENCY_BOMB)
    assert load_error(path) == (
        f"{path.as_posix()}:6: tools.slow.latency: expected 31536000 or less, got 1e+308"
    )


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        (
            "name: x\nllm:\n  script:\n    - {content: a, latency: 1.0e+300}\n",
            4,
            "llm.script.0.latency",
        ),
        ("name: x\ntools:\n  t: {returns: a, timeout: 1.0e+300}\n", 3, "tools.t.timeout"),
    ],
    ids=["script-step", "tool-timeout"],
)
def test_every_simulated_time_the_clock_adds_is_bounded(tmp_path, text, line, field):
    path = write(tmp_path, text)
    message = load_error(path)
    assert message == f"{path.as_posix()}:{line}: {field}: expected 31536000 or less, got 1e+300"


@pytest.mark.filterwarnings("ignore:Benchmarks are automatically disabled")
def test_a_latency_bomb_costs_no_other_scenario_its_result(project, capsys):
    (project / "scenarios" / "good.scenario.yaml").write_text(GOOD, encoding="utf-8")
    (project / "scenarios" / "bomb.scenario.yaml").write_text(LATENCY_BOMB, encoding="utf-8")
    status = main(["run", "--", "--continue-on-collection-errors"])
    out, err = capsys.readouterr()
    assert status == 2, out + err
    assert "Traceback" not in out + err
    assert "scenarios/bomb.scenario.yaml:6: tools.slow.latency: expected 31536000 or less" in out
    results = json.loads((project / "reports" / "results.json").read_text())
    assert [(s["id"], s["status"]) for s in results["scenarios"]] == [
        ("scenarios/good.scenario.yaml::good", "passed")
    ]


def test_a_real_tool_cannot_overflow_the_clock_either(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "bomb_tools.py").write_text(
        "from harness import simclock\n\ndef slow():\n    simclock.sleep(1e308)\n    return 'ok'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    path = write(
        tmp_path,
        """\
        name: x
        input: go
        tools:
          slow: {use: "bomb_tools:slow"}
        llm:
          script:
            - tool_calls: [{slow: {}}]
            - tool_calls: [{slow: {}}]
            - content: done
        """,
    )
    result = run_scenario(path)
    assert result.sim_time == 0.0
    assert [c.result for c in result.tool_calls] == [
        "ValueError: simulated time of 1e+308 s: a call spends at most 31536000 s (a year)"
    ] * 2
    json.loads(result.model_dump_json())  # results.json holds it


ODD_PLUGINS = """\
from harness import hookimpl
from harness.llm._base import LLMResponse
from harness._messages import AssistantMessage


class Endless:
    def __init__(self, config):
        pass

    async def complete(self, request):
        return LLMResponse(AssistantMessage(content="hi"), latency=float("inf"))


@hookimpl
def harness_register_llms(register):
    register("endless", Endless)


@hookimpl
def harness_agent_end(run, final):
    if final.content == "spoilt":
        # A plugin's bug, reaching past Run's read-only surface into harness's own
        # bookkeeping: results.json cannot hold what it leaves.
        run._ledger.sim_time = float("inf")
"""


@pytest.fixture
def odd_project(project):
    """The project with a plugin whose LLM source and observer hand harness infinity."""
    (project / "pyproject.toml").write_text(
        "[project]\nname = 'demo'\n[tool.harness]\nplugins = ['odd_plugins']\n"
    )
    (project / "odd_plugins.py").write_text(ODD_PLUGINS)
    (project / "scenarios" / "good.scenario.yaml").write_text(GOOD, encoding="utf-8")
    return project


@pytest.mark.filterwarnings("ignore:Benchmarks are automatically disabled")
def test_an_llm_source_cannot_overflow_the_clock(odd_project, capsys):
    (odd_project / "scenarios" / "endless.scenario.yaml").write_text(
        "input: hi\nllm: {provider: endless}\n"
    )
    assert main(["run"]) == 1
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    results = json.loads((odd_project / "reports" / "results.json").read_text())
    endless, good = results["scenarios"]
    assert good["status"] == "passed"
    assert endless["status"] == "error"
    assert endless["final"]["error"]["message"] == (
        "the LLM source's reply took inf simulated seconds; a reply takes 0 to 31536000 (a year)"
    )


@pytest.mark.filterwarnings("ignore:Benchmarks are automatically disabled")
def test_a_result_results_json_cannot_hold_costs_no_other_scenario_its_result(odd_project, capsys):
    (odd_project / "scenarios" / "spoilt.scenario.yaml").write_text(
        "input: hi\nllm:\n  script:\n    - content: spoilt\n"
    )
    assert main(["run"]) == 3
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert (
        "report error: scenarios/spoilt.scenario.yaml::spoilt: its result cannot be "
        "written: sim_time: expected a valid number, got None (infinity or NaN, which "
        "JSON cannot hold)" in out
    )
    results = json.loads((odd_project / "reports" / "results.json").read_text())
    good, spoilt = results["scenarios"]
    assert good["status"] == "passed"
    assert spoilt["status"] == "error"
    assert spoilt["final"]["error"]["message"].startswith("its result cannot be written")


# -- files a scenario reads ------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("/dev/zero", "it is not a regular file"),
        ("fifo", "it is not a regular file"),
        ("huge.json", "it is larger than 16 MiB"),
    ],
    ids=["dev-zero", "fifo", "huge"],
)
def test_a_history_file_is_read_with_a_bound(tmp_path, target, problem):
    import os

    if target == "fifo":
        os.mkfifo(tmp_path / "fifo")  # opening it would wait for a writer forever
    if target == "huge.json":
        with open(tmp_path / "huge.json", "wb") as handle:
            handle.truncate(16 * 2**20 + 1)  # sparse: no disk spent
    path = write(tmp_path, f"name: x\ninput: hi\nhistory: {target}\n")
    shown = target if target.startswith("/") else (tmp_path / target).as_posix()
    assert load_error(path) == (
        f"{path.as_posix()}:3: history: cannot read history file {shown}: {problem}"
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize("target", ["/dev/zero", "fifo"], ids=["dev-zero", "fifo"])
def test_a_scenario_file_that_is_no_regular_file_is_refused(tmp_path, capsys, target):
    import os

    if target == "fifo":
        os.mkfifo(tmp_path / "fifo")
    source = target if target.startswith("/") else tmp_path / target
    (tmp_path / "evil.scenario.yaml").symlink_to(source)
    assert main(["validate", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert out.startswith(
        f"{(tmp_path / 'evil.scenario.yaml').as_posix()}: cannot read the file: "
        "it is not a regular file"
    ), out


def test_a_huge_scenario_file_is_refused(tmp_path):
    path = tmp_path / "huge.scenario.yaml"
    with open(path, "wb") as handle:
        handle.write(b"name: x\n")
        handle.truncate(16 * 2**20 + 1)
    assert load_error(path) == (
        f"{path.as_posix()}: cannot read the file: it is larger than 16 MiB"
    )


# -- regular expressions ----------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_a_backtracking_matches_pattern_fails_within_its_time_limit(tmp_path):
    # (a|aa)+$ on forty a's and a '!' takes about 2**40 steps in a backtracking engine.
    path = write(
        tmp_path,
        """\
        name: redos
        input: hi
        llm:
          script:
            - content: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"
        expect:
          final: {matches: "(a|aa)+$"}
        """,
    )
    result = run_scenario(path)
    assert result.status == "failed"
    (expectation,) = result.expectations
    assert expectation.path == "final.matches"
    assert expectation.actual == (
        "the pattern did not finish within 1 s on the final answer (41 characters): it "
        "backtracks; simplify it (a repeated group that can match the same text in "
        "several ways, such as (a|aa)+, takes exponential time)"
    )


# -- templates --------------------------------------------------------------------------------


def template_run(folder: Path, returns: str):
    """A run whose one tool renders ``returns``: its final error message."""
    path = write(
        folder,
        f"""\
        name: t
        input: go
        tools:
          t:
            returns: {json.dumps(returns)}
        llm:
          script:
            - tool_calls: [{{t: {{}}}}]
            - content: done
        """,
    )
    assert main(["validate", str(path)]) == 0  # compiling computes nothing
    result = run_scenario(path)
    assert result.termination == "error"
    message = result.final.error["message"]
    prefix = f"{path.as_posix()}:5: tools.t.returns: template error: "
    assert message.startswith(prefix), message
    return message.removeprefix(prefix)


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("returns", "problem"),
    [
        (
            "{{ 9 ** 999999999 }}",
            "9 ** 999999999 would make a number of more than 4,300 digits, the most a "
            "template makes",
        ),
        (
            "{{ 'x' * 3000000000 }}",
            "'x' * 3000000000 would make 3,000,000,000 characters or items; a template makes "
            "at most 1,000,000 in one value",
        ),
        (
            "{{ [0] * 3000000000 }}",
            "[0] * 3000000000 would make 3,000,000,000 characters or items; a template makes "
            "at most 1,000,000 in one value",
        ),
        (
            "{% set ns = namespace(s='xy') %}{% for i in range(64) %}"
            "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
            "~ would make 1,048,576 characters; a template makes at most 1,000,000 in one value",
        ),
        (
            "{% set ns = namespace(n=3) %}{% for i in range(64) %}"
            "{% set ns.n = ns.n * ns.n %}{% endfor %}{{ ns.n }}",
            "a big number * a big number would make a number of more than 4,300 digits, the "
            "most a template makes",
        ),
        (
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
            "the template takes more than 100,000 steps (loop iterations, calls, operators): "
            "render less",
        ),
        (
            "{% for i in range(1000) %}{{ 'x' * 1000000 }}{% endfor %}",
            "the template renders more than 1,000,000 characters, the most a template renders",
        ),
        (
            "{{ 'x'.ljust(3000000000) }}",
            "ljust(3000000000) would make more than 1,000,000 characters; a template makes at "
            "most 1,000,000 in one value",
        ),
        (
            "{{ '%03000000000d' % 1 }}",
            "'%03000000000d' % 1: a width or precision above 1,000,000 (or given by *) is not "
            "allowed in a template",
        ),
        (
            "{% set l = [1, 2] %}{{ l.extend(l) }}",
            # The sandbox refuses changing a list (one doubled in a loop).
            "access to attribute 'extend' of 'list' object is unsafe.",
        ),
    ],
    ids=[
        "power",
        "string-times",
        "list-times",
        "doubled-by-tilde",
        "squared-in-a-loop",
        "nested-loops",
        "output",
        "ljust",
        "printf-width",
        "list-extend",
    ],
)
def test_a_template_that_would_blow_up_is_refused(tmp_path, returns, problem):
    assert template_run(tmp_path, returns) == problem


# -- Faker and the calendar ---------------------------------------------------------------------

DATES = (
    "{{ faker.day_of_week() }} {{ faker.date_between() }} {{ faker.date_time() }} "
    "{{ faker.date_this_month() }} {{ faker.date_time_this_year(after_now=True) }} "
    "{{ faker.date_of_birth() }} {{ faker.future_date() }} {{ faker.past_datetime() }} "
    "{{ faker.iso8601() }} {{ faker.date_between_dates() }} {{ faker.year() }}"
)


def rendered_on(path: Path, day: str, zone: str) -> str:
    """The tool result of the scenario at ``path``, rendered with the machine's clock at
    ``day`` and its time zone ``zone``.

    libfaketime (Debian's faketime, LD_PRELOADed by the faketime command) moves the
    clock of the one process it starts: the clock Faker reads, as the calendar moving on
    would, without touching the machine's.
    """
    import os
    import subprocess
    import sys

    code = "import sys; from harness.scenario import run_scenario; print(run_scenario(sys.argv[1]).tool_calls[0].result)"
    done = subprocess.run(
        ["faketime", day, sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TZ": zone},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_seeded_faker_date_is_the_same_on_any_day(tmp_path):
    import shutil

    if shutil.which("faketime") is None:
        pytest.skip("needs faketime (Debian's faketime package; .ci/run installs it)")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    path = write(
        tmp_path,
        f"""\
        name: dates
        seed: 7
        input: go
        tools:
          when: {{returns: {json.dumps(DATES)}}}
        llm:
          script:
            - tool_calls: [{{when: {{}}}}]
            - content: done
        """,
    )
    today = rendered_on(path, "2026-03-01 10:00:00", "UTC")
    assert rendered_on(path, "2031-11-17 23:30:00", "UTC") == today
    assert rendered_on(path, "2026-03-01 10:00:00", "Pacific/Kiritimati") == today
    assert "2025" in today  # the fixed "now": 2025-01-01
