"""The exact messages of bad scenario files a user trial ran into: typos under `target:`,
every problem at once, harness's wording of pydantic's errors, a Python target that cannot
be called as harness calls it, and `harness serve` of a recorded scenario.

Each test asserts the whole message a person reads (file:line, field, what to write).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from harness._errors import ScenarioError
from harness.cli import main
from harness.scenario import load_scenario


@pytest.fixture
def project(tmp_path, monkeypatch, fresh_plugins):
    """A project folder (its own plugins, imports from it) with a module named after the
    test, since imports are cached: ``MODULE`` in a scenario text stands for it."""
    name = "trial_" + "".join(c if c.isalnum() else "_" for c in tmp_path.name)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "t"\n')
    (tmp_path / f"{name}.py").write_text(
        textwrap.dedent(
            """\
            def answer(question):
                return question

            def no_args():
                return "x"

            def two_args(question, extra):
                return "x"

            def with_url(question, base_url):
                return base_url

            async def with_default(question, extra=1):
                return question
            """
        )
    )
    (tmp_path / f"{name}_dep.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.chdir(tmp_path)
    yield tmp_path, name
    for module in (name, f"{name}_dep"):
        sys.modules.pop(module, None)


def problems(folder: Path, module: str, text: str) -> list[str]:
    """The lines of the ScenarioError of ``text`` (MODULE replaced), relative to ``folder``."""
    path = folder / "t.scenario.yaml"
    path.write_text(textwrap.dedent(text).replace("MODULE", module), encoding="utf-8")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    return [
        line.replace(path.as_posix(), "t.scenario.yaml") for line in str(info.value).splitlines()
    ]


SCRIPT = "input: hi\nllm: {script: [{content: hello}]}\n"


# -- 1. typos under target: ---------------------------------------------------------------------


def test_target_option_typos_are_unknown_keys_with_did_you_mean(project):
    folder, module = project
    text = "target: {python: MODULE:answer, timout: 5, on_stagnaton: stop, require: [x]}\n"
    assert problems(folder, module, text + SCRIPT) == [
        "t.scenario.yaml:1: target.timout: unknown key 'timout' (did you mean 'timeout'?)",
        "t.scenario.yaml:1: target.on_stagnaton: unknown key 'on_stagnaton' (did you mean "
        "'on_stagnation'?)",
        "t.scenario.yaml:1: target.require: unknown key 'require' (did you mean 'requires'?)",
    ]


def test_target_option_typos_in_block_form_point_at_their_own_line(project):
    folder, module = project
    text = "target:\n  python: MODULE:answer\n  timout: 5\n  on_stagnaton: stop\n"
    assert problems(folder, module, text + SCRIPT) == [
        "t.scenario.yaml:3: target.timout: unknown key 'timout' (did you mean 'timeout'?)",
        "t.scenario.yaml:4: target.on_stagnaton: unknown key 'on_stagnaton' (did you mean "
        "'on_stagnation'?)",
    ]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (
            "{python: MODULE:answer, command: [ls]}",
            "t.scenario.yaml:1: target: give exactly one target kind (command, python); "
            "given: python, command",
        ),
        (
            "{python: MODULE:answer, flavour: x}",
            "t.scenario.yaml:1: target.flavour: unknown key 'flavour'; a target has one kind "
            "(command, python) and timeout, on_stagnation, requires",
        ),
        (
            "{pyhton: MODULE:answer}",
            "t.scenario.yaml:1: target.pyhton: unknown target kind 'pyhton' (known: command, "
            "python); did you mean 'python'?",
        ),
        (
            "{timeout: 5}",
            "t.scenario.yaml:1: target: give exactly one target kind (command, python); "
            "given: none",
        ),
    ],
)
def test_target_kinds_are_counted_among_registered_kinds_only(project, target, expected):
    folder, module = project
    assert problems(folder, module, f"target: {target}\n" + SCRIPT) == [expected]


# -- 2. every problem at once ------------------------------------------------------------------


def test_target_typos_are_reported_with_the_schemas_errors(project):
    folder, module = project
    text = """\
        target: {python: MODULE:answer, timout: 5}
        input: hi
        llm:
          scrpt:
            - content: hello
        """
    assert problems(folder, module, text) == [
        "t.scenario.yaml:1: target.timout: unknown key 'timout' (did you mean 'timeout'?)",
        "t.scenario.yaml:4: llm.scrpt: unknown key 'scrpt' (did you mean 'script'?)",
    ]


def test_a_target_that_does_not_import_is_reported_with_the_schemas_errors(project):
    folder, module = project
    text = "target: {python: MODULE_nothere:answer}\ninput: hi\nllm: {scrpt: []}\n"
    assert problems(folder, module, text) == [
        f"t.scenario.yaml:1: target.python: cannot import '{module}_nothere': "
        f"ModuleNotFoundError: No module named '{module}_nothere' (modules import from the "
        "project root)",
        "t.scenario.yaml:3: llm.scrpt: unknown key 'scrpt' (did you mean 'script'?)",
    ]


# -- 3. harness's words ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "llm:\n  script:\n    - error: {status: '429', message: slow down}\n",
            "t.scenario.yaml:3: llm.script.0.error.status: expected a valid integer, got the "
            "string '429': write 429 without quotes",
        ),
        (
            "llm:\n  script:\n    - error: 503\n",
            "t.scenario.yaml:3: llm.script.0.error: expected an HTTP error or timeout: write "
            "error: {status: 503} (and a message: if you like) or error: timeout",
        ),
        (
            "llm:\n  script:\n    - content: hi\n      repeat: 0\n",
            "t.scenario.yaml:4: llm.script.0.repeat: expected 1 or more, got 0",
        ),
        (
            "repeat: 20000\n",
            "t.scenario.yaml:1: repeat: expected a number of runs from 1 to 10000, got 20000: "
            "write repeat: 5, or repeat: {runs: 10, min_pass_rate: 0.8} to pass when 80% of "
            "the runs pass",
        ),
        (
            "input: 42\n",
            "t.scenario.yaml:1: input: expected a valid string, got 42: quote it to make it "
            'text (input: "42")',
        ),
        # `true` is a boolean: the hint quotes it as written, never as Python's "True".
        (
            "input: true\n",
            "t.scenario.yaml:1: input: expected a valid string, got the boolean true (YAML "
            'reads an unquoted true as one): quote it to make it text (input: "true")',
        ),
        ("tags: smoke\n", "t.scenario.yaml:1: tags: expected a list: write tags: [smoke]"),
        (
            "target: {command: []}\ninput: hi\n",
            "t.scenario.yaml:1: target.command: an empty command: give the program and its "
            "arguments, like command: [python, agent.py]",
        ),
        (
            "target: {command: 'python my agent.py'}\ninput: hi\n",
            "t.scenario.yaml:1: target.command: expected a list (the program and its "
            "arguments): write command: [python, my, agent.py]",
        ),
        (
            "target: myagents.lg:answer\ninput: hi\n",
            "t.scenario.yaml:1: target: expected a mapping naming the target's kind: write "
            "target: {python: myagents.lg:answer} (python: module:callable, or command: [argv] "
            "for a program)",
        ),
    ],
)
def test_schema_errors_say_what_to_write_in_one_line(project, text, expected):
    folder, module = project
    assert problems(folder, module, text) == [expected]


@pytest.mark.parametrize("loader", ["SafeLoader", "CSafeLoader"])
def test_a_line_indented_under_a_complete_value_gets_the_indentation_hint(
    project, monkeypatch, loader
):
    import yaml

    from harness.scenario import _yamlsource as yamlsource

    if not hasattr(yaml, loader):
        pytest.skip(f"PyYAML without {loader}")
    # Each parser words the error its own way (docs/scenarios.md promises the hint).
    monkeypatch.setattr(yamlsource, "_loader_class", lambda: getattr(yaml, loader))
    folder, module = project
    text = "input: hi\nexpect:\n  termination: completed\nfinal: {contains: x}\n  timeout: 5\n"
    (line,) = problems(folder, module, text)
    assert line.startswith("t.scenario.yaml:5: YAML syntax error at column 3: ")
    assert line.endswith(
        "; this line is indented more than line 4 above it, whose value is complete; give "
        "keys of one mapping the same indentation (indent it under the key it belongs to, "
        "or not at all)"
    )


@pytest.mark.parametrize(
    ("python", "expected"),
    [
        (
            "myagents/lg.py:answer",
            "'myagents/lg.py:answer': name the module with dots, as Python imports it, not as "
            "a file: write myagents.lg:answer",
        ),
        (
            "MODULE_dep:answer",
            "cannot import 'MODULE_dep': it imports 'no_such_dependency_xyz', which is not "
            "installed: install it, or add it to the target's requires: "
            "[no_such_dependency_xyz] to skip the scenario where it is missing",
        ),
        (
            "MODULE:no_args",
            "'MODULE:no_args' cannot be called as fn(input): its signature is () (too many "
            "positional arguments); take the input as its one required parameter",
        ),
        (
            "MODULE:two_args",
            "'MODULE:two_args' cannot be called as fn(input): its signature is (question, "
            "extra) (missing a required argument: 'extra'); take the input as its one "
            "required parameter",
        ),
    ],
)
def test_python_targets_that_cannot_run_are_load_errors_at_the_target(project, python, expected):
    folder, module = project
    text = f"target:\n  python: {python}\n" + SCRIPT
    expected = expected.replace("MODULE", module)
    assert problems(folder, module, text) == [f"t.scenario.yaml:2: target.python: {expected}"]


@pytest.mark.parametrize("fn", ["answer", "with_url", "with_default"])
def test_python_targets_called_with_the_input_load(project, fn):
    folder, module = project
    path = folder / "t.scenario.yaml"
    path.write_text(f"target: {{python: {module}:{fn}}}\n" + SCRIPT, encoding="utf-8")
    assert main(["validate", str(path)]) == 0


# -- 4. harness serve of a recorded scenario ----------------------------------------------------


def test_serving_a_recorded_scenario_names_its_cassette(project, capsys):
    folder, module = project
    (folder / "scenarios").mkdir()
    (folder / "cassettes").mkdir()
    (folder / "cassettes" / "rec.yaml").write_text("interactions: []\nversion: 1\n")
    (folder / "scenarios" / "rec.scenario.yaml").write_text(
        f"target: {{python: {module}:answer}}\ninput: hi\n"
        "llm: {provider: openai, model: gpt-4o-mini}\n"
    )
    (folder / "scenarios" / "new.scenario.yaml").write_text(
        f"target: {{python: {module}:answer}}\ninput: hi\n"
        "llm: {provider: openai, model: gpt-4o-mini, cassette: ../cassettes/new.yaml}\n"
    )

    served = main(["serve", "scenarios/rec.scenario.yaml"])
    recorded = capsys.readouterr().err
    not_yet = main(["serve", "scenarios/new.scenario.yaml"])

    assert served == not_yet == 2
    assert recorded == (
        "harness serve: scenarios/rec.scenario.yaml has no llm.script to serve; its model is "
        "recorded: serve its cassette with `harness serve --cassette cassettes/rec.yaml`\n"
    )
    assert capsys.readouterr().err == (
        "harness serve: scenarios/new.scenario.yaml has no llm.script to serve; its model is "
        "recorded, but not yet (`harness record scenarios/new.scenario.yaml` writes "
        "cassettes/new.yaml)\n"
    )
