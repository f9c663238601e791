"""The ``harness`` command: run (through pytest), record, validate, schema, plugins.

``harness run`` is started as a real process (``python -m harness.cli``) in a
throw-away project, as a user starts it; the commands that do not run pytest are
called in-process.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from scenario_texts import PASSING, SESSION_TESTS

from harness import __version__, cli
from harness._results import Results

pytestmark = SESSION_TESTS

FAILING = (
    PASSING.replace("name: greet", "name: wrong")
    .replace("contains: 72F", "contains: rain")
    .replace("[smoke]", "[nightly]")
)
ERRORING = PASSING.replace("name: greet", "name: broken").replace("args.city", "args.city.x.y")
BAD = "input: hi\nagent: {max_iteration: 3}\n"

PROBE_LLM = """\
from harness import hookimpl
from harness.llm import ScriptedLLM


@hookimpl
def harness_register_llms(register):
    # Answers with the record mode the scenario runs under.
    register("probe", lambda config: ScriptedLLM([{"content": config.context.record_mode}]))
"""

PROBE_SCENARIO = "input: hi\nllm: {provider: probe}\nexpect: {final: {equals: %s}}\n"


@pytest.fixture
def project(pytester):
    """An empty project: a pyproject.toml and a scenarios/ folder."""
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (pytester.path / "scenarios").mkdir()
    return pytester


def add(pytester, name: str, text: str) -> None:
    path = pytester.path / "scenarios" / f"{name}.scenario.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def harness(pytester, *args: str) -> pytest.RunResult:
    """``harness ARGS`` in a process of its own, as a user starts it."""
    return pytester.run(sys.executable, "-m", "harness.cli", *args, timeout=300)


def output(result: pytest.RunResult) -> str:
    return result.stdout.str() + "\n" + result.stderr.str()


@pytest.fixture
def run(project, monkeypatch, capsys):
    """``harness ARGS`` in this process (pytest.main in-process, as the CLI does).

    Much faster than a process per call; returns (exit status, stdout, stderr).
    """
    monkeypatch.chdir(project.path)
    monkeypatch.syspath_prepend(str(project.path))

    def call(*args: str) -> tuple[int, str, str]:
        status = cli.main(list(args))
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return call


# -- harness run: exit statuses --------------------------------------------------------------


def test_run_passes_and_writes_reports_in_the_project(project):
    add(project, "greet", PASSING)
    result = harness(project, "run")  # no PATHS: the project's scenarios/
    assert result.ret == 0, output(result)
    result.stdout.fnmatch_lines(
        [
            "scenarios/greet.scenario.yaml .*",
            "*harness summary*",
            "scenarios: 1 (1 passed)*",
            "terminations: completed 1",
            "results: reports/results.json, reports/report.html",
        ]
    )
    data = Results.load(project.path / "reports/results.json")
    assert [s.id for s in data.scenarios] == ["scenarios/greet.scenario.yaml::greet"]
    assert (project.path / "reports/report.html").read_text().startswith("<!")


def test_run_from_a_subfolder_writes_the_same_reports(project, run, monkeypatch):
    add(project, "greet", PASSING)
    monkeypatch.chdir(project.path / "scenarios")
    status, out, _ = run("run", ".")
    assert status == 0, out
    data = Results.load(project.path / "reports/results.json")
    assert [s.id for s in data.scenarios] == ["scenarios/greet.scenario.yaml::greet"]


def test_run_exits_1_when_a_scenario_fails_or_errors(project, run):
    add(project, "greet", PASSING)
    add(project, "wrong", FAILING)
    status, out, err = run("run", "scenarios")
    assert status == 1, out + err
    assert "expect.final.contains" in out and "scenarios: 2 (1 failed, 1 passed)" in out
    add(project, "wrong", PASSING.replace("greet", "wrong"))
    add(project, "broken", ERRORING)
    status, out, _ = run("run", "scenarios")
    assert status == 1
    # Leftover warnings of earlier in-process sessions may add ", N warnings".
    assert re.search(r"\b2 passed, (\d+ warnings?, )?1 error\b", out), out


def test_run_exits_2_on_a_bad_scenario_file(project, run):
    add(project, "greet", PASSING)
    add(project, "bad", BAD)
    status, out, err = run("run")
    assert status == 2
    own_lines = re.findall(
        r"^scenarios/bad\.scenario\.yaml:2: agent\.max_iteration: unknown key", out, re.M
    )
    assert len(own_lines) == 1, out
    assert "Traceback" not in out + err


def test_run_exits_2_on_a_bad_scenario_file_under_xdist(project):
    add(project, "greet", PASSING)
    add(project, "bad", BAD)
    result = harness(project, "run", "-n", "2")
    assert result.ret == 2
    text = output(result)
    # Once in the errors section; the short test summary line ("ERROR path - message",
    # untruncated when pytest sees CI set) is not a second report.
    own_lines = re.findall(
        r"^scenarios/bad\.scenario\.yaml:2: agent\.max_iteration: unknown key", text, re.M
    )
    assert len(own_lines) == 1, text
    assert "Traceback" not in text


def test_run_exits_5_when_nothing_is_selected(project, run):
    add(project, "greet", PASSING)
    assert run("run", "-k", "no_such_name")[0] == 5
    assert run("run", "-m", "nightly")[0] == 5
    assert not (project.path / "reports/results.json").exists()


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
            os.killpg(os.getpgid(0), signal.SIGINT)  # Ctrl-C: the whole process group
        return ScriptedLLM([{"content": "never"}])

    register("interrupting", factory)
"""


@pytest.mark.parametrize(
    "workers", [[], ["-n", "2"], ["--chunk-size", "2"]], ids=["serial", "xdist", "parts"]
)
def test_ctrl_c_leaves_reports_and_baseline_as_they_were(project, workers):
    for i in range(5):
        add(project, f"s{i}", PASSING.replace("greet", f"s{i}"))
    assert harness(project, "run", "--update-baseline").ret == 0
    reports = project.path / "reports"
    before = {p.name: p.read_bytes() for p in reports.iterdir()}
    # (The lock file --update-baseline takes stays, empty: see docs/running.md.)
    assert set(before) == {"baseline.json", "baseline.json.lock", "results.json", "report.html"}

    project.makepyfile(sigint_llm=SIGINT_LLM)
    add(project, "s2b", "input: hi\nllm: {provider: interrupting}\n")  # third in file order
    # A session of its own, as a terminal's foreground job: the signal reaches only it.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            "-p",
            "sigint_llm",
            "--update-baseline",
            *workers,
        ],
        cwd=project.path,
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,
    )
    assert done.returncode == 130, done.stdout + done.stderr  # docs/running.md#stopped-from-outside
    if not workers:
        assert "scenarios/s1.scenario.yaml ." in done.stdout  # some ran before it
    assert "interrupted: nothing was written" in done.stdout
    assert "baseline updated" not in done.stdout
    assert {p.name: p.read_bytes() for p in reports.iterdir()} == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--frobnicate"], "unrecognized arguments: --frobnicate; pytest options go after"),
        (["run", "-n", "many"], "expected a number of workers or 'auto'"),
        (["run", "--record-mode", "sometimes"], "invalid choice: 'sometimes'"),
        (["run", "missing/"], "no such file or folder: missing/"),
        (["run", "--baseline", "nope.json"], "--baseline nope.json: no such file"),
        (["run", "--fail-on-change"], "--fail-on-change needs a baseline"),
        (
            ["run", "-p", "no_such_plugin_module"],
            "harness run: -p no_such_plugin_module: cannot import plugin module "
            "'no_such_plugin_module'",
        ),
        (
            ["validate", "scenarios", "-p", "no_such_plugin_module"],
            "harness validate: -p no_such_plugin_module: cannot import",
        ),
        (["run", "--", "--no-such-pytest-flag"], "unrecognized arguments: --no-such-pytest-flag"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_bad_flags_exit_2_with_a_message(project, run, args, message):
    add(project, "greet", PASSING)
    status, out, err = run(*args)
    assert status == 2, out + err
    assert message in out + err
    assert "Traceback" not in out + err
    assert "--harness-" not in out + err  # options the user did not type


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not valid JSON: Expecting property name enclosed in double quotes"),
        (
            '{"schema_version": 3, "scenarios": []}',
            "has schema_version 3; this harness reads schema_version 1 to 2: upgrade harness to read it",
        ),
        (
            '{"schema_version": 1, "scenarios": [{"id": 3}]}',
            "is not a valid harness results file: scenarios.0.id: Input should be a valid string",
        ),
    ],
    ids=["not-json", "newer", "invalid"],
)
def test_a_baseline_that_cannot_be_used_is_bad_input_like_for_harness_report(
    project, run, capsys, content, message
):
    add(project, "greet", PASSING)
    (project.path / "base.json").write_text(content)
    status, out, err = run("run", "--baseline", "base.json")
    assert status == 2, out + err
    assert f"harness run: --baseline 'base.json' {message}" in err
    # harness report reads a baseline with the same loader and says the same.
    assert cli.main(["report", "base.json", "--baseline", "base.json"]) == 2
    assert f"'base.json' {message}" in capsys.readouterr().err
    # The default baseline is named as a file: the user typed no --baseline.
    (project.path / "reports").mkdir(exist_ok=True)
    (project.path / "reports/baseline.json").write_text(content)
    status, out, err = run("run")
    assert status == 2
    assert f"harness run: default baseline 'reports/baseline.json' {message}" in err
    assert "--harness-baseline" not in out + err
    # --update-baseline replaces it, after saying why it was not compared.
    status, out, err = run("run", "--update-baseline")
    assert status == 0, out + err
    assert "not compared, --update-baseline replaces it" in err
    assert len(Results.load(project.path / "reports/baseline.json").scenarios) == 1


def test_a_report_that_cannot_be_written_exits_3(project, run):
    add(project, "greet", PASSING)
    (project.path / "blocker").write_text("a file, not a folder")
    status, out, _ = run("run", "--json", "blocker/results.json")
    assert status == 3
    assert "report error: blocker/results.json not written" in out


def test_a_baseline_that_cannot_be_written_exits_3_without_a_traceback(project, run):
    add(project, "greet", PASSING)
    (project.path / "blocker").write_text("a file, not a folder")
    status, out, err = run("run", "--update-baseline", "--baseline", "blocker/baseline.json")
    assert status == 3
    assert "baseline not written: blocker/baseline.json" in err
    assert "Traceback" not in out + err


def test_paths_k_m_and_pytest_args_are_passed_on(project, run):
    add(project, "greet", PASSING)
    add(project, "other/wrong", FAILING)
    (project.path / "scenarios" / "test_python.py").write_text("def test_x():\n    assert 0\n")
    # A folder's Python tests are not scenarios: they do not run.
    status, out, _ = run("run", "-m", "smoke", "--", "-q")
    assert status == 0, out
    assert re.search(r"\b1 passed, 1 deselected\b", out), out
    status, out, _ = run("run", "scenarios/other", "-k", "wrong", "--", "--maxfail=1")
    assert status == 1 and "1 failed" in out
    status, out, _ = run("run", "scenarios/greet.scenario.yaml::greet")  # a node id
    assert status == 0 and "1 passed" in out
    status, out, _ = run("run", "--json", "out/r.json", "--html", "out/r.html")
    assert status == 1
    assert (project.path / "out/r.json").is_file() and (project.path / "out/r.html").is_file()


# -- harness run: plugins, record mode, xdist --------------------------------------------------


def test_record_runs_with_record_mode_once_and_p_loads_plugins(project, run):
    project.makepyfile(probe_llm=PROBE_LLM)
    add(project, "probe", PROBE_SCENARIO % "once")
    assert run("record", "-p", "probe_llm")[0] == 0
    status, out, _ = run("run", "-p", "probe_llm")
    assert status == 1  # run's default record mode is none
    assert 'actual:   "none"' in out
    add(project, "probe", PROBE_SCENARIO % "new_episodes")
    assert run("run", "-p", "probe_llm", "--record-mode", "new_episodes")[0] == 0


def test_p_plugins_reach_xdist_workers_and_results_match_a_serial_run(project):
    project.makepyfile(probe_llm=PROBE_LLM)
    for i in range(4):
        add(project, f"probe{i}", PROBE_SCENARIO % "none")
        add(project, f"greet{i}", PASSING.replace("greet", f"greet{i}"))
    add(project, "wrong", FAILING)
    serial = harness(project, "run", "-p", "probe_llm", "--json", "serial.json")
    parallel = harness(project, "run", "-p", "probe_llm", "-n", "2", "--json", "parallel.json")
    assert serial.ret == parallel.ret == 1, output(parallel)

    def stable(name):
        data = json.loads((project.path / name).read_text())
        data.pop("meta")
        for s in data["scenarios"]:
            s.pop("wall_time")
        return data

    assert stable("serial.json") == stable("parallel.json")
    assert stable("serial.json")["summary"]["by_status"] == {"failed": 1, "passed": 8}


# -- baseline ------------------------------------------------------------------------------------


def test_baseline_update_compare_and_fail_on_change(project, run):
    add(project, "greet", PASSING)
    add(project, "other", PASSING.replace("greet", "other"))
    status, out, _ = run("run", "--update-baseline")
    assert status == 0, out
    assert "baseline updated: reports/baseline.json" in out
    baseline = project.path / "reports/baseline.json"
    assert len(Results.load(baseline).scenarios) == 2
    # A baseline holds behaviour only: no wall-clock values to churn at every update
    # (results.json keeps them).
    stored = json.loads(baseline.read_text())
    assert stored["meta"] == {"versions": {"harness": __version__}}
    assert all("wall_time" not in s for s in stored["scenarios"])
    fresh = json.loads((project.path / "reports/results.json").read_text())
    assert "started" in fresh["meta"] and all("wall_time" in s for s in fresh["scenarios"])

    # reports/baseline.json is used when it exists; an unchanged suite diffs empty.
    status, out, _ = run("run", "--fail-on-change")
    assert status == 0, out
    assert "baseline reports/baseline.json: 0 regressions, 0 fixed, 0 changed" in out

    # A changed final answer is a change, not a regression: exit 1 only on request.
    add(project, "greet", PASSING.replace("It is 72F in SF.", "It is 72F in SF today."))
    assert run("run")[0] == 0
    status, out, err = run("run", "--fail-on-change")
    assert status == 1
    assert err.strip().splitlines()[-1] == (
        "harness: --fail-on-change: 0 regression(s), 1 changed against the baseline: "
        "changed scenarios/greet.scenario.yaml::greet"
    )
    # The summary names it too, with what changed.
    assert (
        "  changed: scenarios/greet.scenario.yaml::greet\n    answer: It is 72F in [-SF.-]{+SF today.+}\n"
        in out
    )
    diff = json.loads((project.path / "reports/results.json").read_text())["baseline"]
    assert [c["id"] for c in diff["changed"]] == ["scenarios/greet.scenario.yaml::greet"]
    assert diff["source"] == "reports/baseline.json"  # not where this checkout happens to be

    # A narrowed run compares what it ran; the rest is "not run", neither removed nor a
    # change, even for --fail-on-change.
    status, out, err = run("run", "-k", "other", "--fail-on-change")
    assert status == 0, out + err
    assert (
        "baseline reports/baseline.json: 0 regressions, 0 fixed, 0 changed, 0 added, "
        "0 removed, 1 not run" in out
    )

    # Updating from a narrowed run keeps the entries of the scenarios it did not run.
    assert run("run", "-k", "greet", "--update-baseline")[0] == 0
    entries = {s.id: s for s in Results.load(baseline).scenarios}
    assert sorted(entries) == [
        "scenarios/greet.scenario.yaml::greet",
        "scenarios/other.scenario.yaml::other",
    ]
    assert entries["scenarios/greet.scenario.yaml::greet"].final.content.endswith("today.")
    # ... and drops those whose file is gone.
    (project.path / "scenarios/other.scenario.yaml").unlink()
    assert run("run", "--update-baseline")[0] == 0
    assert [s.name for s in Results.load(baseline).scenarios] == ["greet"]


# -- validate, schema, plugins, version, delegates ------------------------------------------------


def test_validate_files_and_folders(project, run, capsys):
    add(project, "greet", PASSING)
    add(project, "sub/wrong", FAILING)
    assert cli.main(["validate", "scenarios"]) == 0
    assert capsys.readouterr().out.strip() == "2 scenario(s) OK"
    add(project, "bad", BAD)
    assert cli.main(["validate", "scenarios"]) == 2
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "scenarios/bad.scenario.yaml:2: agent.max_iteration: unknown key 'max_iteration' "
        "(did you mean 'max_iterations'?)"
    ]
    assert "1 of 3 scenario file(s) invalid" in captured.err
    assert cli.main(["validate", "scenarios/greet.scenario.yaml"]) == 0
    assert cli.main(["validate", "nowhere"]) == 2
    assert "no such file or folder: nowhere" in capsys.readouterr().err
    (project.path / "empty").mkdir()
    assert cli.main(["validate", "empty"]) == 5


def test_schema_prints_the_scenario_json_schema(capsys):
    assert cli.main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert {"name", "tags", "agent", "tools", "llm", "expect"} <= set(schema["properties"])
    assert schema["additionalProperties"] is False


def test_plugins_lists_hooks_and_registrations(project, capsys, monkeypatch):
    monkeypatch.chdir(project.path)
    project.makepyfile(probe_llm=PROBE_LLM)
    monkeypatch.syspath_prepend(str(project.path))
    from harness import _plugins as plugins

    plugins.discovery.reset()
    try:
        assert cli.main(["plugins", "-p", "probe_llm"]) == 0
        text = capsys.readouterr().out
        assert "harness.planners.react  (built-in)" in text
        assert "  planners: react" in text
        assert (
            "probe_llm  (-p / --harness-plugin)\n  hooks: harness_register_llms\n  llms: probe"
            in text
        )
        assert cli.main(["plugins", "--json", "-p", "probe_llm"]) == 0
        rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
        assert rows["probe_llm"]["registered"] == {"llms": ["probe"]}
        assert rows["harness.stagnation"]["hooks"] == ["harness_action_signature"]
    finally:
        plugins.discovery.reset()


def test_version_and_help(capsys):
    from harness import __version__

    assert cli.main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"harness {__version__}"
    assert cli.main([]) == 2
    assert "run" in capsys.readouterr().err
    assert cli.main(["run", "--help"]) == 0
    assert "--update-baseline" in capsys.readouterr().out


def test_delegated_commands_reach_their_functions(capsys):
    assert cli.main(["report", "--help"]) == 0
    assert "RESULTS" in capsys.readouterr().out


def test_the_console_script_is_installed(pytester):
    # Where this interpreter's installs put scripts (a venv's bin/, say), whatever PATH
    # holds: a broken install must fail here, not skip.
    import sysconfig

    folders = [sysconfig.get_path("scripts"), str(Path(sys.executable).parent)]
    script = next((p for f in folders if (p := Path(f) / "harness").is_file()), None)
    assert script is not None, (
        f"no harness console script in {' or '.join(folders)}: reinstall with pip install -e ."
    )
    result = pytester.run(str(script), "--version")
    assert result.ret == 0 and result.stdout.str().startswith("harness ")


def test_main_returns_the_status_instead_of_exiting(project, run):
    add(project, "greet", PASSING)
    status, _, _ = run("run", "--json", "r.json", "--html", "r.html")
    assert status == 0
    assert json.loads((project.path / "r.json").read_text())["summary"]["total"] == 1


PLUGIN_PROBE = """\
def pytest_configure(config):
    # Which autoloaded third-party plugin is active (Faker's is always installed with harness).
    print("faker-plugin-loaded:", config.pluginmanager.has_plugin("faker"))
"""


def test_run_loads_only_the_pytest_plugins_it_needs(project):
    add(project, "greet", PASSING)
    (project.path / "conftest.py").write_text(PLUGIN_PROBE)
    lean = harness(project, "run", "scenarios", "-n", "2")
    assert lean.ret == 0, output(lean)
    assert "faker-plugin-loaded: False" in output(lean)
    full = harness(project, "run", "scenarios", "--all-pytest-plugins")
    assert full.ret == 0, output(full)
    assert "faker-plugin-loaded: True" in output(full)


def test_a_single_regression_is_counted_in_the_singular(project, run):
    add(project, "greet", PASSING)
    assert run("run", "--update-baseline")[0] == 0
    add(project, "greet", PASSING.replace("contains: 72F", "contains: rain"))
    status, out, _ = run("run")
    assert status == 1
    assert (
        "baseline reports/baseline.json: 1 regression, 0 fixed, 1 changed, 0 added, 0 removed"
        in out
    )


def test_update_baseline_with_fail_on_change_writes_the_baseline_and_still_fails(project, run):
    # --fail-on-change judges the run against the baseline as it was; --update-baseline
    # writes the new one all the same (CI can keep it as an artifact, and fail).
    add(project, "greet", PASSING)
    assert run("run", "--update-baseline")[0] == 0
    add(project, "greet", PASSING.replace("It is 72F in SF.", "It is 72F in SF today."))
    status, out, err = run("run", "--update-baseline", "--fail-on-change")
    assert status == 1
    assert "baseline updated: reports/baseline.json" in out
    assert "--fail-on-change: 0 regression(s), 1 changed" in err
    # The written baseline is this run's: the same run again changes nothing.
    assert run("run", "--fail-on-change")[0] == 0


@pytest.mark.parametrize(
    ("command", "wanted"),
    [
        (["run"], "cassette record mode (default: none: replay only)"),
        (["record"], "cassette record mode (default: once: record what the cassette lacks)"),
        (["validate"], "Check scenario files without running them"),
        (["plugins"], "List the plugins harness loads here"),
        (["schema"], "Print the JSON Schema of scenario files"),
        (["validate"], "-p MODULE   load a harness plugin module first (repeatable)"),
        (["serve"], "Anthropic Messages (POST /v1/messages) and Gemini (POST"),
    ],
)
def test_help_texts_say_what_each_command_and_option_does(command, wanted, capsys):
    assert cli.main([*command, "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert " ".join(wanted.split()) in out
    assert "default: None" not in out


def test_run_from_outside_the_project_uses_the_projects_reports_and_baseline(
    project, run, tmp_path_factory, monkeypatch
):
    add(project, "greet", PASSING)
    assert run("run", "--update-baseline")[0] == 0
    outside = tmp_path_factory.mktemp("elsewhere")
    monkeypatch.chdir(outside)
    status, out, _ = run("run", str(project.path / "scenarios"))
    assert status == 0, out
    # The project's reports and baseline, and ids relative to its root: not the cwd's.
    assert not (outside / "reports").exists()
    assert "baseline" in out and "0 regressions, 0 fixed, 0 changed" in out
    written = json.loads((project.path / "reports/results.json").read_text())
    assert [s["id"] for s in written["scenarios"]] == ["scenarios/greet.scenario.yaml::greet"]


def test_paths_in_two_projects_say_which_root_is_used(project, run, tmp_path_factory):
    add(project, "greet", PASSING)
    other = tmp_path_factory.mktemp("other")
    (other / "pyproject.toml").write_text("[project]\nname = 'other'\n")
    (other / "scenarios").mkdir()
    (other / "scenarios" / "o.scenario.yaml").write_text(PASSING.replace("greet", "o"))
    status, _, err = run("run", "scenarios", str(other / "scenarios"))
    assert status == 0
    assert "harness: the paths lie in 2 projects (" in err
    assert f"use {project.path.resolve()}, the current directory's" in err


RECORDING = """\
input: hi
tools:
  get_weather:
    parameters: {city: str}
    returns: "72F in {{ args.city }}"
llm: {provider: openai, model: gpt-4o-mini%s}
"""


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_is_never_recorded(project, run, monkeypatch, status):
    from harness.serve import running_server

    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(name, raising=False)
    steps = [
        {"tool_calls": [{"get_weather": {"city": "SF"}}]},  # recorded, then thrown away
        {"error": {"status": status, "message": "Incorrect API key provided: sk-plac***"}},
    ]
    with running_server(steps) as url:
        add(project, "weather", RECORDING % f", base_url: '{url}'")
        code, out, err = run("record")
    assert code == 2
    line = f"the API refused the key (HTTP {status}: Incorrect API key provided: sk-plac***)"
    assert line in out + err
    assert "nothing was recorded" in out + err
    assert not (project.path / "cassettes").exists()


def test_recording_against_the_public_api_without_a_key_is_refused_before_any_request(
    project, run, monkeypatch
):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    add(project, "weather", RECORDING % "")
    code, out, err = run("record")
    assert code == 2
    assert "recording needs OPENAI_API_KEY: it is not set" in out + err
    assert not (project.path / "cassettes").exists()
