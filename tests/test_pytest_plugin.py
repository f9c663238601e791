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

from harness.pytest_plugin import format_failure, trajectory_lines
from harness.results import Results

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
    returns: "{{ args.cty.upper() }}"
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
    (pytester.path / "other.scenario.yml").write_text(BAD)
    result = pytester.runpytest("--collect-only", "-q")
    result.stdout.fnmatch_lines(
        ["greet.scenario.yaml::greet", "sub/wrong.scenario.yaml::wrong-forecast", "*2 tests*"]
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


def test_a_failure_shows_each_unmet_expectation_and_the_trajectory(pytester):
    write(pytester, wrong_scenario=FAILING)
    result = pytester.runpytest()
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*scenario 'wrong-forecast': 2 of 2 expectation(s) not met",
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
            "*scenario 'broken' ended in error*",
            "  AbortRun: broken.scenario.yaml:5: tools.get_weather.returns: template error:*",
        ]
    )


def test_parallel_calls_are_shown_side_by_side_in_the_trajectory(pytester):
    write(
        pytester, fan_scenario=PARALLEL.replace("[[get_weather, get_weather, get_weather]]", "[]")
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        ['*2  ran in parallel: get_weather(city="SF"), get_weather(city="LA"), get_weather(*']
    )


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
    assert len(full) == 41 and full[-1] == '  => max_iterations: "Max iterations reached"'
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
            "slowest:",
            "results: reports/results.json",
        ]
    )


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
        ["baseline base.json: 1 regressions, 0 fixed, *", "  regression: wrong.scenario.yaml*"]
    )
    assert "baseline" not in load(pytester.path / "base.json")


def test_a_missing_baseline_is_a_usage_error(pytester):
    write(pytester, greet_scenario=PASSING)
    result = pytester.runpytest("--harness-baseline=nope.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--harness-baseline nope.json: no such file*"])


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
        (False, ["-p", "harness"], False),
    ],
    ids=[
        "autoload",
        "recording-blocked",
        "harness-first",
        "recording-first",
        "modules-harness-first",
        "modules-recording-first",
        "harness-alone",
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


def test_record_mode_defaults_to_none_and_rejects_unknown_values(pytester):
    pytester.makepyfile(test_probe=RECORD_PROBE)
    result = pytester.runpytest("-s", "-p", "no:recording")
    result.stdout.fnmatch_lines(["*MODE none False"])
    result = pytester.runpytest("-p", "no:recording", "--record-mode", "sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--record-mode*invalid choice: 'sometimes'*"])


PLANNER_PLUGIN = """\
from harness import hookimpl
from harness.actions import CompleteAction


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


def test_an_exception_escaping_the_runner_is_an_internal_error_exit_3(pytester):
    pytester.makepyfile(
        crashing_llm=textwrap.dedent(
            """\
            from harness import hookimpl

            @hookimpl
            def harness_register_llms(register):
                def factory(config):
                    raise RuntimeError("factory bug")
                register("crashing", factory)
            """
        )
    )
    write(pytester, crash_scenario="input: hi\nllm: {provider: crashing}\n")
    result = pytester.runpytest_subprocess(
        "--harness-plugin", "crashing_llm", "--harness-json=out.json"
    )
    assert result.ret == 3
    result.stdout.fnmatch_lines(["*RuntimeError: factory bug*", "harness crashed: *factory bug*"])
    (entry,) = load(pytester.path / "out.json")["scenarios"]
    assert entry["status"] == "error" and entry["final"]["error"]["message"] == "factory bug"


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
            from harness.plugins import get_plugins

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
                assert not any(p is seen for _, p in get_plugins().plugins())

            def test_registering_a_loaded_plugin_again(harness):
                import harness.stagnation as builtin
                harness.register(builtin)

            def test_a_plugin_loaded_before_stays_loaded():
                import harness.stagnation as builtin
                assert any(p is builtin for _, p in get_plugins().plugins())
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
    from harness import pytest_plugin
    from harness.llm.config import RECORD_MODES
    from harness.scenario.loader import SUFFIX

    assert pytest_plugin.SUFFIX == SUFFIX
    assert tuple(pytest_plugin.RECORD_MODES) == tuple(RECORD_MODES)
