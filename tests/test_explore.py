"""`harness explore` on harness's own loop (docs/explore.md): the catalogue placed as
scenario data, sites from a first run, the invariants, depth 1 and 2, each failure a file
that fails the same way, findings, the matrix (JSON, terminal, HTML), determinism, and bad
input in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from harness.cli import main
from harness.explore import ALL_FAULTS, ExploreError, ExploreOptions, Site, explore, with_fault
from harness.explore._catalogue import FaultError
from harness.scenario import run_scenario
from harness.shrink import Failure

ROUNDTRIP = """\
name: refund
input: Refund order 7
{agent}tools:
  lookup:
    description: Look an order up
    parameters: {{order: int}}
    returns: {{order: "{{{{ args.order }}}}", paid: 20}}
  refund:
    parameters: {{order: int}}
    returns: refunded
llm:
  script:
    - tool_calls: [{{lookup: {{order: 7}}}}]
    - tool_calls: [{{refund: {{order: 7}}}}]
    - content: Order 7 is refunded.
{invariants}expect:
  termination: completed
  llm_calls: 3
"""


def _write(folder: Path, agent: str = "", invariants: str = "", name: str = "refund") -> Path:
    (folder / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    path = folder / f"{name}.scenario.yaml"
    path.write_text(ROUNDTRIP.format(agent=agent, invariants=invariants), encoding="utf-8")
    return path


def _options(folder: Path, **given) -> ExploreOptions:
    return ExploreOptions(output=folder / "explored", **given)


# -- the catalogue ---------------------------------------------------------------------------


def test_with_fault_places_each_kind_as_scenario_data_and_leaves_the_original():
    data = yaml.safe_load(ROUNDTRIP.format(agent="", invariants=""))
    before = json.dumps(data, sort_keys=True)
    placed = {
        "http_429": ("model", 2),
        "malformed_arguments": ("model", 1),
        "tool_error": ("tools", 2),
        "tool_huge": ("tools", 1),
        "tool_injection": ("tools", 1),
        "mcp_rug_pull": ("mcp", 1),
    }
    for kind, (where, call) in placed.items():
        site = Site(where, call, tool="" if where == "model" else "lookup")
        out = with_fault(data, site, kind)
        if where == "model":
            assert out["llm"]["faults"] == [{"call": call, "kind": kind}]
        else:
            assert out["tools"]["lookup"] != data["tools"]["lookup"]
    assert json.dumps(data, sort_keys=True) == before
    out = with_fault(data, Site("tools", 2, tool="lookup"), "tool_error")
    assert out["tools"]["lookup"]["errors"][0]["on_call"] == 2
    # A fault spoiling calls needs a reply that makes calls; an MCP fault an MCP site.
    with pytest.raises(FaultError):
        with_fault(data, Site("model", 3), "schema_arguments")
    with pytest.raises(FaultError):
        with_fault(data, Site("tools", 1, tool="lookup"), "mcp_error")
    with pytest.raises(FaultError):
        with_fault(data, Site("model", 5), "http_429")  # the script has 3 replies


def test_every_kind_of_the_catalogue_loads_as_an_ordinary_scenario(tmp_path):
    from harness.scenario._loader import load_scenario_data

    path = _write(tmp_path)
    data = yaml.safe_load(path.read_text())
    data["target"] = {"command": ["true"]}  # MCP faults are a target's
    for kind in ALL_FAULTS:
        where = "model" if kind in ALL_FAULTS[:12] else "mcp" if kind.startswith("mcp") else "tools"
        site = Site(where, 1, tool="" if where == "model" else "lookup")
        load_scenario_data(with_fault(data, site, kind), path)


# -- exploring ---------------------------------------------------------------------------------


def test_a_429_breaks_termination_completed_without_llm_retries_and_holds_with_them(tmp_path):
    invariants = "invariants: {termination: completed}\n"
    path = _write(tmp_path, invariants=invariants)
    options = _options(tmp_path, faults=("http_429",))
    (bare,) = explore([path], options).scenarios
    assert [c.outcome for c in bare.cells] == ["broken"] * 3
    (finding,) = bare.findings
    assert finding.broken == ["termination"] and finding.termination == "llm_error"
    assert finding.divergence == "model call: failed"
    # Each failure a file named after its fault, that fails the same way on its reruns.
    assert sorted(Path(f).name for f in finding.files) == [
        f"refund--model-{n}-http-429.scenario.yaml" for n in (1, 2, 3)
    ]
    assert finding.reproduced == 3 and finding.reruns == 10 + 1 + 1
    written = tmp_path / "explored" / "refund--model-2-http-429.scenario.yaml"
    data = yaml.safe_load(written.read_text())
    assert data["expect"] == {"termination": "completed"}
    assert {"call": 2, "kind": "http_429"} in data["llm"]["faults"]
    assert data["name"] == "refund"
    for _ in range(3):
        rerun = run_scenario(written)
        assert (
            rerun.termination == "llm_error" and rerun.failed_expectations[0].path == "termination"
        )

    retried = _write(tmp_path, agent="agent: {llm_retries: {}}\n", invariants=invariants)
    (held,) = explore([retried], _options(tmp_path, faults=("http_429",))).scenarios
    assert held.findings == [] and held.schedules.held == 3


def test_sites_are_every_model_call_and_every_call_of_each_tool(tmp_path):
    path = _write(tmp_path)
    (entry,) = explore([path], _options(tmp_path, faults=("http_500", "tool_error"))).scenarios
    assert entry.sites == [
        "model call 1",
        "model call 2",
        "model call 3",
        "tool lookup call 1",
        "tool refund call 1",
    ]
    assert {(c.site, c.kind) for c in entry.cells} == {
        *((f"model call {n}", "http_500") for n in (1, 2, 3)),
        ("tool lookup call 1", "tool_error"),
        ("tool refund call 1", "tool_error"),
    }
    # The default invariants: the own loop ends without a crash, within 5 requests a reply.
    assert entry.invariants["max_requests_per_call"] == 5
    assert entry.findings == []


def test_invariants_expect_uses_the_scenarios_own_expect(tmp_path):
    path = _write(tmp_path, invariants="invariants: expect\n")
    (entry,) = explore([path], _options(tmp_path, faults=("tool_error",))).scenarios
    # The model goes on after a tool error, and still asks three times: both hold.
    assert entry.invariants == {"termination": "completed", "llm_calls": 3}
    assert entry.schedules.held == 2


def test_depth_two_pairs_each_fault_with_the_sites_its_run_made(tmp_path):
    path = _write(
        tmp_path,
        agent="agent: {llm_retries: {max: 1}}\n",
        invariants="invariants: {termination: completed}\n",
    )
    options = _options(tmp_path, depth=2, faults=("http_429",), write=False)
    (entry,) = explore([path], options).scenarios
    pairs = [s.faults for s in entry.tried if len(s.faults) == 2]
    # Two 429s before one reply (the retry's, a new site) break the run of one retry.
    assert [("model call 2", "http_429"), ("model call 2", "http_429")] in [
        [tuple(f) for f in p] for p in pairs
    ]
    broken = {tuple(map(tuple, s.faults)) for s in entry.tried if s.outcome == "broken"}
    assert (("model call 2", "http_429"), ("model call 2", "http_429")) in broken
    assert all(s.outcome == "held" for s in entry.tried if len(s.faults) == 1)
    # Pairs at different sites are tried in one order only.
    keys = [tuple(sorted(map(tuple, p))) for p in pairs if p[0][0] != p[1][0]]
    assert len(keys) == len(set(keys))


def test_max_variants_samples_deterministically_and_shards_split_the_schedules(tmp_path):
    path = _write(tmp_path)

    def tried(**given):
        (entry,) = explore([path], _options(tmp_path, write=False, **given)).scenarios
        return [tuple(map(tuple, s.faults)) for s in entry.tried]

    everything = tried()
    sample = tried(max_variants=7, seed=3)
    assert len(sample) == 7 and set(sample) <= set(everything)
    assert tried(max_variants=7, seed=3) == sample and tried(max_variants=7, seed=4) != sample
    shards = [tried(shard=(k, 3)) for k in (1, 2, 3)]
    assert sorted(s for shard in shards for s in shard) == sorted(everything)


def test_the_same_inputs_give_the_same_files_byte_for_byte(tmp_path):
    path = _write(tmp_path, invariants="invariants: {termination: completed}\n")
    out = tmp_path / "explored"
    runs = []
    for jobs in (1, 2):  # in this process, then written by two workers: the same bytes
        options = ExploreOptions(
            output=out, faults=("http_503", "truncated", "tool_empty"), jobs=jobs
        )
        results = explore([path], options)
        runs.append(({p.name: p.read_bytes() for p in out.iterdir()}, results.model_dump()))
        for written in out.iterdir():
            written.unlink()
    assert runs[0][0] and runs[0] == runs[1]


def test_parallel_workers_give_the_results_of_one_process(tmp_path):
    path = _write(tmp_path, invariants="invariants: {termination: completed}\n")
    one = explore([path], _options(tmp_path, write=False))
    two = explore([path], _options(tmp_path, write=False, jobs=2))
    assert one.model_dump() == two.model_dump()


# -- the command ---------------------------------------------------------------------------------


def test_the_command_writes_the_matrix_and_exits_1_on_a_failure(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path, invariants="invariants: {termination: completed}\n")
    status = main(
        ["explore", str(path), "--faults", "http_429,tool_error", "--json", "e.json",
         "--html", "e.html"]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert status == 1
    assert "refund.scenario.yaml: 5 sites, 5 schedules: 2 held, 3 broken, 0 crashed" in out
    assert "explored/refund--model-1-http-429.scenario.yaml (+2 more)" in out
    assert "robustness: 2 of 5 schedules held (40%); 1 finding" in out
    section = json.loads((tmp_path / "e.json").read_text())["explore"]
    (scenario,) = section["scenarios"]
    assert scenario["schedules"] == {"tried": 5, "held": 2, "broken": 3, "crashed": 0}
    assert scenario["findings"][0]["files"][0] == "explored/refund--model-1-http-429.scenario.yaml"
    html = (tmp_path / "e.html").read_text()
    assert 'href="explored/refund--model-2-http-429.scenario.yaml"' in html
    assert "Content-Security-Policy" in html and "<script" not in html


def test_every_schedule_holding_exits_0(tmp_path, capsys):
    path = _write(tmp_path)
    assert main(["explore", str(path), "--faults", "tool_error", "-o", str(tmp_path / "o")]) == 0
    assert "0 findings" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--faults", "http_418"], "--faults http_418: unknown 'http_418'; known: http_429"),
        (["--sites", "modle"], "--sites modle: unknown 'modle'"),
        (["--shard", "3/2"], "--shard 3/2: write K/N"),
        (["--max-variants", "0"], "--max-variants 0: give 1 or more"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(tmp_path, capsys, argv, message):
    path = _write(tmp_path)
    assert main(["explore", str(path), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_a_scenario_that_fails_as_written_stops_the_exploration(tmp_path, capsys):
    path = _write(tmp_path)
    path.write_text(path.read_text().replace("llm_calls: 3", "llm_calls: 4"))
    assert main(["explore", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "refund.scenario.yaml failed as written (completed; failing: llm_calls)" in err
    assert len(err.splitlines()) == 1
    with pytest.raises(ExploreError, match="no such file or folder"):
        explore([tmp_path / "nothing"], ExploreOptions())


def test_a_written_failure_keeps_failing_the_same_way_after_it_is_shrunk(tmp_path):
    path = _write(tmp_path, invariants="invariants: {termination: completed}\n")
    (entry,) = explore([path], _options(tmp_path, faults=("truncated",))).scenarios
    # A call cut at the length limit is a validation error (the reply 3 cut is an answer).
    (finding,) = entry.findings
    assert finding.termination == "validation_error" and finding.schedules == 2
    assert finding.shrunk and finding.reproduced == 2
    written = tmp_path / finding.files[0]
    text = written.read_text()
    assert text.startswith("# Shrunk by `harness shrink`")
    assert "# Found by `harness explore` from refund.scenario.yaml" in text
    data = yaml.safe_load(text)
    assert data["llm"]["faults"] == [{"call": 1, "kind": "truncated"}]
    assert data["expect"] == {"termination": "completed"}
    assert len(data["llm"]["script"]) < 3  # what does not matter went
    for _ in range(3):
        assert Failure.of(run_scenario(written)).termination == "validation_error"


def test_no_shrink_writes_each_failure_as_found(tmp_path, capsys):
    path = _write(tmp_path, invariants="invariants: {termination: completed}\n")
    out = tmp_path / "o"
    flags = ["--faults", "truncated", "-o", str(out), "--json", str(tmp_path / "e.json")]
    assert main(["explore", str(path), *flags, "--no-shrink"]) == 1
    capsys.readouterr()
    (finding,) = json.loads((tmp_path / "e.json").read_text())["explore"]["scenarios"][0][
        "findings"
    ]
    assert not finding["shrunk"]
    text = (tmp_path / finding["files"][0]).read_text()
    assert "# Shrunk" not in text
    data = yaml.safe_load(text)
    assert len(data["llm"]["script"]) == 3  # the original's script, the fault added
    assert data["llm"]["faults"] == [{"call": 1, "kind": "truncated"}]
    assert Failure.of(run_scenario(tmp_path / finding["files"][0])).termination == (
        "validation_error"
    )


def test_shards_merged_give_the_serial_exploration(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path, invariants="invariants: {termination: completed}\n")
    flags = ["--faults", "http_429,truncated,tool_error", "--no-shrink", "--depth", "2"]
    assert main(["explore", str(path), *flags, "--json", "serial.json"]) == 1
    for k in (1, 2, 3):
        main(["explore", str(path), *flags, "--shard", f"{k}/3", "--json", f"s{k}.json"])
    capsys.readouterr()
    assert main(["merge", "s1.json", "s2.json", "s3.json", "--json", "merged.json"]) == 1
    assert "robustness:" in capsys.readouterr().out

    def essentials(name: str) -> list:
        (scenario,) = json.loads((tmp_path / name).read_text())["explore"]["scenarios"]
        kept = ("faults", "outcome", "broken", "termination", "divergence", "file")
        tried = [{k: s[k] for k in kept} for s in scenario["tried"]]
        findings = [
            (f["number"], f["broken"], f["divergence"], f["files"]) for f in scenario["findings"]
        ]
        return [scenario["schedules"], tried, findings, scenario["cells"]]

    assert essentials("merged.json") == essentials("serial.json")
    assert main(["merge", "s1.json", "s1.json"]) == 2
    assert "another shard" in capsys.readouterr().err


def test_a_recorded_model_is_explored_with_the_faults_that_send_no_reply(tmp_path):
    root = Path(__file__).resolve().parents[1]
    path = root / "scenarios" / "recorded" / "weather-chat.scenario.yaml"
    # Nothing is written: the output folder only says where the variants load from.
    options = ExploreOptions(
        output=root / f".explore-nothing-{tmp_path.name}", sites=("model",), write=False
    )
    (entry,) = explore([path], options).scenarios
    assert entry.sites == ["model call 1", "model call 2"]
    kinds = {c.kind for c in entry.cells}
    assert kinds == {
        "http_429",
        "http_500",
        "http_503",
        "overloaded",
        "timeout",
        "stream_cut",
        "outage",
    }
    # The own loop ends in llm_error on each (no llm_retries): within the default invariants.
    assert entry.schedules.held == entry.schedules.tried == 14


def test_sub_agents_are_sites_of_their_own(tmp_path):
    root = Path(__file__).resolve().parents[1]
    path = root / "scenarios" / "agents" / "coordinator.scenario.yaml"
    options = ExploreOptions(
        output=root / f".explore-nothing-{tmp_path.name}",
        sites=("agents",),
        faults=("http_500", "tool_error"),
        write=False,
    )
    (entry,) = explore([path], options).scenarios
    # The researcher answers in two replies, the fetcher asks twice (its 4 iterations).
    assert entry.sites == [
        "agent fetcher model call 1",
        "agent fetcher model call 2",
        "agent researcher model call 1",
        "agent researcher model call 2",
        "tool fetcher call 1",
        "tool researcher call 1",
    ]
    assert {(c.kind, c.outcome) for c in entry.cells} == {
        ("http_500", "held"),
        ("tool_error", "held"),
    }
    assert entry.schedules.tried == 6
    # A sub-agent's model fault goes in its own llm section.
    placed = with_fault(
        yaml.safe_load(path.read_text()), Site("agents", 1, agent="researcher"), "http_500"
    )
    assert placed["agents"]["researcher"]["llm"]["faults"] == [{"call": 1, "kind": "http_500"}]


def test_a_scenario_breaking_its_invariants_as_written_is_left_out(tmp_path, capsys):
    path = _write(tmp_path, invariants="invariants: {termination: max_iterations}\n")
    assert main(["explore", str(path), "-o", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "refund.scenario.yaml: skipped: it breaks its invariants as written (termination;" in out


def test_a_script_that_cannot_answer_the_changed_run_is_no_finding(tmp_path):
    root = Path(__file__).resolve().parents[1]
    path = root / "scenarios" / "core" / "max-iterations-final-answer.scenario.yaml"
    options = ExploreOptions(
        output=root / f".explore-nothing-{tmp_path.name}", faults=("unknown_tool",)
    )
    (entry,) = explore([path], options).scenarios
    # One reply more reaches the limit a reply early: the scripted model's next step (a
    # call) cannot answer the final request. That is the script's limit, not the loop's.
    crashed = [s for s in entry.tried if s.outcome == "crashed"]
    assert crashed and entry.findings == []
    assert all(s.message.startswith("the script cannot answer this run: ") for s in crashed)
    assert not (root / f".explore-nothing-{tmp_path.name}").exists()


def test_an_output_folder_outside_the_project_is_refused_in_one_line(tmp_path, capsys):
    root = Path(__file__).resolve().parents[1]
    path = root / "scenarios" / "core" / "roundtrip.scenario.yaml"
    assert main(["explore", str(path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert "lies outside its project" in err and "give -o a folder inside it" in err
    assert len(err.splitlines()) == 1


def test_own_loop_mcp_servers_recorded_by_the_files_place_explore_in_its_own_folder(tmp_path):
    root = Path(__file__).resolve().parents[1]
    path = root / "scenarios" / "mcp" / "own-loop-notes.scenario.yaml"
    options = ExploreOptions(output=root / f".explore-nothing-{tmp_path.name}", write=False)
    (elsewhere,) = explore([path], options).scenarios
    assert "its MCP servers' recording is found from its file's place" in elsewhere.skipped
    here = ExploreOptions(output=path.parent, write=False, faults=("http_429",))
    (entry,) = explore([path], here).scenarios
    assert entry.skipped is None and entry.schedules.held == entry.schedules.tried == 4


LEAKY_TOOL = """\
import asyncio

LEFT = []


async def start(note: str) -> str:
    # A tool that leaves a task running when the run ends.
    LEFT.append(asyncio.get_running_loop().create_task(asyncio.sleep(3600)))
    return "started"
"""


def test_own_loop_variants_share_a_loop_but_leave_nothing_running(tmp_path, monkeypatch):
    # Variants run in one event loop per process; what a run leaves behind is ended after
    # it, as asyncio.run (harness run) ends it, not carried into the next variant.
    import sys

    from harness.explore._running import Workers, run_one

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "explore_leaky_tool.py").write_text(LEAKY_TOOL, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "explore_leaky_tool", raising=False)
    data = {
        "input": "go",
        "tools": {"start": {"use": "explore_leaky_tool:start"}},
        "llm": {"script": [{"tool_calls": [{"start": {"note": "a"}}]}, {"content": "done"}]},
        "expect": {"termination": "completed"},
    }
    at = tmp_path / "leaky.scenario.yaml"
    try:
        results = [run_one(data, at) for _ in range(2)]
    finally:
        Workers().close()
    assert [r.status for r in results] == ["passed", "passed"]
    left = sys.modules["explore_leaky_tool"].LEFT
    assert len(left) == 2 and all(task.cancelled() for task in left)
