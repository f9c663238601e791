"""Results kept on disk and read one entry at a time, at their edges: a result replaced by
a rerun, one id given twice, a file whose version or keys the streamed reader must not
take as the whole reader would not.

Each test failed against a hand-made mutant that the other results tests let pass
(scripts/mutation.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_samples import sample_results

from harness._modeljson import dump_json
from harness._results import ResultsFileError, build_results, load_results
from harness._spool import ResultSpool, ScenarioList


def _passed():
    scenario = next(s for s in sample_results().scenarios if s.status == "passed")
    return scenario, scenario.model_copy(update={"status": "failed"})


def test_a_result_replaced_by_its_rerun_s_text_is_counted_as_the_rerun():
    passed, failed = _passed()
    spool = ResultSpool()
    spool.add(passed)
    spool[passed.id] = dump_json(failed)  # the rerun's entry, as text
    summary = build_results(spool).summary
    assert summary.by_status == {"failed": 1}


def test_a_list_of_scenarios_sharing_an_id_keeps_each_of_them():
    passed, failed = _passed()
    scenarios = ScenarioList.of([passed, failed])
    assert len(scenarios) == 2
    assert [s.status for s in scenarios] == ["passed", "failed"]


@pytest.mark.parametrize(
    "version",
    ["", '"schema_version": "2", ', '"schema_version": true, ', '"schema_version": 0, '],
    ids=["missing", "a-string", "a-bool", "zero"],
)
def test_a_file_without_a_version_this_harness_reads_is_refused_either_way(
    tmp_path: Path, version: str
) -> None:
    path = tmp_path / "shard.json"
    path.write_text("{" + version + '"scenarios": []}')
    with pytest.raises(ResultsFileError) as whole:
        load_results(path, what="shard", in_memory=True)
    with pytest.raises(ResultsFileError) as streamed:
        load_results(path, what="shard")
    assert str(streamed.value) == str(whole.value)


def test_a_file_with_its_scenarios_twice_is_refused_not_read_two_ways(tmp_path: Path) -> None:
    # Read whole, JSON would keep the last `scenarios`; read entry by entry, both arrays
    # would be: the one reader refuses the file, kept on disk or in memory alike.
    entry = json.loads(sample_results().to_json())["scenarios"][0]
    path = tmp_path / "shard.json"
    path.write_text(
        '{"schema_version": 2, "scenarios": [' + json.dumps(entry) + '], "scenarios": []}'
    )
    for in_memory in (True, False):
        with pytest.raises(ResultsFileError, match="'scenarios' twice"):
            load_results(path, what="shard", in_memory=in_memory)


def _entries_written(path: Path) -> list[str]:
    from harness._results import entry_text, read_streamed

    texts: list[str] = []
    read_streamed(path, lambda entry: texts.append(entry_text(entry, indent=2)))
    return texts


def test_entries_of_another_harness_version_are_written_as_this_one_writes_them(tmp_path):
    # A shard written by another harness version, a float written as an integer there:
    # merged, the entry is this version's form (copied as written only from this one).
    from harness._results import harness_version

    data = json.loads(sample_results().to_json())
    data["scenarios"] = data["scenarios"][:1]
    data["scenarios"][0]["sim_time"] = 3
    data["meta"] = {**data.get("meta", {}), "versions": {"harness": "0.0.0-elsewhere"}}
    path = tmp_path / "shard.json"
    path.write_text(json.dumps(data, indent=2))
    (text,) = _entries_written(path)
    assert '"sim_time": 3.0' in text
    if harness_version() is not None:  # this version's own file: copied as it was
        data["meta"]["versions"]["harness"] = harness_version()
        path.write_text(json.dumps(data, indent=2))
        (text,) = _entries_written(path)
        assert '"sim_time": 3,' in text or '"sim_time": 3\n' in text
