"""The pytest plugin, exercised through real pytest sessions (pytester).

In-process runs (``runpytest``) where nothing outlives the session; a subprocess where
the environment, xdist or harness's process-wide plugin manager is involved.
"""

from __future__ import annotations

import json
import re
import textwrap

import pytest
from scenario_texts import PASSING, SESSION_TESTS

from harness._results import Results
from harness.report._text import format_failure, trajectory_lines

pytestmark = SESSION_TESTS

# The passing scenario under another name and tag, expecting what did not happen.
FAILING = (
    PASSING.replace("name: greet", "name: wrong-forecast")
    .replace("[smoke]", "[nightly]")
    .replace(
        "  termination: completed\n  final: {contains: 72F}\n",
        "  iterations: 3\n  final: {contains: rainy}\n",
    )
)

ERRORING = """\
input: hi
tools:
  get_weather:
    parameters: {city: str}
    returns: "{{ args.city.nope() }}"
llm:
  script:
    - tool_calls: [{get_weather: {city: SF}}]
    - content: done
"""

BAD = """\
input: hi
agent:
  max_iteration: 3
llm:
  script:
    - content: done
"""

PARALLEL = """\
name: fan-out
input: weather in three cities
tools:
  get_weather:
    parameters: {city: str}
    returns: "{{ faker.random_int(50, 80) }}F in {{ args.city }}"
llm:
  script:
    - tool_calls: [{get_weather: {city: SF}}, {get_weather: {city: LA}}, {get_weather: {city: NY}}]
    - content: All warm.
expect:
  parallel_groups: [[get_weather, get_weather, get_weather]]
"""


def write(pytester: pytest.Pytester, **files: str) -> None:
    """Write files named like ``sub__x_scenario`` -> ``sub/x.scenario.yaml``."""
    for name, text in files.items():
        path = name.replace("__", "/").replace("_scenario", ".scenario.yaml")
        target = pytester.path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def load(path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def stable(results: dict) -> dict:
    """results.json without what may differ between runs (meta, wall_time)."""
    results = dict(results)
    results.pop("meta")
    results["scenarios"] = [
        {k: v for k, v in s.items() if k != "wall_time"} for s in results["scenarios"]
    ]
    return results


# -- collection ------------------------------------------------------------------------------


def test_collects_one_item_per_scenario_file_and_ignores_other_yaml(pytester):
    write(pytester, greet_scenario=PASSING, sub__wrong_scenario=FAILING)
    (pytester.path / "config.yaml").write_text("not: [a scenario\n")
    # The short spelling of the suffix is a scenario file too.
    (pytester.path / "other.scenario.yml").write_text(PASSING.replace("name: greet", "name: short"))
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "greet.scenario.yaml::greet",
            "other.scenario.yml::short",
            "sub/wrong.scenario.yaml::wrong-forecast",
            "*3 tests*",
        ]
    )
    assert result.ret == 0


def test_the_default_name_is_the_file_stem(pytester):
    write(pytester, no_name_scenario=PASSING.replace("name: greet\n", ""))
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(["no_name.scenario.yaml::no_name"])


def test_result_ids_are_relative_to_the_project_root_wherever_pytest_starts(pytester, monkeypatch):
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    write(pytester, suite__deep__greet_scenario=PASSING)
    out = pytester.path / "out.json"
    monkeypatch.chdir(pytester.path / "suite")
    result = pytester.runpytest("deep", f"--harness-json={out}")
    assert result.ret == 0
    assert [s["id"] for s in load(out)["scenarios"]] == ["suite/deep/greet.scenario.yaml::greet"]


def test_tags_are_registered_markers_selectable_with_m(pytester):
    write(pytester, greet_scenario=PASSING, wrong_scenario=FAILING)
    result = pytester.runpytest(
        "-m", "smoke", "--strict-markers", "-W", "error::pytest.PytestUnknownMarkWarning"
    )
    result.assert_outcomes(passed=1, deselected=1)
    assert "PytestUnknownMarkWarning" not in result.stdout.str()
    markers = pytester.runpytest("--markers")
    markers.stdout.fnmatch_lines(["*scenario:*"])


def test_tags_use_pytests_m_grammar_dashes_and_dots_included(pytester):
    write(
        pytester,
        net_scenario=PASSING.replace("name: greet", "name: net").replace(
            "[smoke]", "[slow-net, v1.2]"
        ),
        greet_scenario=PASSING,
    )
    strict = ("--strict-markers", "-W", "error::pytest.PytestUnknownMarkWarning")
    result = pytester.runpytest("-m", "slow-net", *strict)
    result.assert_outcomes(passed=1, deselected=1)
    result = pytester.runpytest("-m", "v1.2 and not smoke", *strict)
    result.assert_outcomes(passed=1, deselected=1)
    result = pytester.runpytest("-m", "not slow-net", *strict)
    result.assert_outcomes(passed=1, deselected=1)


BAD_TAGS = {
    "or": "tag 'or' is a keyword of pytest -m expressions and cannot be selected",
    "not": "tag 'not' is a keyword of pytest -m expressions",
    "skip": "tag 'skip' is one of pytest's own markers and would change how the scenario runs",
    "xfail": "tag 'xfail' is one of pytest's own markers",
    "usefixtures": "tag 'usefixtures' is one of pytest's own markers",
    "'a b'": "tag 'a b' cannot be selected with pytest -m (' ' not allowed)",
    "'a:b'": "tag 'a:b' cannot be selected with pytest -m (':' not allowed)",
    "_private": "tag '_private': pytest marker names cannot start with '_'",
}


def test_tags_m_cannot_select_or_that_change_how_a_scenario_runs_are_errors(pytester):
    for i, tag in enumerate(BAD_TAGS):
        write(pytester, **{f"t{i}_scenario": f"tags: [ok, {tag}]\ninput: hi\n"})
    result = pytester.runpytest()
    assert result.ret == 2
    for i, message in enumerate(BAD_TAGS.values()):
        result.stdout.fnmatch_lines([f"t{i}.scenario.yaml:1: tags.1: {message}*"])
    assert "Traceback" not in result.stdout.str()


def test_every_scenario_has_the_scenario_marker(pytester):
    write(pytester, greet_scenario=PASSING)
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest("-m", "scenario")
    result.assert_outcomes(passed=1, deselected=1)


def test_k_selects_by_scenario_name(pytester):
    write(pytester, greet_scenario=PASSING, wrong_scenario=FAILING)
    result = pytester.runpytest("-k", "greet")
    result.assert_outcomes(passed=1, deselected=1)
    result = pytester.runpytest("-k", "wrong-forecast")
    result.assert_outcomes(failed=1, deselected=1)


def test_a_bad_file_is_a_collection_error_with_the_validate_lines_only(pytester):
    write(pytester, bad_scenario=BAD, greet_scenario=PASSING)
    result = pytester.runpytest()
    assert result.ret == 2
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting bad.scenario.yaml*",
            "bad.scenario.yaml:3: agent.max_iteration: unknown key 'max_iteration' "
            "(did you mean 'max_iterations'?)",
        ]
    )
    assert "Traceback" not in out and "harness/" not in out and "raise " not in out
    assert "1 scenario file(s) did not load; reports not written" in out


def test_collection_errors_under_xdist_are_reported_once_and_exit_2(pytester):
    write(pytester, bad_scenario=BAD, greet_scenario=PASSING, wrong_scenario=FAILING)
    result = pytester.runpytest_subprocess("-n", "2", "--harness-json=out.json")
    assert result.ret == 2
    out = result.stdout.str()
    # Each worker collects the file; the error is shown once. (The short test summary repeats
    # the message after "ERROR bad.scenario.yaml - ", in full when pytest sees CI set.)
    assert out.count("ERROR collecting bad.scenario.yaml") == 1
    own_lines = re.findall(r"^bad\.scenario\.yaml:3: agent\.max_iteration: unknown key", out, re.M)
    assert len(own_lines) == 1, out
    assert "1 scenario file(s) did not load; reports not written" in out
    assert not (pytester.path / "out.json").exists()


def test_continue_on_collection_errors_runs_the_rest_and_still_exits_2(pytester):
    write(pytester, bad_scenario=BAD, greet_scenario=PASSING)
    result = pytester.runpytest("--continue-on-collection-errors", "--harness-json=out.json")
    assert result.ret == 2
    data = load(pytester.path / "out.json")
    assert [s["name"] for s in data["scenarios"]] == ["greet"]


# -- outcomes --------------------------------------------------------------------------------

MARKING_CONFTEST = """\
import pytest

def pytest_collection_modifyitems(items):
    for item in items:
        if item.name == "greet":
            item.add_marker(pytest.mark.skip(reason="not today"))
        elif item.name == "later":
            item.add_marker(pytest.mark.skipif(True, reason="not here"))
        elif item.name == "wrong-forecast":
            item.add_marker(pytest.mark.xfail(reason="known bug"))
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_skip_skipif_and_xfail_marks_from_a_conftest_apply_to_scenarios(pytester, workers):
    write(
        pytester,
        greet_scenario=PASSING,
        later_scenario=PASSING.replace("name: greet", "name: later"),
        plain_scenario=PASSING.replace("name: greet", "name: plain"),
        wrong_scenario=FAILING,
    )
    pytester.makeconftest(MARKING_CONFTEST)
    result = pytester.runpytest_subprocess(*workers, "--harness-json=out.json")
    out = result.stdout.str()
    assert "INTERNALERROR" not in out + result.stderr.str()
    result.assert_outcomes(passed=1, skipped=2, xfailed=1)
    assert result.ret == 0  # xfail: an expected failure, as for any pytest item
    # What ran is in results.json, the xfailed scenario with its real status; what was
    # skipped did not run and has no entry.
    data = load(pytester.path / "out.json")
    assert [(s["name"], s["status"]) for s in data["scenarios"]] == [
        ("plain", "passed"),
        ("wrong-forecast", "failed"),
    ]
    assert "skipped: 2 (not run, so not in results.json)" in out


def test_a_failure_shows_each_unmet_expectation_and_the_trajectory(pytester):
    write(pytester, wrong_scenario=FAILING)
    result = pytester.runpytest()
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            # The header names the scenario by id: in a large suite no two look alike.
            "_* wrong-forecast (wrong.scenario.yaml) _*",
            "scenario 'wrong-forecast': 2 of 2 expectation(s) not met",
            "  expect.iterations",
            "    expected: 3",
            "    actual:   4",
            "  expect.final.contains",
            '    expected: ["rainy"]',
            '    actual:   "It is 72F in SF."',
            "trajectory (agentbuilder, 4 iteration(s), 2 LLM call(s)):",
            "    1  llm#1 -> get_weather",
            '    2  ran: get_weather(city="SF")',
            "    3  llm#2 -> text",
            '    => completed: "It is 72F in SF."',
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_scenario_that_ends_in_error_is_a_pytest_error_with_the_message(pytester):
    write(pytester, broken_scenario=ERRORING)
    result = pytester.runpytest()
    assert result.ret == 1
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "_* ERROR at call of broken (broken.scenario.yaml) _*",
            "*scenario 'broken' ended in error*",
            "  error: broken.scenario.yaml:5: tools.get_weather.returns: template error:*",
        ]
    )


INVALID = """\
name: invalid
input: Weather?
tools:
  get_weather:
    parameters: {city: str, days: int}
llm:
  script:
    - tool_calls:
        - {get_weather: {city: 1, days: soon}}
        - {get_weather: {city: 2, days: later}}
expect: {termination: completed}
"""


def test_a_long_validation_error_is_shown_below_when_the_trajectory_says_so(pytester):
    write(pytester, invalid_scenario=INVALID)
    result = pytester.runpytest()
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "    => validation_error: *(message below)",
            "validation_error message:",
            "  get_weather (call_1_0): *city*; get_weather (call_1_1): *",
        ]
    )


RECORDED = """\
name: weather
input: Weather in SF?
tools:
  get_weather:
    parameters: {city: str}
    returns: "72F in {{ args.city }}"
llm: {provider: openai, model: gpt-4o-mini, cassette: weather.yaml, base_url: "URL"}
"""


def test_a_cassette_miss_shows_its_message_whole_below_the_trajectory(pytester, monkeypatch):
    from harness.llm._script import ScriptStep
    from harness.serve import create_app, running_app

    for name in ("OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    steps = [{"tool_calls": [{"get_weather": {"city": "SF"}}]}, {"content": "It is warm."}]
    with running_app(create_app([ScriptStep.model_validate(s) for s in steps])) as url:
        write(pytester, weather_scenario=RECORDED.replace("URL", url))
        # (Subprocesses: cassette loading keeps module state that pytester's in-process
        # runs would tear apart between sessions.)
        assert pytester.runpytest_subprocess("--record-mode", "once").ret == 0
    # The tool now answers differently: the second request is not in the cassette.
    write(pytester, weather_scenario=RECORDED.replace("URL", url).replace("72F", "65F"))
    for verbosity in ([], ["-v"]):
        result = pytester.runpytest_subprocess(*verbosity)
        assert result.ret == 1
        result.stdout.fnmatch_lines(
            [
                '    => llm_error: "cassette miss: request 2 of the run * (message below)',
                "llm_error message:",
                "  *weather.yaml*",
                "*Nearest recorded request: interaction 2*",
                '  -      "content": "72F in SF",',
                '  +      "content": "65F in SF",',
            ]
        )
        out = result.stdout.str()
        assert "\\n" not in out and "more characters; -v shows all" not in out


def test_parallel_calls_are_shown_side_by_side_in_the_trajectory(pytester):
    write(
        pytester, fan_scenario=PARALLEL.replace("[[get_weather, get_weather, get_weather]]", "[]")
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        ['*2  ran in parallel: get_weather(city="SF"), get_weather(city="LA"), get_weather(*']
    )


STOPPED_PLAN = """\
name: stopped
input: Weather?
tools:
  get_weather:
    parameters: {city: str}
llm:
  script:
    - tool_calls: [{get_weather: {city: SF}}, {get_weather: {town: LA}}]
expect: {termination: completed}
"""


def test_a_plan_where_nothing_ran_is_not_said_to_have_run_in_parallel(pytester):
    # Validation stopped the plan: none of its calls ran, in parallel or otherwise.
    write(pytester, stopped_scenario=STOPPED_PLAN)
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(['*2  not run: get_weather(city="SF")*, get_weather(town="LA")*'])
    assert "ran in parallel" not in result.stdout.str()


def test_long_trajectories_are_cut_in_the_middle_unless_verbose(tmp_path):
    from harness.scenario import run_scenario

    path = tmp_path / "long.scenario.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            input: go
            agent: {max_iterations: 40, stagnation: {window: 0}}
            tools:
              tick: {parameters: {n: int}, returns: ok}
            llm:
              script:
                - tool_calls: [{tick: {n: 1}}]
                  repeat: 30
            expect: {termination: completed}
            """
        )
    )
    result = run_scenario(path)
    short = trajectory_lines(result)
    full = trajectory_lines(result, verbose=True)
    assert len(full) == 41
    assert full[-1].startswith('  => max_iterations: "Max iterations reached (')
    assert len(short) == 21 and "more iteration(s); -v shows all" in short[10]
    assert "expect.termination" in format_failure(result)


# -- results.json ----------------------------------------------------------------------------


def test_results_json_follows_the_design_and_is_sorted_by_id(pytester):
    write(pytester, z_scenario=PASSING.replace("greet", "zeta"), wrong_scenario=FAILING)
    write(pytester, broken_scenario=ERRORING)
    result = pytester.runpytest("--harness-json=reports/results.json")
    assert result.ret == 1
    path = pytester.path / "reports/results.json"
    data = load(path)
    assert list(data) == ["schema_version", "meta", "summary", "scenarios"]
    assert {"versions", "started"} <= set(data["meta"])
    assert data["summary"]["total"] == 3
    assert data["summary"]["by_status"] == {"error": 1, "failed": 1, "passed": 1}
    ids = [s["id"] for s in data["scenarios"]]
    assert (
        ids
        == sorted(ids)
        == [
            "broken.scenario.yaml::broken",
            "wrong.scenario.yaml::wrong-forecast",
            "z.scenario.yaml::zeta",
        ]
    )
    wrong = data["scenarios"][1]
    assert wrong["status"] == "failed" and wrong["file"] == "wrong.scenario.yaml"
    assert {"path", "expected", "actual", "ok"} == set(wrong["expectations"][0])
    Results.load(path)  # it reads back
    # Written through a temporary file and a rename: nothing else is left behind.
    assert sorted(p.name for p in path.parent.iterdir()) == ["results.json"]
    result.stdout.fnmatch_lines(
        [
            "*harness summary*",
            "scenarios: 3 (1 error, 1 failed, 1 passed)*",
            "terminations: completed 2, error 1",
            "results: reports/results.json",
        ]
    )


def test_the_slowest_list_leaves_out_what_would_show_as_0_00s(pytester, tmp_path):
    from harness._results import build_results
    from harness.pytest_plugin._outputs import summary_lines
    from harness.pytest_plugin._session import SuiteState
    from harness.scenario import run_scenario

    path = tmp_path / "greet.scenario.yaml"
    path.write_text(PASSING)
    config = pytester.parseconfig()
    state = SuiteState(config)

    def summary(*wall_times: float) -> list[str]:
        scenarios = []
        for i, wall_time in enumerate(wall_times):
            result = run_scenario(path)
            scenarios.append(result.model_copy(update={"id": f"s{i}", "wall_time": wall_time}))
        state.outputs.final = build_results(scenarios)
        return summary_lines(
            state.outputs.final, state.outputs, state.ledger, state.options, cwd=tmp_path
        )

    assert not any("slowest" in line for line in summary(0.001, 0.0049))
    lines = summary(0.001, 0.25, 0.005)
    start = lines.index("slowest:")
    assert lines[start + 1 :] == ["     0.25s  s1", "     0.01s  s2"]


def test_the_same_suite_gives_the_same_results_twice(pytester):
    write(pytester, fan_scenario=PARALLEL, wrong_scenario=FAILING)
    pytester.runpytest("--harness-json=a.json")
    pytester.runpytest("--harness-json=b.json")
    assert stable(load(pytester.path / "a.json")) == stable(load(pytester.path / "b.json"))


def test_xdist_results_equal_a_serial_run(pytester):
    names = {f"s{i:02d}_scenario": PARALLEL.replace("fan-out", f"fan-{i}") for i in range(6)}
    write(pytester, wrong_scenario=FAILING, broken_scenario=ERRORING, **names)
    serial = pytester.runpytest_subprocess("--harness-json=serial.json", "-p", "no:xdist")
    parallel = pytester.runpytest_subprocess("-n", "2", "--harness-json=parallel.json")
    assert serial.ret == parallel.ret == 1
    assert "2 workers" in parallel.stdout.str()
    one, two = load(pytester.path / "serial.json"), load(pytester.path / "parallel.json")
    assert len(one["scenarios"]) == 8
    assert stable(one) == stable(two)


def test_baseline_diff_goes_into_the_results(pytester):
    passing_before = FAILING.replace("iterations: 3", "iterations: 4").replace("rainy", "72F")
    write(pytester, greet_scenario=PASSING, wrong_scenario=passing_before)
    assert pytester.runpytest("--harness-json=base.json").ret == 0
    write(pytester, wrong_scenario=FAILING)  # now it fails: a regression
    result = pytester.runpytest("--harness-json=new.json", "--harness-baseline=base.json")
    assert result.ret == 1
    diff = load(pytester.path / "new.json")["baseline"]
    assert [r["id"] for r in diff["regressions"]] == ["wrong.scenario.yaml::wrong-forecast"]
    assert diff["fixed"] == diff["added"] == diff["removed"] == []
    result.stdout.fnmatch_lines(
        ["baseline base.json: 1 regression, 0 fixed, *", "  regression: wrong.scenario.yaml*"]
    )
    assert "baseline" not in load(pytester.path / "base.json")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "--harness-baseline 'base.json' does not exist"),
        ("{not json", "--harness-baseline 'base.json' is not valid JSON: Expecting property name*"),
        (
            '{"schema_version": 3, "scenarios": []}',
            "--harness-baseline 'base.json' has schema_version 3; this harness reads schema_version 1 to 2: upgrade harness*",
        ),
    ],
    ids=["missing", "not-json", "newer"],
)
def test_a_baseline_that_cannot_be_used_is_a_usage_error(pytester, content, message):
    """The same loader, and the same one-line errors, as `harness report --baseline`."""
    write(pytester, greet_scenario=PASSING)
    if content is not None:
        (pytester.path / "base.json").write_text(content)
    result = pytester.runpytest("--harness-baseline=base.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "Traceback" not in result.stderr.str()


NARROWING = {
    "greet_scenario": PASSING,
    "calm_scenario": PASSING.replace("name: greet", "name: calm").replace("[smoke]", "[nightly]"),
    "sub__deep_scenario": PASSING.replace("name: greet", "name: deep").replace("[smoke]", "[]"),
}


def test_a_narrowed_run_lists_what_it_did_not_run_as_not_run_not_removed(pytester):
    write(pytester, **NARROWING)
    assert pytester.runpytest("--harness-json=base.json").ret == 0
    runs = {
        "k": ["-k", "greet"],
        "m": ["-m", "smoke"],
        "path": ["greet.scenario.yaml"],
        "folder": ["sub"],
    }
    for name, args in runs.items():
        result = pytester.runpytest(
            *args, f"--harness-json={name}.json", "--harness-baseline=base.json"
        )
        assert result.ret == 0, name
        diff = load(pytester.path / f"{name}.json")["baseline"]
        assert diff["removed"] == [], name
        assert len(diff["not_run"]) == 2 and diff["compared"] == 1, name
        result.stdout.fnmatch_lines(["baseline base.json: * 0 removed, 2 not run"])


def test_removed_means_gone_from_where_the_run_looked(pytester):
    write(pytester, **NARROWING)
    assert pytester.runpytest("--harness-json=base.json").ret == 0
    (pytester.path / "calm.scenario.yaml").unlink()  # the file is gone
    write(pytester, sub__deep_scenario=NARROWING["sub__deep_scenario"].replace("deep", "deeper"))

    # A run of sub/ only: the deleted file lies outside it, so it is not run, not removed;
    # the renamed scenario's file was collected and no longer holds the old name: removed.
    result = pytester.runpytest("sub", "--harness-json=sub.json", "--harness-baseline=base.json")
    diff = load(pytester.path / "sub.json")["baseline"]
    assert [r["id"] for r in diff["removed"]] == ["sub/deep.scenario.yaml::deep"]
    assert [r["id"] for r in diff["added"]] == ["sub/deep.scenario.yaml::deeper"]
    assert sorted(r["id"] for r in diff["not_run"]) == [
        "calm.scenario.yaml::calm",
        "greet.scenario.yaml::greet",
    ]

    # A run of everything, even one deselecting most: the deleted file is removed.
    for args in ([], ["-k", "greet"]):
        result = pytester.runpytest(
            *args, "--harness-json=all.json", "--harness-baseline=base.json"
        )
        assert result.ret == 0
        diff = load(pytester.path / "all.json")["baseline"]
        assert [r["id"] for r in diff["removed"]] == [
            "calm.scenario.yaml::calm",
            "sub/deep.scenario.yaml::deep",
        ]


def test_not_run_is_the_same_under_xdist(pytester):
    write(pytester, **NARROWING)
    assert pytester.runpytest("--harness-json=base.json").ret == 0
    (pytester.path / "calm.scenario.yaml").unlink()
    common = ("-m", "smoke or nightly", "--harness-baseline=base.json")
    serial = pytester.runpytest_subprocess(*common, "--harness-json=serial.json", "-p", "no:xdist")
    parallel = pytester.runpytest_subprocess(*common, "--harness-json=parallel.json", "-n", "2")
    assert serial.ret == parallel.ret == 0
    one, two = load(pytester.path / "serial.json"), load(pytester.path / "parallel.json")
    assert stable(one) == stable(two)
    assert [r["id"] for r in one["baseline"]["not_run"]] == ["sub/deep.scenario.yaml::deep"]
    assert [r["id"] for r in one["baseline"]["removed"]] == ["calm.scenario.yaml::calm"]
    # The deselected count reaches the controller, as in a serial run.
    parallel.stdout.fnmatch_lines(["*1 passed, 1 deselected*"])
    nothing = pytester.runpytest_subprocess("-n", "2", "-m", "nomatch")
    assert nothing.ret == 5
    nothing.stdout.fnmatch_lines(["*2 deselected*"])


def test_the_html_report_is_written(pytester):
    write(pytester, greet_scenario=PASSING)
    result = pytester.runpytest("--harness-html=out/report.html")
    assert result.ret == 0
    page = (pytester.path / "out/report.html").read_text()
    assert page.startswith("<!") and "greet" in page


def test_a_report_that_cannot_be_written_exits_3(pytester):
    write(pytester, greet_scenario=PASSING)
    (pytester.path / "blocker").write_text("a file, not a folder")
    result = pytester.runpytest("--harness-json=blocker/results.json")
    assert result.ret == 3
    result.stdout.fnmatch_lines(["report error: *blocker/results.json not written*"])


def test_nothing_selected_writes_nothing_and_exits_5(pytester):
    write(pytester, greet_scenario=PASSING)
    result = pytester.runpytest("-k", "nomatch", "--harness-json=out.json")
    assert result.ret == 5
    assert not (pytester.path / "out.json").exists()


# -- options ---------------------------------------------------------------------------------

RECORD_PROBE = """\
def test_probe(harness, pytestconfig):
    print("MODE", harness.record_mode, harness.disable_recording)
    print("RECORDING", pytestconfig.pluginmanager.has_plugin("recording")
          or pytestconfig.pluginmanager.has_plugin("pytest_recording.plugin"))
"""


@pytest.mark.parametrize(
    ("autoload", "plugins", "recording"),
    [
        (True, [], True),
        (True, ["-p", "no:recording"], False),
        (False, ["-p", "harness", "-p", "recording"], True),
        (False, ["-p", "recording", "-p", "harness"], True),
        (False, ["-p", "harness.pytest_plugin", "-p", "pytest_recording.plugin"], True),
        (False, ["-p", "pytest_recording.plugin", "-p", "harness.pytest_plugin"], True),
        # Installed but not asked for: harness loads it, the one owner of --record-mode.
        (False, ["-p", "harness"], True),
        (False, ["-p", "harness", "-p", "no:recording"], False),
    ],
    ids=[
        "autoload",
        "recording-blocked",
        "harness-first",
        "recording-first",
        "modules-harness-first",
        "modules-recording-first",
        "harness-alone",
        "harness-alone-recording-blocked",
    ],
)
def test_record_mode_is_shared_with_pytest_recording_in_any_load_order(
    pytester, monkeypatch, autoload, plugins, recording
):
    if autoload:
        monkeypatch.delenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    else:
        monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_probe=RECORD_PROBE)
    # In-process: pytest reads the environment and -p afresh for each session.
    result = pytester.runpytest(
        *plugins, "-s", "--record-mode", "new_episodes", "--disable-recording"
    )
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*MODE new_episodes True", f"RECORDING {recording}"])
    assert "already used" not in result.stderr.str()


@pytest.mark.parametrize("where", ["conftest", "ini-addopts"])
def test_record_mode_is_shared_when_pytest_recording_comes_from_a_conftest_or_the_ini(
    pytester, monkeypatch, where
):
    """The two places pytest reads after harness has added its options."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    pytester.makepyfile(test_probe=RECORD_PROBE)
    write(pytester, greet_scenario=PASSING)
    if where == "conftest":
        pytester.makeconftest('pytest_plugins = ["pytest_recording.plugin"]\n')
        plugins = ["-p", "harness"]
    else:
        pytester.makeini("[pytest]\naddopts = -p harness -p recording\n")
        plugins = []
    result = pytester.runpytest(*plugins, "-s", "--record-mode", "new_episodes")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["*MODE new_episodes False", "RECORDING True"])
    result.assert_outcomes(passed=2)


def test_record_mode_defaults_to_none_and_rejects_unknown_values(pytester):
    pytester.makepyfile(test_probe=RECORD_PROBE)
    result = pytester.runpytest("-s", "-p", "no:recording")
    result.stdout.fnmatch_lines(["*MODE none False"])
    result = pytester.runpytest("-p", "no:recording", "--record-mode", "sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--record-mode*invalid choice: 'sometimes'*"])


PLANNER_PLUGIN = """\
from harness import hookimpl
from harness._actions import CompleteAction


class Done:
    def step(self, run):
        return CompleteAction(content="done by the plugin planner")


@hookimpl
def harness_register_planners(register):
    register("always-done", lambda config: Done())
"""

PLUGIN_SCENARIO = """\
input: hi
agent: {planner: always-done}
expect:
  final: {equals: done by the plugin planner}
"""


def test_harness_plugin_reaches_xdist_workers(pytester):
    pytester.makepyfile(my_planner=PLANNER_PLUGIN)
    for i in range(4):
        write(pytester, **{f"p{i}_scenario": PLUGIN_SCENARIO})
    result = pytester.runpytest_subprocess(
        "-n", "2", "--harness-plugin", "my_planner", "--harness-json=out.json"
    )
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=4)
    assert load(pytester.path / "out.json")["summary"]["by_status"] == {"passed": 4}
    # Without the plugin the planner is unknown: every file is a collection error.
    result = pytester.runpytest_subprocess("-n", "2")
    assert result.ret == 2
    result.stdout.fnmatch_lines(["*agent.planner: unknown planner 'always-done'*"])


def test_a_harness_plugin_that_does_not_import_is_a_usage_error(pytester):
    write(pytester, greet_scenario=PASSING)
    result = pytester.runpytest_subprocess("--harness-plugin", "no_such_module_here")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--harness-plugin:*no_such_module_here*"])


CRASHING_LLM = """\
from harness import hookimpl

@hookimpl
def harness_register_llms(register):
    def factory(config):
        raise RuntimeError("factory bug")
    register("crashing", factory)
"""


def test_an_exception_raised_in_a_plugin_is_that_plugins_error_with_a_short_traceback(pytester):
    pytester.makepyfile(crashing_llm=CRASHING_LLM)
    write(pytester, crash_scenario="input: hi\nllm: {provider: crashing}\n", greet_scenario=PASSING)
    result = pytester.runpytest_subprocess(
        "--harness-plugin", "crashing_llm", "--harness-json=out.json"
    )
    assert result.ret == 1  # a scenario errored; harness did not crash
    result.assert_outcomes(passed=1, errors=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "RuntimeError: factory bug (raised in plugin crashing_llm (crashing_llm.py:6), "
            "not in harness: the scenario ends in error)",
            "*harness/scenario/_runner.py:*: in arun_scenario",
            "crashing_llm.py:6: in factory",
            '    raise RuntimeError("factory bug")',
            "E   RuntimeError: factory bug",
        ]
    )
    errors = out[out.index("= ERRORS =") : out.index("harness summary")]
    assert len(errors.splitlines()) < 30, errors
    assert "_pytest" not in errors and "pluggy" not in errors
    assert "harness crashed" not in out
    entry = next(s for s in load(pytester.path / "out.json")["scenarios"] if s["name"] == "crash")
    assert entry["status"] == "error" and entry["final"]["error"]["message"] == "factory bug"


BREAKING_CONFTEST = """\
import harness.scenario._runner as runner

def pytest_configure(config):
    # A bug inside harness: the runner calls something that is not callable.
    runner.evaluate = None
"""


def test_an_exception_raised_in_harness_is_an_internal_error_exit_3(pytester):
    pytester.makeconftest(BREAKING_CONFTEST)
    write(pytester, greet_scenario=PASSING)
    result = pytester.runpytest_subprocess("--harness-json=out.json")
    assert result.ret == 3
    result.stdout.fnmatch_lines(
        [
            "TypeError: 'NoneType' object is not callable (harness crashed: a bug in harness, "
            "please report it with this traceback)",
            "*harness/scenario/_runner.py:*: in arun_scenario",
            "E   TypeError: 'NoneType' object is not callable",
            "harness crashed: greet.scenario.yaml::greet: TypeError: *",
        ]
    )
    out = result.stdout.str()
    errors = out[out.index("= ERRORS =") : out.index("harness summary")]
    assert "_pytest" not in errors and "pluggy" not in errors
    (entry,) = load(pytester.path / "out.json")["scenarios"]
    assert entry["status"] == "error"
    # --fulltrace shows pytest's frames too.
    full = pytester.runpytest_subprocess("--fulltrace")
    assert "_pytest" in full.stdout.str()


SIGINT_LLM = """\
import os
import signal

from harness import hookimpl
from harness.llm import ScriptedLLM

# Ctrl-C must reach every process that loads this plugin, even when the test run was
# started with SIGINT ignored (a background job inherits that): Python's own handler.
signal.signal(signal.SIGINT, signal.default_int_handler)


@hookimpl
def harness_register_llms(register):
    def factory(config):
        if config.context.scenario_id:  # running, not being checked at load
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C
        return ScriptedLLM([{"content": "never"}])

    register("interrupting", factory)
"""


def test_an_interrupted_run_writes_no_reports(pytester):
    pytester.makepyfile(sigint_llm=SIGINT_LLM)
    for name in ("a1", "a2", "b3", "b4", "b5"):
        write(pytester, **{f"{name}_scenario": PASSING.replace("greet", name)})
    reports = ("--harness-json=out.json", "--harness-html=out.html")
    assert pytester.runpytest_subprocess(*reports).ret == 0
    before = {name: (pytester.path / name).read_bytes() for name in ("out.json", "out.html")}

    # The third scenario (in file order) presses Ctrl-C.
    write(pytester, b2_scenario="input: hi\nllm: {provider: interrupting}\n")
    result = pytester.runpytest_subprocess("--harness-plugin", "sigint_llm", *reports)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "a2.scenario.yaml .*",  # two scenarios ran before it
            "interrupted: nothing was written (reports and baseline left as they were)",
        ]
    )
    assert {name: (pytester.path / name).read_bytes() for name in before} == before


def test_an_interrupted_run_leaves_the_traces_as_they_were(pytester):
    # The traces follow the reports: a run stopped part way would overwrite a good file
    # with a partial one.
    pytester.makepyfile(sigint_llm=SIGINT_LLM)
    for name in ("a1", "a2", "b3"):
        write(pytester, **{f"{name}_scenario": PASSING.replace("greet", name)})
    traces = "--harness-otel=traces.json"
    assert pytester.runpytest_subprocess(traces).ret == 0
    before = (pytester.path / "traces.json").read_bytes()
    assert b"a1.scenario.yaml" in before

    write(pytester, b2_scenario="input: hi\nllm: {provider: interrupting}\n")
    result = pytester.runpytest_subprocess("--harness-plugin", "sigint_llm", traces)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert (pytester.path / "traces.json").read_bytes() == before


def test_scenarios_only_skips_python_tests_in_folders_but_not_named_files(pytester):
    write(pytester, greet_scenario=PASSING)
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest("--harness-scenarios-only", ".")
    result.assert_outcomes(passed=1)
    result = pytester.runpytest("--harness-scenarios-only", "greet.scenario.yaml", "test_plain.py")
    result.assert_outcomes(passed=2)


# -- the harness fixture ---------------------------------------------------------------------


def test_the_fixture_runs_files_and_scenario_objects(pytester):
    write(pytester, data__greet_scenario=PASSING, data__wrong_scenario=FAILING)
    pytester.makepyfile(
        test_fixture=textwrap.dedent(
            """\
            import pytest

            def test_file(harness):
                result = harness.run("data/greet.scenario.yaml")
                assert result.status == "passed" and result.final.content == "It is 72F in SF."

            def test_object(harness):
                scenario = harness.load("data/greet.scenario.yaml")
                assert harness.run(scenario).id == "data/greet.scenario.yaml::greet"

            def test_unchecked(harness):
                result = harness.run("data/wrong.scenario.yaml", check=False)
                assert [e.path for e in result.failed_expectations] == [
                    "iterations", "final.contains"]

            def test_checked_fails_with_the_explanation(harness):
                harness.run("data/wrong.scenario.yaml")

            async def _arun(harness):
                return await harness.arun("data/greet.scenario.yaml")

            def test_arun(harness):
                import asyncio
                assert asyncio.run(_arun(harness)).status == "passed"
            """
        )
    )
    result = pytester.runpytest("test_fixture.py")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(
        ["*test_checked_fails_with_the_explanation*", "*expect.final.contains*"]
    )


def test_the_fixture_builds_agents_and_registers_plugins_for_one_test(pytester):
    pytester.makepyfile(
        test_agent=textwrap.dedent(
            """\
            from harness import tool, hookimpl
            from harness._plugins import discover

            @tool
            def add(a: int, b: int) -> int:
                \"\"\"Add two numbers.\"\"\"
                return a + b

            class Seen:
                def __init__(self):
                    self.ends = 0

                @hookimpl
                def harness_agent_end(self, run, final):
                    self.ends += 1

            seen = Seen()

            def test_agent(harness):
                harness.register(seen)
                agent = harness.agent(
                    [{"tool_calls": [{"add": {"a": 1, "b": 2}}]}, {"content": "3"}],
                    tools=[add], max_iterations=6)
                result = agent.run("1+2?")
                assert result.termination == "completed" and result.final.content == "3"
                assert result.tool_calls[0].result == 3
                assert seen.ends == 1

            def test_unregistered_afterwards():
                assert not any(p is seen for _, p in discover().plugins())

            def test_registering_a_loaded_plugin_again(harness):
                import harness._stagnation as builtin
                harness.register(builtin)

            def test_a_plugin_loaded_before_stays_loaded():
                import harness._stagnation as builtin
                assert any(p is builtin for _, p in discover().plugins())
            """
        )
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=4)


def test_running_a_file_from_python_matches_the_item(pytester):
    """The fixture and the collected item give the same result for one file."""
    write(pytester, fan_scenario=PARALLEL)
    target = pytester.path / "fixture.json"
    pytester.makepyfile(
        test_same=textwrap.dedent(
            f"""\
            import json

            def test_same(harness):
                data = json.loads(harness.run("fan.scenario.yaml").model_dump_json())
                data.pop("wall_time")
                open({str(target)!r}, "w").write(json.dumps(data))
            """
        )
    )
    assert pytester.runpytest("fan.scenario.yaml", "--harness-json=item.json").ret == 0
    assert pytester.runpytest("test_same.py").ret == 0
    (item,) = load(pytester.path / "item.json")["scenarios"]
    item.pop("wall_time")
    assert item == load(target)


def test_verbose_lines_and_failure_headers_name_the_scenario_and_its_file(pytester):
    write(pytester, sub__good_scenario=PASSING, sub__bad_scenario=FAILING)
    result = pytester.runpytest("-v")
    result.stdout.fnmatch_lines(
        [
            "sub/bad.scenario.yaml::wrong-forecast FAILED*",
            "sub/good.scenario.yaml::greet PASSED*",
            "*_ wrong-forecast (sub/bad.scenario.yaml) _*",
        ]
    )
    assert "::scenario::yaml" not in result.stdout.str()


def test_verbose_failures_show_long_values_in_full(pytester):
    long_answer = "x" * 400
    write(
        pytester,
        long_scenario=FAILING.replace("It is 72F in SF.", long_answer).replace(
            "  iterations: 3\n", ""
        ),
    )
    short = pytester.runpytest()
    assert "more characters; -v shows all" in short.stdout.str()
    full = pytester.runpytest("-v")
    assert long_answer in full.stdout.str()


def test_calls_run_one_after_another_are_not_called_parallel(pytester):
    sequential = PARALLEL.replace("[[get_weather, get_weather, get_weather]]", "[]").replace(
        "input: weather", "agent: {parallel_tools: false}\ninput: weather"
    )
    write(pytester, fan_scenario=sequential)
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        ['*2  ran one after another: get_weather(city="SF"), get_weather(city="LA"), *']
    )


def test_the_plugins_copies_of_shared_constants_are_current():
    """The plugin keeps its own copies so that loading it imports nothing of harness."""
    from harness.llm._config import RECORD_MODES
    from harness.pytest_plugin import _options as options
    from harness.scenario._loader import SUFFIX, SUFFIXES

    assert options.SUFFIX == SUFFIX
    assert options.SUFFIXES == SUFFIXES
    assert tuple(options.RECORD_MODES) == tuple(RECORD_MODES)
