"""Meta-tests: every hookspec is documented and exercised by a test.

The registry is the ``hooks`` marker: a test that exercises hooks names them with
``@pytest.mark.hooks("harness_...")``. A test that carries the marker must also name
the hook in its source, so the registry cannot drift away from what the tests do.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

import pytest

from harness import hookspecs

TESTS = Path(__file__).parent


def hookspec_names():
    # pluggy's HookspecMarker("harness") marks each spec with a ``harness_spec`` attribute.
    return sorted(
        name
        for name, fn in vars(hookspecs).items()
        if inspect.isfunction(fn) and hasattr(fn, "harness_spec")
    )


def _test_modules():
    if str(TESTS) not in sys.path:  # pytest's default import mode put it there already
        sys.path.insert(0, str(TESTS))
    for path in sorted(TESTS.glob("test_*.py")):
        yield importlib.import_module(path.stem)


def _test_functions():
    for module in _test_modules():
        for name, obj in vars(module).items():
            if name.startswith("test_") and inspect.isfunction(obj):
                yield f"{module.__name__}::{name}", obj
            elif name.startswith("Test") and inspect.isclass(obj):
                for attr, method in vars(obj).items():
                    if attr.startswith("test_") and inspect.isfunction(method):
                        yield f"{module.__name__}::{name}::{attr}", method


def hook_coverage() -> dict[str, list[str]]:
    """hook name -> the tests whose ``hooks`` marker names it."""
    coverage: dict[str, list[str]] = {}
    for test_id, fn in _test_functions():
        for mark in getattr(fn, "pytestmark", []):
            if mark.name == "hooks":
                for hook in mark.args:
                    coverage.setdefault(hook, []).append(test_id)
    return coverage


def test_the_hookspecs_are_the_ones_of_the_design():
    assert hookspec_names() == sorted(
        [
            "harness_register_planners",
            "harness_register_tools",
            "harness_register_llms",
            "harness_register_expectations",
            "harness_register_targets",
            "harness_register_detectors",
            "harness_register_users",
            "harness_register_wires",
            "harness_action_signature",
            "harness_classify_exception",
            "harness_agent_start",
            "harness_iteration_start",
            "harness_llm_request",
            "harness_llm_chunk",
            "harness_llm_response",
            "harness_action_executed",
            "harness_agent_end",
            "harness_report_sections",
        ]
    )


@pytest.mark.parametrize("name", hookspec_names())
def test_every_hookspec_has_a_docstring(name):
    doc = inspect.getdoc(getattr(hookspecs, name))

    assert doc, f"{name} has no docstring"
    assert len(doc.split()) >= 5, f"{name}'s docstring says too little: {doc!r}"


def test_only_the_decision_hooks_are_firstresult():
    firstresult = [
        name
        for name in hookspec_names()
        if getattr(hookspecs, name).harness_spec["firstresult"]  # type: ignore[attr-defined]
    ]
    assert firstresult == ["harness_action_signature", "harness_classify_exception"]


@pytest.mark.parametrize("name", hookspec_names())
def test_every_hookspec_is_exercised_by_a_test(name):
    covering = hook_coverage().get(name, [])

    assert covering, f"no test is marked @pytest.mark.hooks({name!r}); write one that exercises it"


def test_the_hooks_marker_names_real_hooks_the_test_uses():
    known = set(hookspec_names())
    problems = []
    for test_id, fn in _test_functions():
        source = _body(fn)
        for mark in getattr(fn, "pytestmark", []):
            if mark.name != "hooks":
                continue
            for hook in mark.args:
                if hook not in known:
                    problems.append(f"{test_id}: {hook} is not a hookspec")
                elif hook not in source and not _named_by_helper(fn, hook):
                    problems.append(f"{test_id}: marked {hook} but never names it")
    assert problems == []


def _body(fn) -> str:
    """The source of a test without its decorators (which hold the marker itself)."""
    lines = inspect.getsource(fn).splitlines()
    start = next(
        i for i, line in enumerate(lines) if line.lstrip().startswith(("def ", "async def "))
    )
    return "\n".join(lines[start:])


def _named_by_helper(fn, hook: str) -> bool:
    """The test uses a module-level plugin class (or function) that implements ``hook``."""
    module = sys.modules[fn.__module__]
    for name in fn.__code__.co_names:
        helper = getattr(module, name, None)
        if (inspect.isclass(helper) or inspect.isfunction(helper)) and hook in inspect.getsource(
            helper
        ):
            return True
    return False
