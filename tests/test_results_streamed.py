"""results.json is written as it is made (one scenario entry at a time) and a run keeps
its results on disk as they arrive: the file is the one the whole Results made in memory
wrote before (docs/running.md#large-suites)."""

from __future__ import annotations

import logging
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from report_samples import sample_baseline, sample_results, sample_scenarios
from scenario_texts import PASSING

from harness import cli
from harness._repeats import Repeats
from harness._results import (
    Results,
    ScenarioResult,
    Skipped,
    build_results,
    load_results,
)
from harness._spool import ResultSpool, ScenarioList
from harness.pytest_plugin import ScenarioItem
from harness.report import diff_results, render_html
from harness.report._markdown import render_markdown


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


def _repeated(results: list[ScenarioResult]) -> list[ScenarioResult]:
    """Three runs of the first result, as a repeated scenario's items make them (the
    second failed: the scenario is flaky)."""
    runs = []
    for run in (1, 2, 10):
        entry = results[0].model_copy(deep=True)
        entry.id, entry.run = f"{entry.id}[{run}]", run
        entry.status = "failed" if run == 2 else "passed"
        entry.repeats = Repeats.of(int(entry.status == "passed"), 1)
        runs.append(entry)
    return runs


def test_results_read_from_the_spool_are_the_results_built_in_memory() -> None:
    # A session's results stay on disk to the end: results.json, its baseline file and
    # the HTML report made from them are the texts the whole list in memory gave.
    logging.getLogger("harness").setLevel(logging.ERROR)
    scenarios = sample_scenarios()
    scenarios += _repeated(scenarios)
    spool = ResultSpool()
    for entry in reversed(scenarios):  # in the order they finished, not by id
        spool[entry.id] = entry.model_dump_json()
        if entry.run is not None:
            spool.runs[entry.id] = entry.run
    started = datetime(2026, 1, 2, tzinfo=UTC)
    spooled = build_results(spool, started=started)
    whole = build_results([s.model_copy(deep=True) for s in scenarios], started=started)
    assert isinstance(spooled.scenarios, ScenarioList)
    assert [s.id for s in spooled.scenarios][-3:] == [f"{scenarios[0].id}[{k}]" for k in (1, 2, 10)]
    assert spooled.summary.flaky == [scenarios[0].id]
    assert spooled.to_json() == whole.to_json()
    assert spooled.to_baseline_json() == whole.to_baseline_json()
    assert render_html(spooled) == render_html(whole)
    assert render_markdown(spooled) == render_markdown(whole)


@pytest.mark.usefixtures("fresh_plugins")
def test_a_scenario_item_lets_go_of_its_run_and_its_parsed_scenario(
    pytester: pytest.Pytester,
) -> None:
    # An item lives to the session's end: what it keeps is what a suite's memory grows by.
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    for i in range(3):
        text = PASSING.replace("name: greet", f"name: greet{i}")
        (pytester.path / f"greet{i}.scenario.yaml").write_text(text)
    recorder = pytester.inline_run("-p", "no:cacheprovider")
    recorder.assertoutcome(passed=3)
    (call,) = recorder.getcalls("pytest_collection_finish")
    items = [item for item in call.session.items if isinstance(item, ScenarioItem)]
    assert len(items) == 3
    for item in items:
        assert item.result is None and item._scenario is None
        # Its packed copy is on disk: the item keeps where it is, not its bytes.
        assert not [k for k, v in vars(item).items() if isinstance(v, bytes | bytearray)]
        assert item.scenario.name == item.name  # read back from its packed copy
