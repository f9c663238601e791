"""results.json read one entry at a time (harness._results.load_results): the same results,
the same baseline diff and the same one-line errors as reading the file into memory."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from report_samples import sample_baseline, sample_results

from harness._results import ResultsFileError, load_results
from harness._spool import ScenarioList
from harness.report import diff_results

ROOT = Path(__file__).resolve().parents[1]


def test_a_file_read_entry_by_entry_is_the_file_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    sample_baseline().write(path)
    streamed = load_results(path, what="baseline")
    assert isinstance(streamed.scenarios, ScenarioList)
    assert streamed.to_json() == load_results(path, in_memory=True).to_json() == path.read_text()


def test_a_named_pipe_is_read_as_the_file_would_be(tmp_path: Path) -> None:
    # Read one entry at a time the file is read twice (its head, then its entries): a
    # pipe, which cannot be, is copied to a temporary file as it comes.
    path = tmp_path / "results.json"
    sample_baseline().write(path)
    pipe = tmp_path / "pipe.json"
    os.mkfifo(pipe)
    writer = threading.Thread(target=lambda: pipe.write_bytes(path.read_bytes()), daemon=True)
    writer.start()
    assert load_results(pipe).to_json() == path.read_text()
    writer.join(timeout=60)


def test_a_version_1_file_reads_as_version_2_either_way() -> None:
    path = ROOT / "tests" / "fixtures" / "results-v1.json"
    assert load_results(path).to_json() == load_results(path, in_memory=True).to_json()


def test_a_hand_edited_baseline_out_of_order_diffs_as_when_read_whole(tmp_path: Path) -> None:
    # Entries reordered (a merge conflict resolved by hand, say): the diff goes through
    # both sides in id order, so the streamed baseline is put back in order as it is read.
    data = json.loads(sample_baseline().to_json())
    data["scenarios"].reverse()
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(data, indent=2))
    new = sample_results()
    streamed = diff_results(load_results(path), new, source="b")
    whole = diff_results(load_results(path, in_memory=True), new, source="b")
    assert streamed == whole
    assert streamed.regressions and streamed.changed and streamed.added and streamed.removed


@pytest.mark.parametrize(
    "text",
    [
        '{"schema_version": 2, "scenarios": [{"id": "x"}]}',
        '{"schema_version": 9, "scenarios": []}',
        '{"schema_version": 2, "meta": {}, "scenarios": [',
        '{"schema_version": 2}',
        "[1, 2]",
        '{"schema_version": 2, "summary": {"total": "many"}, "scenarios": []}',
    ],
)
def test_a_bad_file_gets_the_one_line_error_of_reading_it_whole(tmp_path: Path, text: str) -> None:
    path = tmp_path / "baseline.json"
    path.write_text(text)
    with pytest.raises(ResultsFileError) as whole:
        load_results(path, what="baseline", in_memory=True)
    with pytest.raises(ResultsFileError) as streamed:
        load_results(path, what="baseline")
    assert str(streamed.value) == str(whole.value)
    assert "\n" not in str(streamed.value)
