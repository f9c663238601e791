"""results.json is written as it is made (one scenario entry at a time) and a run keeps
its results on disk as they arrive: the file is the one the whole Results made in memory
wrote before (docs/running.md#large-suites)."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest
from report_samples import sample_baseline, sample_results
from scenario_texts import PASSING

from harness import cli
from harness.report import diff_results
from harness.results import Results, Skipped, load_results
from harness.spool import ResultSpool


def test_the_streamed_file_is_the_in_memory_text(tmp_path: Path) -> None:
    logging.getLogger("harness").setLevel(logging.ERROR)
    results = sample_results()  # the example scenarios, run by the real runner
    results.skipped = [Skipped(id="scenarios/x.scenario.yaml::x", reason="not today")]
    for baseline in (None, diff_results(sample_baseline(), results, source="baseline.json")):
        results.baseline = baseline
        results.write(tmp_path / "results.json")
        assert (tmp_path / "results.json").read_text() == results.to_json()
    Results().write(tmp_path / "empty.json")
    assert (tmp_path / "empty.json").read_text() == Results().to_json()


def test_a_secret_in_a_scenario_entry_is_masked_in_the_streamed_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = sample_results()
    secret = "sk-streamed-secret-0123456789abcdef"
    results.scenarios[0].final.content = f"the key is {secret}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    results.write(tmp_path / "results.json")
    text = (tmp_path / "results.json").read_text()
    assert secret not in text and "<OPENAI_API_KEY>" in text


def test_a_spool_keeps_the_last_text_of_each_id_in_first_seen_order() -> None:
    spool = ResultSpool()
    spool["b"] = '{"x": "é"}'
    spool["a"] = "{}"
    spool["b"] = '{"x": 2}'  # a rerun
    assert list(spool.items()) == [("b", '{"x": 2}'), ("a", "{}")]
    spool.close()
    assert len(spool) == 0


@pytest.mark.usefixtures("fresh_plugins")
def test_a_runs_results_json_is_its_results_assembled_in_memory(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    folder = pytester.path / "scenarios"
    folder.mkdir()
    for i in range(6):
        text = PASSING.replace("name: greet", f"name: greet{i}")
        if i == 4:
            text = text.replace("contains: 72F", "contains: rain")  # one fails
        (folder / f"greet{i}.scenario.yaml").write_text(text)
    shutil.copy(folder / "greet0.scenario.yaml", folder / "same.scenario.yaml")
    monkeypatch.chdir(pytester.path)
    status = cli.main(["run", "--json", "out.json", "--html", "out.html", "-n", "2"])
    assert status == 1
    written = (pytester.path / "out.json").read_text()
    assert written == load_results(pytester.path / "out.json").to_json()
    assert load_results(pytester.path / "out.json").summary.total == 7
