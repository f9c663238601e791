"""Behaviour coverage (docs/coverage.md): `harness run --coverage`, results.json's
`coverage`, the terminal line, --coverage-fail-under, shards and parts, the baseline diff,
the reports, and `harness coverage [--suggest]`.

The held-out suite below is written for these tests: a tool offered and never called
(`delete_order`), a tool whose first call raises (`charge`), a call with arguments its
schema refuses (`refund`, retried).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from scenario_texts import SESSION_TESTS

from harness import cli
from harness._actions import RunFields, ToolCallRecord
from harness._coverage import Behaviours, CoverageTable, exercised

pytestmark = SESSION_TESTS

SEARCH = """\
name: search
input: Find order 7.
tools:
  search: {parameters: {order: int}, returns: "order {{ args.order }}: shipped"}
  delete_order: {parameters: {order: int}, returns: deleted}
llm:
  script:
    - tool_calls: [{search: {order: 7}}]
    - content: Order 7 has shipped.
expect: {termination: completed}
"""

CHARGE = """\
name: charge-fails
input: Charge the card.
tools:
  charge:
    parameters: {amount: float}
    returns: charged
    errors: [{on_call: 1, raise: card declined}]
llm:
  script:
    - tool_calls: [{charge: {amount: 5.0}}]
    - content: The card was declined.
expect: {termination: completed}
"""

REFUND = """\
name: refund-invalid
agent: {on_validation_error: retry}
input: Refund order 7.
tools:
  refund: {parameters: {order: int}, returns: refunded}
llm:
  script:
    - tool_calls: [{refund: {order: seven}}]
    - tool_calls: [{refund: {order: 7}}]
    - content: Refunded.
expect: {termination: completed}
"""

SUITE = {"search": SEARCH, "charge": CHARGE, "refund": REFUND}
LINE = re.compile(r"coverage: (\d+) of (\d+) behaviours \((\d+)%\)")


@pytest.fixture
def project(pytester):
    """A project with the held-out suite in scenarios/."""
    (pytester.path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (pytester.path / "scenarios").mkdir()
    for name, text in SUITE.items():
        (pytester.path / "scenarios" / f"{name}.scenario.yaml").write_text(text)
    return pytester


@pytest.fixture
def run(project, monkeypatch, capfd):
    """``harness ARGS`` in this process: (exit status, stdout, stderr)."""
    monkeypatch.chdir(project.path)

    def call(*args: str) -> tuple[int, str, str]:
        status = cli.main(list(args))
        captured = capfd.readouterr()
        return status, captured.out, captured.err

    return call


def cells(path: Path) -> dict[tuple[str, str], dict]:
    """results.json's coverage cells by (kind, key)."""
    data = json.loads(path.read_text())["coverage"]
    return {(c["kind"], c["key"]): c for c in data["cells"]}


def coverage_text(path: Path) -> str:
    """results.json's ``coverage`` exactly as written."""
    return json.dumps(json.loads(path.read_text())["coverage"], indent=2)


# -- what is covered ---------------------------------------------------------------------


def test_an_offered_tool_never_called_is_uncovered_and_its_outcomes_too(project, run):
    status, out, _ = run("run", "--coverage", "--json", "r.json")
    assert status == 0, out
    found = cells(project.path / "r.json")
    assert found["tool", "delete_order"] == {
        "kind": "tool",
        "key": "delete_order",
        "covered": False,
        "scenarios": [],
    }
    assert not found["tool_outcome", "delete_order:ok"]["covered"]
    assert found["tool", "search"]["scenarios"] == ["scenarios/search.scenario.yaml::search"]


def test_a_tools_error_and_invalid_arguments_are_covered_by_the_scenarios_that_did_it(project, run):
    assert run("run", "--coverage", "--json", "r.json")[0] == 0
    found = cells(project.path / "r.json")
    assert found["tool_outcome", "charge:error"]["scenarios"] == [
        "scenarios/charge.scenario.yaml::charge-fails"
    ]
    assert not found["tool_outcome", "charge:ok"]["covered"]  # its only call raised
    assert found["tool_outcome", "refund:invalid"]["scenarios"] == [
        "scenarios/refund.scenario.yaml::refund-invalid"
    ]
    assert found["tool_outcome", "refund:ok"]["covered"]
    assert found["model_fault", "schema_arguments"]["covered"]
    assert not found["model_fault", "malformed_arguments"]["covered"]
    assert not found["tool_outcome", "search:error"]["covered"]


def test_the_terminal_line_agrees_with_results_json(project, run):
    status, out, _ = run("run", "--coverage", "--json", "r.json")
    assert status == 0
    (covered, total, percent) = map(int, LINE.search(out).groups())
    data = json.loads((project.path / "r.json").read_text())["coverage"]
    assert (covered, total) == (data["covered"], data["total"])
    assert total == len(data["cells"]) and covered == sum(c["covered"] for c in data["cells"])
    assert percent == covered * 100 // total and 0 < covered < total


def test_without_coverage_results_json_has_none(project, run):
    status, out, _ = run("run", "--json", "r.json")
    assert status == 0 and "coverage:" not in out
    assert "coverage" not in json.loads((project.path / "r.json").read_text())


def test_fail_under_fails_below_and_passes_at_or_above(project, run):
    status, out, _ = run("run", "--coverage", "--json", "r.json")
    percent = json.loads((project.path / "r.json").read_text())["coverage"]
    share = 100 * percent["covered"] / percent["total"]
    status, out, _ = run("run", "--coverage-fail-under", f"{share + 0.5:.2f}", "--json", "r.json")
    assert status == 1, out
    assert f"is below the required {share + 0.5:.2f}".rstrip("0") in out
    status, out, _ = run("run", "--coverage-fail-under", f"{share - 0.5:.2f}", "--json", "r.json")
    assert status == 0, out
    assert "below the required" not in out
    # And from the results file, as `coverage report --fail-under` does.
    assert run("coverage", "r.json", "--fail-under", "100")[0] == 1
    assert run("coverage", "r.json", "--fail-under", "0")[0] == 0


def test_plain_pytest_records_coverage_and_fails_under_the_share(project):
    result = project.runpytest(
        "scenarios", "--harness-coverage-fail-under", "100", "--harness-json", "r.json"
    )
    assert result.ret == 1  # every scenario passed: the share alone fails the session
    result.stdout.fnmatch_lines(
        ["coverage: * of * behaviours (*%)", "coverage *% is below the required 100%: exit*"]
    )
    assert cells(project.path / "r.json")["tool", "delete_order"]["covered"] is False
    assert project.runpytest("scenarios", "--harness-coverage-fail-under", "10").ret == 0


def test_a_bad_fail_under_or_project_setting_is_one_line(project, run):
    status, _, err = run("run", "--coverage-fail-under", "120")
    assert status == 2 and "expected a percentage from 0 to 100, got '120'" in err
    (project.path / "pyproject.toml").write_text(
        "[project]\nname = 'demo'\n[tool.harness]\ncoverage = 'yes'\n"
    )
    status, _, err = run("run")
    assert status == 2 and "[tool.harness] coverage must be true or false" in err
    assert len(err.strip().splitlines()) == 1


def test_the_project_setting_turns_coverage_on(project, run):
    (project.path / "pyproject.toml").write_text(
        "[project]\nname = 'demo'\n[tool.harness]\ncoverage = true\n"
    )
    status, out, _ = run("run", "--json", "r.json")
    assert status == 0 and LINE.search(out)
    assert "coverage" in json.loads((project.path / "r.json").read_text())


AGENT = """\
from openai import OpenAI

TOOLS = [
    {"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
    for name in ("get_weather", "get_time")
]


def answer(question):
    # Its own timeout, as an agent sets one: a model_fault timeout suggestion's request is
    # held until the client gives up (else the server's --max-delay, 30 s).
    client = OpenAI(timeout=5)
    messages = [{"role": "user", "content": question}]
    while True:
        reply = client.chat.completions.create(model="m", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "18C"})
"""

TARGET = """\
name: target
target: {python: "agent:answer", timeout: 60, requires: [openai]}
input: Weather in Paris?
llm:
  script:
    - tool_calls: [{get_weather: {city: Paris}}]
    - content: 18C in Paris.
"""


def test_a_targets_tools_are_those_its_requests_offered_on_its_wire(project, run):
    (project.path / "agent.py").write_text(AGENT)
    (project.path / "targets").mkdir()
    (project.path / "targets/target.scenario.yaml").write_text(TARGET)
    status, out, _ = run("run", "--coverage", "targets", "--json", "r.json")
    assert status == 0, out
    found = cells(project.path / "r.json")
    sid = ["targets/target.scenario.yaml::target"]
    assert found["tool", "get_weather"]["scenarios"] == sid
    assert found["tool_outcome", "get_weather:ok"]["scenarios"] == sid
    # Offered in the target's requests only (the file never names it): never called.
    assert not found["tool", "get_time"]["covered"]
    # A target's own tool: a scenario can make it be called (ok); whether it fails, or
    # checks its arguments, is the target's code's to decide.
    assert {k for kind, k in found if kind == "tool_outcome" and k.startswith("get_time")} == {
        "get_time:ok"
    }
    assert found["wire", "openai-chat"]["scenarios"] == sid
    assert ("model_fault", "unknown_tool") not in found  # never served to a target
    assert not found["model_fault", "http_503"]["covered"]
    # A suggestion calls it: the target's scenario, run once to learn what it offers.
    status, out, _ = run("coverage", "r.json", "--suggest", "-o", "suggested")
    assert "suggested: suggested/target--call-get_time.scenario.yaml: tool get_time" in out
    # That one suggestion rerun (the folder holds nine, one a model timeout).
    suggestion = "suggested/target--call-get_time.scenario.yaml"
    assert run("run", "--coverage", "targets", suggestion, "--json", "after.json")[0] == 0
    assert cells(project.path / "after.json")["tool_outcome", "get_time:ok"]["covered"]


# -- the same table however the suite is run -----------------------------------------------


def test_coverage_is_byte_identical_across_reruns_under_xdist_and_in_parts(project, run):
    assert run("run", "--coverage", "--json", "a.json")[0] == 0
    assert run("run", "--coverage", "--json", "b.json")[0] == 0
    assert run("run", "--coverage", "-n", "2", "--json", "n.json")[0] == 0
    assert run("run", "--coverage", "--chunk-size", "1", "--json", "c.json")[0] == 0
    texts = {coverage_text(project.path / f"{name}.json") for name in "abnc"}
    assert len(texts) == 1


def test_a_two_shard_merge_equals_the_serial_coverage(project, run):
    assert run("run", "--coverage", "--json", "serial.json")[0] == 0
    for k in (1, 2):
        assert run("run", "--coverage", "--shard", f"{k}/2", "--json", f"s{k}.json")[0] == 0
        assert json.loads((project.path / f"s{k}.json").read_text())["coverage"]["covered"]
    shard_cells = [cells(project.path / f"s{k}.json") for k in (1, 2)]
    assert shard_cells[0] != shard_cells[1]  # each shard covered a part
    status, out, _ = run("merge", "s1.json", "s2.json", "--json", "merged.json")
    assert status == 0, out
    assert coverage_text(project.path / "merged.json") == coverage_text(
        project.path / "serial.json"
    )
    assert LINE.search(out).group(0) in run("coverage", "serial.json")[1]
    status, out, _ = run("merge", "s1.json", "s2.json", "--coverage-fail-under", "100")
    assert status == 1 and "is below the required 100%" in out


def test_merge_refuses_shards_with_and_without_coverage(project, run):
    assert run("run", "--coverage", "--shard", "1/2", "--json", "s1.json")[0] == 0
    assert run("run", "--shard", "2/2", "--json", "s2.json")[0] == 0
    status, _, err = run("merge", "s1.json", "s2.json")
    assert status == 2
    assert err.strip() == (
        "harness merge: error: s2.json has no coverage and other shards have: run every "
        "shard with --coverage (or none)"
    )


# -- the reports ---------------------------------------------------------------------------


def test_the_baseline_diff_lists_behaviours_no_longer_covered(project, run):
    assert run("run", "--coverage", "--json", "base.json")[0] == 0
    charge = project.path / "scenarios/charge.scenario.yaml"
    charge.write_text(CHARGE.replace("errors: [{on_call: 1, raise: card declined}]", ""))
    status, out, _ = run(
        "run", "--coverage", "--baseline", "base.json", "--json", "r.json", "--markdown", "r.md"
    )
    assert status == 0, out
    lost = json.loads((project.path / "r.json").read_text())["baseline"]["no_longer_covered"]
    assert lost == [
        {
            "kind": "tool_outcome",
            "key": "charge:error",
            "scenarios": ["scenarios/charge.scenario.yaml::charge-fails"],
        }
    ]
    assert "no longer covered: 1 behaviour(s)" in out
    assert "tool_outcome charge:error (was: scenarios/charge.scenario.yaml::charge-fails)" in out
    assert "**No longer covered**" in (project.path / "r.md").read_text()
    # A run that left the scenario out says nothing of what only it covered.
    status, out, _ = run(
        "run", "--coverage", "--baseline", "base.json", "-k", "not charge", "--json", "k.json"
    )
    assert "no_longer_covered" not in json.loads((project.path / "k.json").read_text())["baseline"]


def test_an_updated_baseline_keeps_coverage_and_what_its_kept_entries_covered(project, run):
    assert run("run", "--coverage", "--update-baseline")[0] == 0
    baseline = project.path / "reports/baseline.json"
    before = cells(baseline)
    assert before["tool_outcome", "charge:error"]["covered"]
    # A narrowed run keeps the baseline's entry of charge, and what it covered.
    assert run("run", "--coverage", "-k", "not charge", "--update-baseline")[0] == 0
    assert cells(baseline) == before
    assert run("run", "--coverage", "--fail-on-change")[0] == 0


def test_the_reports_show_the_grid_and_the_line(project, run):
    status, _, _ = run(
        "run", "--coverage", "--json", "r.json", "--html", "r.html", "--markdown", "r.md"
    )
    assert status == 0
    line = json.loads((project.path / "r.json").read_text())["coverage"]
    text = f"coverage: {line['covered']} of {line['total']} behaviours"
    markdown = (project.path / "r.md").read_text()
    assert f"**{text}" in markdown and "`tool delete_order`" in markdown
    html = (project.path / "r.html").read_text()
    section = html[html.index('<section class="coverage panel"') :]
    section = section[: section.index("</section>")]
    assert text in section
    row = section[section.index("<code>delete_order</code>") :]
    row = row[: row.index("</tr>")]
    assert row.count('class="cov no"') == 5  # never called: called, ok, error, invalid, not_run
    charge = section[section.index("<code>charge</code>") :]
    charge = charge[: charge.index("</tr>")]
    assert 'href="#s1"' in charge and "charge-fails" in charge


def test_harness_coverage_prints_the_table_and_refuses_results_without_it(project, run):
    assert run("run", "--coverage", "--json", "r.json")[0] == 0
    status, out, _ = run("coverage", "r.json", "--uncovered")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split() == ["kind", "behaviour", "covered", "by"]
    assert any(line.split()[:3] == ["tool", "delete_order", "MISSING"] for line in lines)
    assert not any("search:ok" in line for line in lines)  # covered: not listed
    assert LINE.fullmatch(lines[-1])
    assert run("run", "--json", "plain.json")[0] == 0
    status, _, err = run("coverage", "plain.json")
    assert status == 2 and "has no coverage: write it with `harness run --coverage`" in err


# -- suggestions ---------------------------------------------------------------------------


def test_suggestions_cover_what_the_suite_missed(project, run):
    assert run("run", "--coverage", "--json", "before.json")[0] == 0
    before = cells(project.path / "before.json")
    assert not before["tool_outcome", "search:error"]["covered"]
    status, out, _ = run("coverage", "before.json", "--suggest", "-o", "suggested")
    assert status == 0, out
    written = sorted(p.name for p in (project.path / "suggested").iterdir())
    assert "search--search-error.scenario.yaml" in written
    assert "search--call-delete_order.scenario.yaml" in written
    text = (project.path / "suggested/search--search-error.scenario.yaml").read_text()
    assert "errors:\n    - on_call: 1\n" in text and "expect:\n  termination: completed" in text
    status, out, _ = run("run", "--coverage", "scenarios", "suggested", "--json", "after.json")
    assert status == 0, out  # every suggestion passes its own expectation
    after = cells(project.path / "after.json")
    assert after["tool_outcome", "search:error"]["scenarios"] == [
        "suggested/search--search-error.scenario.yaml::search--search-error"
    ]
    assert after["tool", "delete_order"]["covered"]
    gained = {c for c, v in after.items() if v["covered"]} - {
        c for c, v in before.items() if v["covered"]
    }
    assert len(gained) >= len(written)
    # Deterministic: the same files again.
    first = {p.name: p.read_text() for p in (project.path / "suggested").iterdir()}
    assert run("coverage", "before.json", "--suggest", "-o", "suggested")[0] == 0
    assert {p.name: p.read_text() for p in (project.path / "suggested").iterdir()} == first


# -- what a run's record shows -------------------------------------------------------------


def _call(name: str, status: str, group: int, call_id: str = "c") -> ToolCallRecord:
    return ToolCallRecord(id=call_id, name=name, status=status, iteration=1, group=group)


def test_each_status_is_counted_for_its_own_tool():
    run = RunFields(
        termination="completed",
        tool_calls=[
            _call("a", "ok", 1),
            _call("b", "error", 2),
            _call("a", "invalid", 3, "x"),
            _call("b", "not_run", 3, "y"),
            _call("ghost", "unknown_tool", 4),
        ],
    )
    found = exercised(run)
    assert {key for kind, key in found if kind == "tool_outcome"} == {
        "a:ok",
        "b:error",
        "a:invalid",
        "b:not_run",
    }
    assert {key for kind, key in found if kind == "tool"} == {"a", "b"}
    assert ("model_fault", "unknown_tool") in found
    assert ("model_fault", "schema_arguments") in found
    assert {("plan", "single"), ("plan", "parallel")} <= found


def test_a_table_is_the_union_of_its_parts_whatever_their_order():
    one = Behaviours(frozenset({("tool", "a"), ("tool", "b")}), frozenset({("tool", "a")}))
    two = Behaviours(frozenset({("tool", "b")}), frozenset({("tool", "b")}))
    serial, parts = CoverageTable(), [CoverageTable(), CoverageTable()]
    serial.add("s1", one)
    serial.add("s2", two)
    parts[1].add("s2", two)
    parts[0].add("s1", one)
    joined = CoverageTable()
    for part in reversed(parts):
        joined.update(part)
    assert joined.coverage() == serial.coverage()
    assert serial.coverage().line() == "coverage: 2 of 2 behaviours (100%)"
    assert Behaviours.from_json(json.loads(json.dumps(one.to_json()))) == one
