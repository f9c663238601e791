"""Loading a scenario file: YAML -> schema -> checks, with errors for people.

Every problem is reported as ``path:line: field.path: message`` at the line of the
offending node, all of them at once, and nothing is left to fail later: templates are
compiled, planners and providers looked up, ``use:`` targets imported when the file
loads.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from harness.errors import HarnessError, ScenarioError
from harness.messages import Conversation
from harness.plugins import PluginError, get_plugins
from harness.scenario.schema import Scenario, scenario_name
from harness.scenario.stubs import SpecError, build_tool
from harness.scenario.yamlsource import Located, dotted, load_yaml
from harness.tools import Tool

__all__ = [
    "SUFFIX",
    "build_tools",
    "display_path",
    "load_scenario",
    "scenario_name",
    "starting_conversation",
]

SUFFIX = ".scenario.yaml"

Issue = tuple[str, int | None, str, str]


def display_path(path: Path) -> str:
    """The path as a person wants to read it: relative to cwd when it is below it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def load_scenario(path: str | Path) -> Scenario:
    """Load and check one scenario file; ScenarioError lists every problem with its line."""
    path = Path(path)
    shown = display_path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError.single(shown, None, "", f"cannot read the file: {exc}") from None
    return load_scenario_text(text, path, shown)


def load_scenario_text(text: str, path: Path, shown: str | None = None) -> Scenario:
    """Load a scenario from ``text`` as if it were the file ``path``."""
    shown = shown or display_path(path)
    located = load_yaml(text, shown)
    if not isinstance(located.data, dict):
        raise located.error((), "a scenario file is a mapping (name:, llm:, expect: ...)")
    try:
        scenario = Scenario.model_validate(located.data)
    except ValidationError as exc:
        raise ScenarioError(_validation_issues(exc, located)) from None
    scenario.bind(path.resolve(), located)
    issues = _check(scenario, located)
    if issues:
        raise ScenarioError(issues)
    return scenario


# -- pydantic errors -> issues -------------------------------------------------------------


def _vocabulary(model: type[BaseModel], seen: set[type] | None = None) -> set[str]:
    """Every key the schema knows, for "did you mean" hints."""
    seen = seen if seen is not None else set()
    if model in seen:
        return set()
    seen.add(model)
    words: set[str] = set()
    for name, field in model.model_fields.items():
        words.add(field.alias or name)
        for sub in _models_in(field.annotation):
            words |= _vocabulary(sub, seen)
    return words


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    out = []
    for arg in getattr(annotation, "__args__", ()) or ():
        out.extend(_models_in(arg))
    return out


_WORDS = sorted(_vocabulary(Scenario))

_MESSAGES = (
    (
        re.compile(r"^Input should be a valid dictionary( or instance of \w+)?$"),
        "expected a mapping",
    ),
    (re.compile(r"^Input should be a valid list$"), "expected a list"),
    (re.compile(r"^Field required$"), "required"),
    (re.compile(r"^(Value|Assertion) error, "), ""),
    (re.compile(r"^Input should be "), "expected "),
)


def _message(err: dict[str, Any]) -> str:
    if err["type"] == "extra_forbidden":
        key = str(err["loc"][-1])
        hint = difflib.get_close_matches(key, _WORDS, n=1)
        return f"unknown key {key!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "")
    msg = str(err["msg"])
    for pattern, replacement in _MESSAGES:
        msg = pattern.sub(replacement, msg)
    return msg


def _real_path(data: Any, loc: tuple[Any, ...], keep_last: bool) -> tuple[str | int, ...]:
    """Drop pydantic's union-branch tags from ``loc``: keep only steps present in the data."""
    node, out = data, []
    for i, part in enumerate(loc):
        if isinstance(node, dict) and part in node:
            node = node[part]
            out.append(part)
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
            out.append(part)
        elif keep_last and i == len(loc) - 1:
            out.append(part)
    return tuple(out)


def _validation_issues(exc: ValidationError, located: Located) -> list[Issue]:
    grouped: dict[tuple[str | int, ...], list[str]] = {}
    for err in exc.errors(include_url=False):
        keep_last = err["type"] in ("missing", "extra_forbidden")
        path = _real_path(located.data, tuple(err["loc"]), keep_last)
        message = _message(err)
        messages = grouped.setdefault(path, [])
        if message not in messages:
            messages.append(message)
    issues = []
    for path, messages in grouped.items():
        line = located.line_of(path)
        # Several messages at one place come from the branches of a union: any would do.
        issues.append((located.file, line, dotted(path), " or ".join(messages)))
    return issues


# -- checks beyond the schema -----------------------------------------------------------------


def build_tools(scenario: Scenario, located: Located | None = None) -> dict[str, Tool]:
    """The scenario's tools (stubs and real ones); SpecError / ScenarioError on problems."""
    issues: list[Issue] = []
    tools = _build_tools(scenario, located, issues)
    if issues:
        raise ScenarioError(issues)
    return tools


def _build_tools(
    scenario: Scenario, located: Located | None, issues: list[Issue]
) -> dict[str, Tool]:
    file = located.file if located else "<scenario>"
    root = scenario.root
    plugins = get_plugins()
    seed = scenario.seed if scenario.seed is not None else scenario.display_name

    def where_for(name: str) -> Any:
        def where(field: tuple[Any, ...]) -> str:
            path = ("tools", name, *field)
            line = located.line_of(path) if located else None
            return ScenarioError.format_issue(file, line, dotted(path), "").rstrip(": ")

        return where

    tools: dict[str, Tool] = {}
    for name, spec in scenario.tools.items():
        try:
            tools[name] = build_tool(
                name, spec, seed=seed, root=root, registered=plugins.tool, where=where_for(name)
            )
        except SpecError as exc:
            path = ("tools", name, *exc.field)
            line = located.line_of(path) if located else None
            if line is not None and exc.extra_line:
                line += exc.extra_line
            issues.append((file, line, dotted(path), exc.message))
    return tools


def _check(scenario: Scenario, located: Located) -> list[Issue]:
    issues: list[Issue] = []
    file = located.file

    def issue(path: tuple[str | int, ...], message: str) -> None:
        issues.append((file, located.line_of(path), dotted(path), message))

    plugins = get_plugins()
    try:
        plugins.planner_factory(scenario.agent.planner)
    except PluginError as exc:
        issue(("agent", "planner"), str(exc))
    try:
        factory = plugins.llm_factory(scenario.llm.provider)
    except PluginError as exc:
        issue(("llm", "provider"), str(exc))
    else:
        # Build the source once now, so that a config it rejects (say, openai without a
        # model) is a load error with a line, not a failure at run time. Factories do no
        # I/O: sessions and clients open at the first request.
        try:
            factory(scenario.llm)
        except HarnessError as exc:
            issue(("llm",), str(exc))
        except Exception:  # a plugin's own bug surfaces when the scenario runs (exit 3)
            pass
    if scenario.llm.provider == "scripted":
        for key in ("cassette", "model"):
            if getattr(scenario.llm, key) is not None:
                issue(("llm", key), f"{key} is for recorded models: add `provider: openai`")
    elif scenario.llm.script:
        issue(("llm", "script"), f"provider {scenario.llm.provider!r} does not use a script")

    tools = _build_tools(scenario, located, issues)
    scenario.bind_tools(tools)

    known = sorted(scenario.tools)
    for i, step in enumerate(scenario.llm.script):
        if step.unknown_tools:
            continue
        for j, call in enumerate(step.tool_calls):
            if call.name not in scenario.tools:
                hint = difflib.get_close_matches(call.name, known, n=1)
                issue(
                    ("llm", "script", i, "tool_calls", j),
                    f"calls tool {call.name!r}, which the scenario does not define"
                    + (f" (did you mean {hint[0]!r}?)" if hint else "")
                    + f"; tools: {', '.join(known) or 'none'}. Add it under tools:, fix the "
                    "name, or set `unknown_tools: true` on the step if the model should "
                    "call a tool that does not exist",
                )

    if scenario.expect is not None and scenario.expect.model_extra:
        registry = plugins.registry("expectations")
        for key in scenario.expect.model_extra:
            if key not in registry and not any(k.startswith(f"{key}.") for k in registry):
                top = sorted({k.split(".")[0] for k in registry})
                hint = difflib.get_close_matches(key, top, n=1)
                issue(
                    ("expect", key),
                    f"unknown expectation {key!r}"
                    + (f" (did you mean {hint[0]!r}?)" if hint else "")
                    + f"; known: {', '.join(top)}",
                )

    try:
        history = starting_conversation(scenario)
    except HarnessError as exc:
        issue(("history",), str(exc))
    else:
        if history is not None:
            scenario.bind_history(history)
    return issues


def starting_conversation(scenario: Scenario) -> Conversation | None:
    """The conversation ``history:`` gives (None without one); HarnessError when unusable."""
    if isinstance(scenario.history, str):
        return load_history(scenario.resolve(scenario.history))
    if isinstance(scenario.history, list):
        try:
            return Conversation.from_openai(scenario.history)
        except (ValueError, TypeError, ValidationError) as exc:
            raise HarnessError(f"not a list of OpenAI messages: {exc}") from None
    return None


def load_history(path: Path) -> Conversation:
    """A saved conversation: Conversation.save() JSON, or a JSON list of OpenAI messages."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise HarnessError(f"cannot read history file {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise HarnessError(f"history file {path} is not JSON: {exc}") from None
    try:
        if isinstance(data, list):
            return Conversation.from_openai(data)
        return Conversation.model_validate(data)
    except (ValueError, TypeError, ValidationError) as exc:
        raise HarnessError(
            f"history file {path} is neither a saved Conversation nor a list of OpenAI "
            f"messages: {exc}"
        ) from None
