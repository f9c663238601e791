"""Each option of a harness session is declared once (harness.pytest_plugin._options):
`harness run` and plain pytest take it from there, check it with the same validator, and
give the session the same value."""

from __future__ import annotations

import re
import sys

import pytest
from scenario_texts import PASSING, SESSION_TESTS

from harness import cli
from harness.pytest_plugin import _options as options
from harness.pytest_plugin._options import OPTIONS, Option

pytestmark = SESSION_TESTS

# The options `harness run` has that no pytest session reads.
RUN_ONLY = {"--update-baseline", "--fail-on-change", "--chunk-size", "--all-pytest-plugins"}

# Writes the session's options where the test reads them (harness run and pytest alike).
DUMP_OPTIONS = """\
from harness.pytest_plugin._session import get_state


def pytest_sessionfinish(session):
    with open("options.txt", "a", encoding="utf-8") as out:
        out.write(repr(get_state(session.config).options) + "\\n")
"""


@pytest.fixture
def project(pytester):
    """A project with one passing scenario."""
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "greet.scenario.yaml").write_text(PASSING, encoding="utf-8")
    return pytester


@pytest.fixture
def run(project, monkeypatch, capsys):
    """``harness ARGS`` in this process: (exit status, stdout, stderr)."""
    monkeypatch.chdir(project.path)

    def call(*args: str) -> tuple[int, str, str]:
        status = cli.main(list(args))
        captured = capsys.readouterr()
        return status, captured.out, captured.err

    return call


def _usage_options(text: str) -> set[str]:
    usage = text.split("\n\n", 1)[0]
    return set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])(?![\w-])", usage))


def test_harness_run_and_pytest_have_every_option_of_the_table(run, project):
    status, out, _ = run("run", "--help")
    assert status == 0
    table = {option.run for option in OPTIONS if option.run is not None}
    assert _usage_options(out) == table | RUN_ONLY | {"-h"}
    assert not table & RUN_ONLY
    # Plain pytest (xdist and pytest-recording installed) knows each one's pytest flag.
    shown = project.runpytest("--help").stdout.str()
    for option in OPTIONS:
        assert re.search(rf"(^|[\s,]){re.escape(option.pytest)}[\s=]", shown, re.M), option
    assert len({option.pytest for option in OPTIONS}) == len(OPTIONS)


def test_an_option_added_to_the_table_is_an_option_of_both_front_ends(run, project, monkeypatch):
    # One declaration: harness run's flag, help and validator, the pytest option, and
    # what harness run passes pytest all come from it.
    probe = Option(
        "--harness-probe", "--probe", "a probe of this test", type=options._count, metavar="N"
    )
    monkeypatch.setattr(options, "OPTIONS", (*OPTIONS, probe))
    (project.path / "conftest.py").write_text(
        "def pytest_configure(config):\n    print('probe:', config.getoption('harness_probe'))\n"
    )
    status, out, _ = run("run", "--help")
    assert "--probe N" in out and "a probe of this test" in out
    status, out, err = run("run", "--probe", "3")
    assert status == 0, out + err
    assert "probe: 3" in out
    status, out, err = run("run", "--probe", "0")
    assert status == 2
    assert "argument --probe: expected a whole number of at least 1, got '0'" in err
    result = project.runpytest("--harness-probe", "0")
    assert result.ret == 4
    result.stderr.fnmatch_lines(
        ["*argument --harness-probe: expected a whole number of at least 1, got '0'*"]
    )


@pytest.mark.parametrize(
    ("given", "plain"),
    [
        (
            [
                "--disable-recording", "--repeat", "2", "--live", "--concurrency", "2",
                "--shard", "1/1", "--durations", "earlier.json", "--json", "out.json",
                "--html", "out.html",
            ],
            [
                "--disable-recording", "--harness-repeat", "2", "--harness-live",
                "--harness-concurrency", "2", "--harness-shard", "1/1",
                "--harness-durations", "earlier.json", "--harness-json", "out.json",
                "--harness-html", "out.html",
            ],
        ),
        (
            ["--record-mode", "new_episodes", "--json", "out.json", "--html", "out.html"],
            ["--record-mode", "new_episodes", "--harness-json", "out.json",
             "--harness-html", "out.html"],
        ),
    ],
    ids=["scale", "recording"],
)  # fmt: skip
def test_harness_run_gives_the_session_the_options_plain_pytest_would(run, project, given, plain):
    assert run("run", "--json", "earlier.json")[0] == 0  # the durations file
    (project.path / "conftest.py").write_text(DUMP_OPTIONS)
    status, out, err = run("run", *given)
    assert status == 0, out + err
    result = project.runpytest("--harness-scenarios-only", "scenarios", *plain)
    assert result.ret == 0, result.stdout.str()
    through_run, through_pytest = (project.path / "options.txt").read_text().splitlines()
    assert through_run == through_pytest


@pytest.mark.parametrize(
    ("given", "plain", "message"),
    [
        (["--repeat", "0"], ["--harness-repeat", "0"], "expected a whole number of at least 1"),
        (["--concurrency", "x"], ["--harness-concurrency", "x"], "expected a whole number"),
        (["--shard", "3/2"], ["--harness-shard", "3/2"], "'3/2': K must be between 1 and N"),
        (
            ["--shard", "1/2", "--durations", "nowhere.json"],
            ["--harness-durations", "nowhere.json"],
            "'nowhere.json' does not exist",
        ),
    ],
)
def test_a_bad_value_gets_the_same_message_from_both_front_ends(
    run, project, given, plain, message
):
    status, out, err = run("run", *given)
    assert status == 2
    assert message in err
    # Named as the user typed it.
    assert f"{given[-2]}" in err and "--harness-" not in out + err
    result = project.runpytest(*plain)
    assert result.ret == 4
    assert message in result.stderr.str()
    assert plain[-2] in result.stderr.str()


def test_harness_run_reads_the_table_before_pytest_starts_without_a_warning(project):
    # `harness run` imports the plugin's package for its table; pytest, loading the
    # plugin with -p afterwards, warned that it could not assertion-rewrite it.
    result = project.run(sys.executable, "-m", "harness.cli", "run", timeout=300)
    assert result.ret == 0, result.stdout.str()
    output = result.stdout.str() + result.stderr.str()
    assert "1 passed" in output
    assert "warnings summary" not in output and "Warning" not in output
