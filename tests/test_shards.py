"""Shards: `harness run --shard K/N [--durations F]` and `harness merge` (docs/running.md#shards).

The acceptance test splits a suite into 3 shards, runs each, merges them, and compares
the merged results.json, report and baseline diff with those of a serial run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from scenario_texts import PASSING, SESSION_TESTS

from harness import cli
from harness._results import (
    Results,
    ResultsFileError,
    ScenarioResult,
    build_results,
    load_results,
)
from harness._shards import MergeError, Shard, merge, merge_files, plan, plan_digest

pytestmark = SESSION_TESTS

FAILING = PASSING.replace("contains: 72F", "contains: rain")
ERRORING = PASSING.replace("args.city", "args.city.x.y")
# Several rounds: a scenario that takes longer than the others.
LONG = PASSING.replace(
    "    - content: It is 72F in SF.",
    "    - tool_calls: [{get_weather: {city: SF}}]\n      repeat: 6\n"
    "    - content: It is 72F in SF.",
)


# -- the plan -----------------------------------------------------------------------------


def test_without_durations_shards_are_dealt_by_count_in_id_order():
    ids = [f"s{i:02}" for i in range(10)]
    shards = plan(list(reversed(ids)), 3)
    assert shards == [ids[0::3], ids[1::3], ids[2::3]]
    assert sorted(i for shard in shards for i in shard) == ids


def test_with_durations_the_longest_go_first_each_to_the_least_loaded_shard():
    durations = {"a": 9.0, "b": 5.0, "c": 4.0, "d": 3.0, "e": 2.0, "f": 1.0}
    shards = plan(list(durations), 2, durations)
    # a -> 1; b -> 2; c -> 2 (5 < 9); d -> 1 (9 = 9: the lower shard); e -> 2 (9 < 12);
    # f -> 2 (11 < 12)
    assert shards == [["a", "d"], ["b", "c", "e", "f"]]
    loads = [sum(durations[i] for i in shard) for shard in shards]
    assert loads == [12.0, 12.0]


def test_an_id_without_a_duration_weighs_the_mean_of_the_known_ones():
    # Chosen so that any other weight gives another plan: none, 1, the smallest, the
    # largest or the median of the known ones, or the mean of every duration given
    # ("gone" is not in the suite any more).
    durations = {"a": 1.0, "b": 1.0, "c": 2.0, "gone": 20.0}
    # new weighs 4/3: c -> 1, new -> 2, a -> 2 (4/3 < 2), b -> 1 (2 < 7/3)
    assert plan(["b", "new", "a", "c"], 2, durations) == [["b", "c"], ["a", "new"]]


def test_the_plan_and_its_fingerprint_do_not_depend_on_the_order_ids_come_in():
    ids = [f"scenarios/s{i}.scenario.yaml::s{i}" for i in range(50)]
    durations = {i: (hash(i) % 7) / 10 for i in ids[::2]}
    assert plan(ids, 4, durations) == plan(list(reversed(ids)), 4, durations)
    assert plan_digest(ids, 4, durations) == plan_digest(list(reversed(ids)), 4, durations)
    assert plan_digest(ids, 4, durations) != plan_digest(ids, 4, None)
    assert plan_digest(ids, 4, None) != plan_digest(ids[1:], 4, None)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1/0", "between 1 and N"),
        ("0/3", "between 1 and N"),
        ("4/3", "between 1 and N"),
        ("2", "expected K/N"),
        ("a/b", "expected K/N"),
    ],
)
def test_a_bad_shard_is_refused(text, message):
    with pytest.raises(ValueError, match=message):
        Shard.parse(text)


# -- merging: what is refused -------------------------------------------------------------


def _shard_results(
    index: int, total: int, ids: list[str], *, plan_id: str = "p1", version: str = "1.0"
) -> Results:
    scenarios = [
        ScenarioResult(
            id=i,
            name=i.partition("::")[2],
            file=i.partition("::")[0],
            status="passed",
            termination="completed",
        )
        for i in ids
    ]
    results = build_results(scenarios)
    results.meta = {
        "versions": {"harness": version},
        "started": f"2025-01-0{index}T00:00:00+00:00",
        "shard": {
            "index": index,
            "total": total,
            "plan": plan_id,
            "by": "count",
            "selected": 3,
            "not_run": [],
        },
    }
    return results


def test_merge_joins_shards_sorted_with_the_earliest_start():
    merged = merge(
        [
            ("b.json", _shard_results(2, 2, ["f::b"])),
            ("a.json", _shard_results(1, 2, ["f::a", "f::c"])),
        ]
    )
    assert [s.id for s in merged.scenarios] == ["f::a", "f::b", "f::c"]
    assert merged.meta["started"] == "2025-01-01T00:00:00+00:00"
    assert merged.meta["merged"] == {"shards": 2}
    assert merged.summary.total == 3


@pytest.mark.parametrize(
    ("files", "message"),
    [
        (
            [
                ("a.json", _shard_results(1, 2, ["f::a"])),
                ("b.json", _shard_results(2, 2, ["f::a"])),
            ],
            "scenario f::a is in both a.json and b.json",
        ),
        (
            [
                ("a.json", _shard_results(1, 3, ["f::a"])),
                ("c.json", _shard_results(3, 3, ["f::c"])),
            ],
            "missing shard(s) 2/3: merge needs all 3",
        ),
        (
            [
                ("a.json", _shard_results(1, 2, ["f::a"])),
                ("b.json", _shard_results(1, 2, ["f::b"])),
            ],
            "shard 1/2 given twice: a.json and b.json",
        ),
        (
            [
                ("a.json", _shard_results(1, 2, ["f::a"])),
                ("b.json", _shard_results(2, 2, ["f::b"], version="2.0")),
            ],
            "shards written by different harness versions (a.json: harness 1.0, b.json: harness 2.0)",
        ),
        (
            [
                ("a.json", _shard_results(1, 2, ["f::a"])),
                ("b.json", _shard_results(2, 2, ["f::b"], plan_id="p2")),
            ],
            "are shards of different plans",
        ),
        (
            [
                ("a.json", _shard_results(1, 2, ["f::a"])),
                ("b.json", _shard_results(2, 3, ["f::b"])),
            ],
            "are shards of different plans",
        ),
        ([("a.json", build_results([]))], "a.json is not a shard's results (no meta.shard)"),
    ],
)
def test_merge_refuses_what_does_not_belong_together_in_one_line(files, message):
    with pytest.raises(MergeError) as refused:
        merge(files)
    assert message in str(refused.value)
    assert "\n" not in str(refused.value)


# -- the command ----------------------------------------------------------------------------


@pytest.fixture
def project(pytester):
    """An empty project: a pyproject.toml and a scenarios/ folder."""
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (pytester.path / "scenarios").mkdir()
    return pytester


def add(project, name: str, text: str) -> None:
    text = text.replace("name: greet", f"name: {name}")
    (project.path / "scenarios" / f"{name}.scenario.yaml").write_text(text, encoding="utf-8")


@pytest.fixture
def run(project, monkeypatch, capfd):
    """``harness ARGS`` in this process: (exit status, stdout, stderr). Captured where it
    is written, fd 1 and 2: a run in parts prints from processes of its own."""
    monkeypatch.chdir(project.path)

    def call(*args: str) -> tuple[int, str, str]:
        status = cli.main(list(args))
        captured = capfd.readouterr()
        return status, captured.out, captured.err

    return call


def _outside_meta_and_wall_times(path) -> dict:
    data = json.loads(path.read_text())
    data.pop("meta")
    for entry in data["scenarios"]:
        entry.pop("wall_time")
    return data


def _report(path) -> str:
    # The header's start time is wall clock: the one line allowed to differ.
    return re.sub(r"started [0-9T:+-]+", "started ...", path.read_text())


def _suite(project) -> None:
    for i in range(8):
        add(project, f"greet{i}", PASSING)
    add(project, "long", LONG)
    add(project, "wrong", FAILING)
    add(project, "broken", ERRORING)
    add(project, "twice", PASSING.replace("name: greet", "name: greet\nrepeat: 3"))
    add(project, "gone", PASSING)


def test_three_shards_merged_equal_the_serial_run(project, run):
    _suite(project)
    # A baseline from an earlier state of the suite: then one scenario regresses, one is
    # removed, one is added, one changes its answer.
    assert run("run", "--json", "base.json", "--html", "base.html")[0] == 1
    (project.path / "scenarios/gone.scenario.yaml").unlink()
    add(project, "greet3", FAILING)
    add(project, "added", PASSING)
    add(project, "greet5", PASSING.replace("It is 72F in SF.", "72F in SF, sunny."))

    status, out, _ = run(
        "run", "--baseline", "base.json", "--json", "serial.json", "--html", "serial.html"
    )
    assert status == 1, out
    for k in (1, 2, 3):
        status, out, _ = run(
            "run",
            "--shard",
            f"{k}/3",
            "--durations",
            "base.json",
            "--baseline",
            "base.json",
            "--json",
            f"shard{k}.json",
            "--html",
            f"shard{k}.html",
        )
        assert status in (0, 1), out
    shards = [load_results(project.path / f"shard{k}.json") for k in (1, 2, 3)]
    assert all(s.meta["shard"]["by"] == "durations" for s in shards)
    assert len({s.meta["shard"]["plan"] for s in shards}) == 1
    assert sum(len(s.scenarios) for s in shards) == 15
    assert all(s.scenarios for s in shards)

    status, out, err = run(
        "merge",
        "shard3.json",
        "shard1.json",
        "shard2.json",
        "--baseline",
        "base.json",
        "--json",
        "merged.json",
        "--html",
        "merged.html",
    )
    assert status == 1, err  # a scenario failed, as in the serial run
    assert "merged 3 shard(s)" in out
    assert "baseline base.json: 1 regression, 0 fixed, 2 changed, 1 added, 1 removed" in out
    serial = _outside_meta_and_wall_times(project.path / "serial.json")
    merged = _outside_meta_and_wall_times(project.path / "merged.json")
    assert merged == serial
    assert merged["baseline"]["regressions"][0]["id"] == "scenarios/greet3.scenario.yaml::greet3"
    assert _report(project.path / "merged.html") == _report(project.path / "serial.html")


def test_merge_writes_each_entry_as_the_shards_model_would_be_written(project, run):
    # harness merge writes an entry of a shard this harness version wrote from the data
    # it read (fast), any other shard's from its model: the text is the same either way.
    _suite(project)
    for k in (1, 2):
        assert run("run", "--shard", f"{k}/2", "--json", f"shard{k}.json")[0] in (0, 1)
    names = [str(project.path / f"shard{k}.json") for k in (1, 2)]

    def by_model() -> str:
        return merge([(name, load_results(name)) for name in names]).to_json()

    assert merge_files(names).to_json() == by_model()
    # Entries whose keys are not as harness writes them (in another order, or a "run":
    # null), from this harness version, then from another: written as the model writes them.
    for version in (None, "0.0.1"):
        for name in names:
            data = json.loads(Path(name).read_text())
            if version is not None:
                data["meta"]["versions"]["harness"] = version
            data["scenarios"] = [
                {"run": None, **dict(reversed(entry.items()))} for entry in data["scenarios"]
            ]
            Path(name).write_text(json.dumps(data, indent=2))
        merged = merge_files(names).to_json()
        assert merged == by_model()
        first = json.loads(merged)["scenarios"][0]
        assert list(first)[:3] == ["id", "name", "file"] and "run" not in first


def test_merge_updates_the_baseline_like_a_serial_run(project, run):
    _suite(project)
    assert run("run", "--update-baseline", "--json", "serial.json")[0] == 1
    serial_baseline = (project.path / "reports/baseline.json").read_text()
    (project.path / "reports/baseline.json").unlink()
    for k in (1, 2):
        assert run("run", "--shard", f"{k}/2", "--json", f"shard{k}.json")[0] in (0, 1)
    status, out, _ = run("merge", "shard1.json", "shard2.json", "--update-baseline")
    assert status == 1
    assert (project.path / "reports/baseline.json").read_text() == serial_baseline
    assert "results: reports/results.json, reports/report.html, reports/baseline.json" in out


def test_a_shard_under_xdist_records_its_shard_like_a_serial_one(project, run):
    _suite(project)
    assert run("run", "--shard", "2/3", "--json", "serial.json")[0] in (0, 1)
    assert run("run", "--shard", "2/3", "-n", "2", "--json", "xdist.json")[0] in (0, 1)
    serial = load_results(project.path / "serial.json")
    xdist = load_results(project.path / "xdist.json")
    assert [s.id for s in xdist.scenarios] == [s.id for s in serial.scenarios]
    assert xdist.meta["shard"] == serial.meta["shard"]


def test_shards_list_what_a_narrowed_run_left_out_as_not_run(project, run):
    _suite(project)
    assert run("run", "--json", "base.json")[0] == 1
    for k in (1, 2):
        run("run", "-k", "not greet1", "--shard", f"{k}/2", "--json", f"shard{k}.json")
    status, _, _ = run("merge", "shard1.json", "shard2.json", "--baseline", "base.json")
    assert status == 1
    merged = load_results(project.path / "reports/results.json")
    assert [r.id for r in merged.baseline.not_run] == ["scenarios/greet1.scenario.yaml::greet1"]
    assert merged.baseline.removed == []


def test_merge_refusals_exit_2_in_one_line(project, run):
    add(project, "greet", PASSING)
    assert run("run", "--shard", "1/2", "--json", "one.json")[0] == 0
    status, _, err = run("merge", "one.json")
    assert status == 2
    assert err == "harness merge: error: missing shard(s) 2/2: merge needs all 2\n"
    status, _, err = run("merge", "one.json", "nowhere.json")
    assert status == 2
    assert err == "harness merge: error: shard 'nowhere.json' does not exist\n"
    assert not (project.path / "reports/results.json").exists()


def _break_status(data: dict) -> None:
    data["scenarios"][1]["status"] = "maybe"


def _break_entry(data: dict) -> None:
    data["scenarios"][0] = ["not", "an", "entry"]


def _no_scenarios(data: dict) -> None:
    del data["scenarios"]


def _bad_version(data: dict) -> None:
    data["schema_version"] = "2"


@pytest.mark.parametrize(
    ("breaking", "message"),
    [
        (_break_status, "b.json' is not a valid harness results file: scenarios.1.status: "),
        (_break_entry, "b.json' is not a valid harness results file: scenarios.0: "),
        (_no_scenarios, "b.json' is not a harness results file (no 'scenarios')"),
        (_bad_version, 'b.json\' has schema_version "2" (a string, not an integer)'),
        (None, "b.json' is not valid JSON: "),
    ],
)
def test_a_broken_shard_file_is_refused_in_one_line_naming_it(project, run, breaking, message):
    _shard_results(1, 2, ["f::a", "f::c"]).write(project.path / "a.json")
    text = _shard_results(2, 2, ["f::b", "f::d", "f::e"]).to_json()
    if breaking is None:
        text = text[: len(text) // 2]  # a file cut short
    else:
        data = json.loads(text)
        breaking(data)
        text = json.dumps(data, indent=2)
    (project.path / "b.json").write_text(text)
    with pytest.raises(ResultsFileError) as whole:
        load_results(project.path / "b.json", what="shard")
    status, out, err = run("merge", "a.json", "b.json")
    assert status == 2, out
    # The message load_results gives for the whole file, though merge reads it entry by
    # entry: what is wrong, in which file, where in it.
    assert err == f"harness merge: error: {str(whole.value).replace(str(project.path) + '/', '')}\n"
    assert message in err
    assert "Traceback" not in out + err
    assert not (project.path / "reports/results.json").exists()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("given", ["/dev/zero", "/dev/urandom", "a folder"])
def test_a_shard_that_is_a_device_is_refused_before_it_is_read(project, tmp_path, given):
    # /dev/zero was read whole on the error path: 1 GB a second, for ever. (A named pipe
    # is read as a stream: test_stops waits on one.)
    import subprocess
    import sys

    _shard_results(1, 2, ["f::a"]).write(project.path / "a.json")
    given = str(tmp_path) if given == "a folder" else given
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "merge", "a.json", given],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=project.path,
    )
    assert done.returncode == 2, done.stderr
    said = "a directory, not a file" if given == str(tmp_path) else "a device, not a file"
    assert done.stderr.splitlines() == [
        f"harness merge: error: shard {given!r} is {said}"
        + ("" if given == str(tmp_path) else ": give a results.json file")
    ]


@pytest.mark.timeout(120)
def test_load_results_refuses_a_device_before_reading_it():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from harness._results import ResultsFileError, load_results\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        load_results(path, what='baseline')\n"
        "    except ResultsFileError as exc:\n"
        "        print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "/dev/zero", "/dev/urandom"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.splitlines() == [
        f"baseline {path!r} is a device, not a file: give a results.json file"
        for path in ("/dev/zero", "/dev/urandom")
    ], done.stderr


def test_a_large_broken_shard_is_refused_without_being_read_whole(project):
    import subprocess
    import sys

    _shard_results(1, 2, ["f::a"]).write(project.path / "a.json")
    with (project.path / "b.json").open("wb") as out:  # 64 MB that is no JSON
        out.write(b"\0" * (64 * 2**20))
    # The peak of the process's own memory (VmHWM: a child's rusage counts what it
    # shared with this process before its exec).
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from harness.cli import main\n"
        "status = main(['merge', 'a.json', 'b.json'])\n"
        "peak = [li for li in Path('/proc/self/status').read_text().splitlines() if li.startswith('VmHWM')]\n"
        "print(status, peak[0].split()[1])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=project.path
    )
    status, peak = done.stdout.split()
    assert status == "2", done.stderr
    assert done.stderr == (
        "harness merge: error: shard 'b.json' is not a harness results file: it is not valid "
        "JSON (write it with `harness run --json FILE`)\n"
    )
    assert int(peak) < 100 * 1024, peak  # KiB: it was read whole (and more) before


def test_a_large_shard_with_a_broken_entry_is_refused_in_one_line_quoting_none_of_it(
    project, run, monkeypatch
):
    import harness._results as streamed

    monkeypatch.setattr(streamed, "WHOLE_ON_ERROR", 100)  # every file here is larger
    _shard_results(1, 2, ["f::a"]).write(project.path / "a.json")
    data = json.loads(_shard_results(2, 2, ["f::b"]).to_json())
    data["scenarios"][0]["status"] = "sk-not-to-be-quoted"
    (project.path / "b.json").write_text(json.dumps(data))
    status, out, err = run("merge", "a.json", "b.json")
    assert status == 2, out
    assert err.startswith(
        "harness merge: error: shard 'b.json' is not a harness results file: an entry's status: "
    ), err
    assert "sk-not-to-be-quoted" not in err and len(err.splitlines()) == 1


def test_a_shard_of_a_newer_schema_or_another_harness_is_read_as_such(project, run):
    from harness._results import SCHEMA_VERSION

    _shard_results(1, 2, ["f::a"]).write(project.path / "a.json")
    newer = json.loads(_shard_results(2, 2, ["f::b"]).to_json())
    newer["schema_version"] = SCHEMA_VERSION + 1
    (project.path / "b.json").write_text(json.dumps(newer))
    status, _, err = run("merge", "a.json", "b.json")
    assert status == 2
    assert f"has schema_version {SCHEMA_VERSION + 1}; this harness reads" in err
    assert "upgrade harness to read it" in err


def test_an_entry_of_another_harness_version_is_written_by_the_model(project, run):
    # This version's shard: its entries copied as written (fast), a value written in
    # another form kept; another version's, or one of an older schema (a file this
    # version migrated, or edited by hand): each entry written by the model.
    from harness._results import SCHEMA_VERSION, harness_version

    this = harness_version() or "1.0"
    cases = ((this, SCHEMA_VERSION, "7"), ("0.0.1", SCHEMA_VERSION, "7.0"), (this, 1, "7.0"))
    for version, schema, sim_time in cases:
        for k, ids in ((1, ["f::a"]), (2, ["f::b"])):
            text = _shard_results(k, 2, ids, version=version).to_json()
            # "sim_time": 7 where the model writes 7.0, its keys in the model's order.
            text = text.replace('"sim_time": 0.0', '"sim_time": 7')
            text = text.replace(
                f'"schema_version": {SCHEMA_VERSION}', f'"schema_version": {schema}'
            )
            (project.path / f"s{k}.json").write_text(text)
        assert run("merge", "s1.json", "s2.json", "--json", "m.json")[0] == 0
        merged = (project.path / "m.json").read_text()
        assert f'"sim_time": {sim_time},' in merged, (version, schema, merged)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--shard", "3/2"], "argument --shard: '3/2': K must be between 1 and N"),
        (["--durations", "x.json"], "--durations balances shards: it needs --shard K/N"),
        (["--shard", "1/2", "--durations", "nowhere.json"], "does not exist"),
        (["--concurrency", "0"], "--concurrency"),
        (["--live", "--record-mode", "once"], "--live records nothing"),
    ],
)
def test_bad_scale_flags_exit_2(project, run, args, message):
    add(project, "greet", PASSING)
    status, out, err = run("run", *args)
    assert status == 2
    assert message in out + err
