"""``harness shrink`` (docs/shrink.md): a failing scenario becomes the smallest scenario
that fails the same way, checked by rerunning it, 1-minimal, deterministic, and written
as the original's YAML with its comments.

The 1-minimal checks here enumerate the output's elements themselves (script steps,
tools, expectations, faults) and rerun each removal through the scenario runner: they do
not trust the shrinker's own bookkeeping.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from harness import cli
from harness.scenario import run_scenario
from harness.scenario._loader import load_scenario_text
from harness.shrink import Failure, ShrinkError, ShrinkInterrupted, shrink, verify
from harness.shrink._ddmin import ddmin

# A long run in which a guard breaks deep: at step 9 of 11 the agent refunds an order
# in full, which tool_calls.forbid and never_called forbid; among six tools, five
# expectations, and a fault (the stock service fails once) that has nothing to do with it.
LONG = """\
# yaml-language-server: $schema=../harness-scenario.schema.json
name: warranty-claim
description: an 11-step claim; the refund guard breaks at step 9
seed: 7
input: My kettle from order 7 stopped working after a week. What can you do?
agent:
  max_iterations: 40
  system: You are a careful support agent. Never refund without approval.
tools:
  find_order:
    parameters: {order: int}
    returns: "order {{ args.order }}: kettle, 60 EUR, delivered {{ faker.date() }}"
  warranty:
    parameters: {item: str}
    returns: "{{ args.item }}: two years of warranty"
  stock:
    parameters: {item: str}
    returns: "{{ args.item }}: {{ faker.random_int(1, 9) }} in stock"
    # an unrelated fault: the stock service fails the first time
    errors: [{on_call: 1, raise: stock service unavailable}]
  notify:
    parameters: {text: str}
    returns: queued
  refund:
    parameters: {order: int, amount: float}
    returns: "refunded {{ args.amount }} EUR"
  note:
    parameters: {text: str}
    returns: noted
llm:
  script:
    # the claim is looked into
    - tool_calls: [{find_order: {order: 7}}]
    - tool_calls: [{warranty: {item: kettle}}]
    - tool_calls: [{stock: {item: kettle}}]
    - tool_calls: [{stock: {item: kettle}}]
    - content: A replacement is possible.
      tool_calls: [{note: {text: replacement possible}}]
    - tool_calls: [{notify: {text: We are sorry about your kettle.}}]
    - tool_calls: [{note: {text: customer told}}]
    - tool_calls: [{find_order: {order: 7}}]
    # the guard breaks here: a refund without approval
    - tool_calls: [{refund: {order: 7, amount: 60}}]
    - tool_calls: [{note: {text: refunded}}]
    - content: I refunded the kettle in full.
expect:
  termination: completed
  never_called: [refund]   # no refund without approval
  tool_calls:
    count: {note: 3}
    forbid: [{name: refund, args: {amount: 60}}]
  final: {contains: refunded}
"""


@pytest.fixture
def project(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'shrinking'\n")
    (tmp_path / "scenarios").mkdir()
    return tmp_path


def _write(project: Path, name: str, text: str) -> Path:
    path = project / "scenarios" / f"{name}.scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _failure(text: str, at: Path) -> Failure:
    return Failure.of(run_scenario(load_scenario_text(text, at)))


def _elements(data: dict) -> list[tuple]:
    """The output's steps, tools, expectations and faults, as paths, found here."""
    found: list[tuple] = [("llm", "script", i) for i in range(len(data["llm"]["script"]))]
    found += [("tools", name) for name in data.get("tools", {})]
    for key, value in (data.get("expect") or {}).items():
        if key in ("tool_calls", "final") and isinstance(value, dict):
            found += [("expect", key, sub) for sub in value]
        else:
            found.append(("expect", key))
    for name, spec in data.get("tools", {}).items():
        found += [("tools", name, "errors", k) for k in range(len(spec.get("errors", [])))]
    return found


def _without(data: dict, path: tuple) -> dict:
    out = copy.deepcopy(data)
    node = out
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return out


def _removable(text: str, at: Path, failure: Failure) -> list[tuple]:
    """The elements whose removal alone still fails the same way (none, if 1-minimal)."""
    data = yaml.safe_load(text)
    found = []
    for path in _elements(data):
        try:
            candidate = load_scenario_text(yaml.safe_dump(_without(data, path)), at)
        except Exception:
            continue  # does not load: it cannot fail the same way
        if Failure.of(run_scenario(candidate)) == failure:
            found.append(path)
    return found


def test_a_long_scenario_shrinks_to_one_that_fails_the_same_way_70_percent_smaller(project):
    source = _write(project, "claim", LONG)
    out = project / "scenarios" / "claim-small.scenario.yaml"
    result = shrink(source, output=out)
    written = result.write()
    assert written == [out]
    text = out.read_text(encoding="utf-8")

    original = _failure(LONG, source)
    assert original.failing == ("never_called", "tool_calls.forbid")
    assert _failure(text, out) == original  # the same failing paths and termination
    assert result.before.total == 11 + 6 + 5 + 1
    assert result.after.total <= 0.3 * result.before.total, result.after
    data = yaml.safe_load(text)
    assert data["llm"]["script"][0].get("tool_calls") == [{"refund": {"order": 7, "amount": 60}}]
    assert list(data["tools"]) == ["refund"]
    assert _removable(text, out, original) == []  # 1-minimal
    assert verify(result, runs=3)


def test_the_output_keeps_the_comments_of_what_is_left_and_says_what_was_removed(project):
    result = shrink(_write(project, "claim", LONG))
    text = result.text
    header, _, body = text.partition("# yaml-language-server")
    assert "Shrunk by `harness shrink` from scenarios/claim.scenario.yaml" in header
    assert "failing: never_called, tool_calls.forbid" in header
    assert "Removed: " in header and "9 script steps" in header and "5 tools" in header
    assert f"{result.reruns} reruns" in header and "1-minimal" in header
    # The comments of the elements kept stay, those of the removed ones go.
    assert "# the guard breaks here: a refund without approval" in body
    assert "# no refund without approval" in body
    assert "# the claim is looked into" not in body
    assert "an unrelated fault" not in body


def test_shrinking_is_deterministic(project):
    source = _write(project, "claim", LONG)
    first, second = shrink(source), shrink(source)
    assert first.text == second.text
    assert first.reruns == second.reruns


def test_keep_chooses_which_failing_expectation_to_keep(project):
    source = _write(project, "claim", LONG)
    result = shrink(source, keep=["never_called"])
    data = yaml.safe_load(result.text)
    assert data["expect"] == {"never_called": ["refund"]}
    assert result.failure.failing == ("never_called",)
    assert verify(result)
    with pytest.raises(ShrinkError, match=r"--keep final\.contains: that expectation does not"):
        shrink(source, keep=["final.contains"])


def test_a_passing_scenario_is_refused_in_one_line(project, capsys):
    path = _write(project, "fine", "input: hi\nllm: {script: [{content: hello}]}\n")
    assert cli.main(["shrink", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "passes: there is no failure to shrink" in err


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("name: [\n", "YAML"),
        ("input: hi\nllm: {script: [{content: hi}]}\nexpect: {final: {contain: x}}\n", "contain"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(project, capsys, text, said):
    path = _write(project, "bad", text)
    assert cli.main(["shrink", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and said in err


def test_a_missing_file_and_a_missing_output_folder_are_bad_input(project, capsys):
    assert cli.main(["shrink", str(project / "nope.scenario.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err
    source = _write(project, "claim", LONG)
    assert cli.main(["shrink", str(source), "-o", str(project / "no" / "x.scenario.yaml")]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_the_command_writes_the_output_and_says_how_much_smaller(project, capsys):
    source = _write(project, "claim", LONG)
    out = project / "scenarios" / "small.scenario.yaml"
    assert cli.main(["shrink", str(source), "-o", str(out), "--keep", "tool_calls.forbid"]) == 0
    err = capsys.readouterr().err
    assert "wrote" in err and "smaller" in err and "reruns" in err
    data = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert data["expect"] == {
        "tool_calls": {"forbid": [{"name": "refund", "args": {"amount": 60}}]}
    }
    # Without -o the scenario goes to stdout.
    assert cli.main(["shrink", str(source)]) == 0
    assert "name: warranty-claim" in capsys.readouterr().out


def test_ctrl_c_gives_the_smallest_failing_scenario_found_so_far(project):
    source = _write(project, "claim", LONG)
    seen = []

    def stop(progress):  # Ctrl-C once something went
        seen.append(progress.reruns)
        if progress.size.total < progress.start.total:
            raise KeyboardInterrupt

    with pytest.raises(ShrinkInterrupted) as stopped:
        shrink(source, on_progress=stop)
    partial = stopped.value.result
    assert not partial.minimal
    assert "Interrupted after" in partial.text and "not 1-minimal" in partial.text
    assert partial.after.total < partial.before.total
    assert verify(partial)


def test_ctrl_c_in_the_command_writes_what_was_found_and_exits_130(project, capsys, monkeypatch):
    source = _write(project, "claim", LONG)
    out = project / "scenarios" / "partial.scenario.yaml"
    from harness.shrink import _engine as engine

    real = engine.Oracle.holds
    calls = []

    def interrupted(self, draft):  # Ctrl-C arrives during the fifth question
        calls.append(1)
        if len(calls) == 5:
            raise KeyboardInterrupt
        return real(self, draft)

    monkeypatch.setattr(engine.Oracle, "holds", interrupted)
    assert cli.main(["shrink", str(source), "-o", str(out)]) == 130
    assert "interrupted" in capsys.readouterr().err
    assert "not 1-minimal" in out.read_text(encoding="utf-8")


def test_turns_removed_renumber_the_failing_turn(project):
    text = """\
turns:
  - user: Weather in Paris?
    expect: {final: {contains: Paris}}
  - user: And in Rome?
    expect: {tool_calls: {include: [{name: get_weather, args: {city: Milan}}]}}
  - user: Which is warmer?
    expect: {final: {contains: Rome}}
tools:
  get_weather: {parameters: {city: str}, returns: "sunny in {{ args.city }}"}
llm:
  script:
    - tool_calls: [{get_weather: {city: Paris}}]
    - content: Paris is sunny.
    - tool_calls: [{get_weather: {city: Rome}}]
    - content: Rome is sunny.
    - content: Rome, by a little.
"""
    result = shrink(_write(project, "turns", text))
    assert result.failure.failing == ("turns.2.tool_calls.include",)
    data = yaml.safe_load(result.text)
    assert len(data["turns"]) == 1  # the failing turn, now the first
    assert "failing: turns.1.tool_calls.include" in result.text
    assert verify(result)


def test_a_sub_agents_time_that_breaks_a_limit_keeps_the_sub_agent(project):
    text = """\
input: What do the notes say about the Rhine?
tools:
  researcher: {agent: researcher}
  clock: {returns: noon}
agents:
  researcher:
    tools:
      search: {parameters: {query: str}, returns: "notes on {{ args.query }}"}
      unused: {returns: nothing}
    llm:
      script:
        - tool_calls: [{search: {query: Rhine}}]
          latency: 0.4
        - content: It is long.
          latency: 0.3
        - content: never asked
llm:
  script:
    - tool_calls: [{clock: {}}]
    - tool_calls: [{researcher: {task: the Rhine}}]
    - content: It is long.
expect:
  termination: completed
  llm_calls: 3
  sim_time: {max: 0.5}
"""
    result = shrink(_write(project, "agents", text))
    assert result.failure.failing == ("sim_time",)
    data = yaml.safe_load(result.text)
    assert list(data["tools"]) == ["researcher"]
    assert list(data["agents"]["researcher"].get("tools", {})) in ([], ["search"])
    assert len(data["agents"]["researcher"]["llm"]["script"]) <= 2
    assert verify(result)


def test_faults_are_weakened(project):
    text = """\
input: go
tools:
  fetch:
    returns: page
    errors: [{raise: down, type: ConnectionError}]
llm:
  script:
    - tool_calls: [{fetch: {}}]
    - content: done
expect:
  # known to fail while the error reaches the model: so the scenario fails because it does
  requests: [{call: 2, tool_results_include: [down]}]
  failing: [requests]
"""
    result = shrink(_write(project, "faults", text))
    # The text of the first call's error is what matters: on every call became the
    # first call, and the ConnectionError a plain error.
    assert yaml.safe_load(result.text)["tools"]["fetch"]["errors"] == [
        {"raise": "down", "on_call": 1}
    ]
    assert result.changes["faults weakened"] == 2
    assert verify(result)


def test_a_repeated_step_is_repeated_as_few_times_as_the_failure_needs(project):
    text = """\
input: go
agent: {stagnation: {window: 0}}
tools:
  poll: {returns: pending}
llm:
  script:
    - tool_calls: [{poll: {}}]
      repeat: 12
    - content: done
expect:
  tool_calls: {count: {poll: {max: 2}}}
"""
    result = shrink(_write(project, "repeat", text))
    step = yaml.safe_load(result.text)["llm"]["script"][0]
    assert step.get("repeat", 1) == 3
    assert verify(result)


def test_ddmin_keeps_exactly_what_the_test_needs():
    for needed in [set(), {0}, {3}, {1, 7}, {0, 5, 9}, set(range(10))]:

        def holds(kept, needed=needed):
            return needed <= set(kept)

        assert ddmin(list(range(10)), holds) == sorted(needed)
    # Equal items are still items of their own.
    assert ddmin(["a", "a", "b"], lambda kept: kept.count("a") == 2) == ["a", "a"]
