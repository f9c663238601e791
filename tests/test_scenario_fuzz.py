"""Fuzzing the loader: any input loads or raises ScenarioError with a clear message."""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from harness._errors import ScenarioError
from harness.scenario import expand_matrix, run_scenario
from harness.scenario._loader import load_scenario_text

ROOT = Path(__file__).resolve().parent.parent
FAKE_PATH = ROOT / "scenarios" / "fuzz.scenario.yaml"
VALID = [
    yaml.safe_load(p.read_text()) for p in sorted((ROOT / "scenarios").rglob("*.scenario.yaml"))
]
# What YAML counts as line breaks.
YAML_LINES = re.compile("\r\n|[\r\n\x85\u2028\u2029]")
SHOWN = "scenarios/fuzz.scenario.yaml"  # FAKE_PATH as the loader shows it (cwd: the root)
# A field path: dotted keys and indexes; odd keys are quoted (yamlsource.dotted).
FIELD = re.compile(r"^(?:[^.\s'\"][^.]*|'.*'|\".*\")(?:\.(?:[^.\s'\"][^.]*|'.*'|\".*\"))*$")

# HARNESS_FUZZ_EXAMPLES=5000 pytest tests/test_scenario_fuzz.py for a longer hunt.
SETTINGS = settings(
    max_examples=int(os.environ.get("HARNESS_FUZZ_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def load_or_explain(text: str) -> Any:
    """Load ``text``; a ScenarioError must be readable, nothing else may escape."""
    try:
        return load_scenario_text(text, FAKE_PATH)
    except ScenarioError as exc:
        message = str(exc)
        lines = message.splitlines()
        assert lines and len(lines) == len(exc.issues), message
        last_line = len(YAML_LINES.split(text))
        for shown, issue in zip(lines, exc.issues, strict=True):
            path, line, field, problem = issue
            # path:line: field: message — the file, a line inside it, a field path (empty
            # only for a problem of the file as a whole: YAML syntax, not a mapping), and a
            # one-line message.
            assert path == SHOWN, shown
            assert isinstance(line, int) and 1 <= line <= last_line, shown
            assert field == "" or FIELD.match(field), shown
            assert problem.strip() and "\n" not in problem.strip(), shown
            assert shown == f"{SHOWN}:{line}: " + (f"{field}: " if field else "") + problem
            assert "Traceback" not in shown and "errors.pydantic.dev" not in shown
            assert not re.search(r"\bat 0x[0-9a-f]+", shown), shown  # no object reprs
        return None


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**6), max_value=10**6),
    st.floats(),  # .inf and .nan too
    st.sampled_from([float("inf"), float("-inf"), float("nan")]),
    st.text(max_size=20),
    st.sampled_from(["{{ args.x }}", "{% if %}", "str", "int | None", "react", "timeout", "ok"]),
)
documents = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=12), children, max_size=4),
    ),
    max_leaves=25,
)


@SETTINGS
@given(st.text(max_size=300))
def test_random_text(text):
    load_or_explain(text)


@SETTINGS
@given(documents)
def test_random_yaml_documents(document):
    load_or_explain(yaml.safe_dump(document))


KEYS = [
    "name",
    "agent",
    "planner",
    "tools",
    "llm",
    "script",
    "expect",
    "returns",
    "parameters",
    "tool_calls",
    "error",
    "repeat",
    "latency",
    "errors",
    "on_call",
    "use",
    "final",
    "iterations",
]


@st.composite
def mutated(draw) -> dict:
    """A valid example scenario with a few random edits at random depths."""
    doc = copy.deepcopy(draw(st.sampled_from(VALID)))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        node = doc
        # Walk to a random container.
        for _depth in range(draw(st.integers(min_value=0, max_value=4))):
            children = (
                [v for v in node.values() if isinstance(v, dict | list)]
                if isinstance(node, dict)
                else [v for v in node if isinstance(v, dict | list)]
            )
            if not children:
                break
            node = draw(st.sampled_from(children))
        action = draw(st.sampled_from(["replace", "delete", "insert"]))
        if isinstance(node, dict):
            keys = list(node)
            if action == "insert" or not keys:
                node[draw(st.sampled_from(KEYS) | st.text(max_size=8))] = draw(documents)
            elif action == "delete":
                del node[draw(st.sampled_from(keys))]
            else:
                node[draw(st.sampled_from(keys))] = draw(documents)
        elif isinstance(node, list):
            if action == "insert" or not node:
                node.append(draw(documents))
            elif action == "delete":
                node.pop(draw(st.integers(min_value=0, max_value=len(node) - 1)))
            else:
                node[draw(st.integers(min_value=0, max_value=len(node) - 1))] = draw(documents)
    return doc


# Found by this test: a tool name of "\n" put a raw line break into ScenarioError.issues
# (the printed line was cleaned, the structured issue was not).
NEWLINE_TOOL = {
    "name": "x",
    "tools": {"t": {}},
    "llm": {"script": [{"tool_calls": [{"\n": 5}]}, {"tool_calls": [{"\r": 5}]}]},
}


@SETTINGS
@given(mutated())
@example(NEWLINE_TOOL)
def test_mutated_valid_scenarios(document):
    scenario = load_or_explain(yaml.safe_dump(document, sort_keys=False))
    if scenario is None:
        return
    # What loads must also run to a result: bugs in a scenario end a run, never crash it.
    # (A matrix scenario runs as its combinations.)
    for each in expand_matrix(scenario):
        result = run_scenario(each)
        assert result.status in ("passed", "failed", "error")
