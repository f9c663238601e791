"""`harness report RESULTS.json [--baseline B.json] -o OUT.html`: exit statuses and messages."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from report_samples import sample_baseline, sample_results

import harness.report
from harness._results import Results, ResultsFileError, load_results
from harness.cli import main
from harness.report import render_html
from harness.report._diff import diff_results


def report_main(argv: list[str]) -> int:
    """``harness report ARGV...``, in this process."""
    return main(["report", *argv])


@pytest.fixture(autouse=True)
def _quiet_loop_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="harness")


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Results]:
    folder = tmp_path_factory.mktemp("results")
    results = sample_results()
    results.write(folder / "results.json")
    sample_baseline().write(folder / "baseline.json")
    return folder / "results.json", folder / "baseline.json", results


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert lines[0].startswith("harness report: error: ")
    return lines[0]


def test_writes_the_report(
    saved: tuple[Path, Path, Results], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results_path, _, results = saved
    out = tmp_path / "out" / "report.html"
    assert report_main([str(results_path), "-o", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == render_html(Results.load(results_path))
    assert f"wrote {out} ({len(results.scenarios)} scenarios)" in capsys.readouterr().out


def test_with_a_baseline(
    saved: tuple[Path, Path, Results], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results_path, baseline_path, _ = saved
    out = tmp_path / "report.html"
    assert report_main([str(results_path), "--baseline", str(baseline_path), "-o", str(out)]) == 0
    expected = diff_results(
        Results.load(baseline_path), Results.load(results_path), source=str(baseline_path)
    )
    assert out.read_text(encoding="utf-8") == render_html(Results.load(results_path), expected)
    assert (
        "vs baseline: regressions 1, fixed 1, changed 4, added 1, removed 1)"
        in capsys.readouterr().out
    )


def test_default_output_is_report_html_beside_the_results(tmp_path: Path) -> None:
    sample_results().write(tmp_path / "results.json")
    assert report_main([str(tmp_path / "results.json")]) == 0
    assert (tmp_path / "report.html").is_file()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "does not exist"),
        (
            "{not json",
            "is not valid JSON: Expecting property name enclosed in double quotes (line 1, column 2)",
        ),
        ("[1, 2]", "is not a harness results file (no 'scenarios')"),
        (
            '{"schema_version": 1, "scenarios": [{"id": "x"}]}',
            "is not a valid harness results file: scenarios.0.name: Field required",
        ),
    ],
)
def test_bad_results_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    path = tmp_path / "results.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert report_main([str(path), "-o", str(tmp_path / "r.html")]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert message in line
    assert str(path) in line
    assert not (tmp_path / "r.html").exists()


SUPPORTED = "this harness reads schema_version 1 to 2"


@pytest.mark.parametrize(
    ("version", "found"),
    [
        (None, "has no schema_version"),
        (0, "has schema_version 0;"),
        (-1, "has schema_version -1;"),
        ('"1"', 'has schema_version "1" (a string, not an integer);'),
        ("true", "has schema_version true (a boolean, not an integer);"),
        ("1.0", "has schema_version 1.0 (a decimal number, not an integer);"),
        ("null", "has schema_version null (null, not an integer);"),
        (99, "has schema_version 99;"),
    ],
)
def test_unsupported_schema_versions_exit_2_naming_found_and_supported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: object, found: str
) -> None:
    data = sample_results([]).to_json()
    if version is None:
        data = data.replace('"schema_version": 2,', "", 1)
        assert "schema_version" not in data
    else:
        data = data.replace('"schema_version": 2,', f'"schema_version": {version},', 1)
    path = tmp_path / "results.json"
    path.write_text(data, encoding="utf-8")
    assert report_main([str(path), "-o", str(tmp_path / "r.html")]) == 2
    line = one_line_error(capsys.readouterr().err)
    assert f"results file '{path}' {found}" in line
    assert SUPPORTED in line
    if version == 99:
        assert "upgrade harness" in line
    assert not (tmp_path / "r.html").exists()


def test_the_loader_is_one_function_with_one_error_type(tmp_path: Path) -> None:
    # `harness report`, harness.report and the pytest plugin's --harness-baseline all read
    # results through harness._results.load_results, which raises only ResultsFileError.
    assert harness.report.load_results is load_results
    path = tmp_path / "baseline.json"
    problems = ["{", "[]", '{"schema_version": 3, "scenarios": []}', '{"scenarios": [1]}']
    for text in problems:
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ResultsFileError) as caught:
            load_results(path, what="baseline")
        message = str(caught.value)
        assert message.startswith(f"baseline '{path}' ") and "\n" not in message
    with pytest.raises(ResultsFileError, match="does not exist"):
        load_results(tmp_path / "missing.json")
    sample_results([]).write(path)
    assert load_results(path) == sample_results([])


def test_bad_baseline_exits_2(
    saved: tuple[Path, Path, Results], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results_path, _, _ = saved
    missing = tmp_path / "nope.json"
    assert (
        report_main([str(results_path), "--baseline", str(missing), "-o", str(tmp_path / "r.html")])
        == 2
    )
    assert f"baseline '{missing}' does not exist" in one_line_error(capsys.readouterr().err)


def test_results_path_is_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert report_main([str(tmp_path)]) == 2
    assert "is a directory" in one_line_error(capsys.readouterr().err)


@pytest.mark.parametrize("argv", [[], ["a.json", "--colour"], ["a.json", "-o"]])
def test_bad_arguments_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert report_main(argv) == 2
    one_line_error(capsys.readouterr().err)


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert report_main(["--help"]) == 0
    assert "--baseline" in capsys.readouterr().out


def test_unwritable_output_exits_3(
    saved: tuple[Path, Path, Results], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results_path, _, _ = saved
    # The output path is an existing directory: the report cannot be written there.
    (tmp_path / "taken").mkdir()
    assert report_main([str(results_path), "-o", str(tmp_path / "taken")]) == 3
    assert "cannot write" in one_line_error(capsys.readouterr().err)


def test_a_render_crash_is_one_line_and_exit_3(
    saved: tuple[Path, Path, Results],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    results_path, _, _ = saved

    def broken(*args: object, **kwargs: object) -> None:
        raise KeyError("bug")

    monkeypatch.setattr("harness.cli._report.write_html", broken)
    assert report_main([str(results_path), "-o", str(tmp_path / "r.html")]) == 3
    assert "could not be rendered" in one_line_error(capsys.readouterr().err)


def test_edited_events_do_not_crash_the_report(tmp_path: Path) -> None:
    results = sample_results()
    odd = results.scenarios[0].model_copy(
        update={"events": [{"event": "llm_request", "call": None, "iteration": "x"}, {}]}
    )
    results.scenarios[0] = odd
    results.write(tmp_path / "results.json")
    assert report_main([str(tmp_path / "results.json")]) == 0
