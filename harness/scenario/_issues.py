"""pydantic's validation errors of a scenario file as issues for people: the real YAML path
of each, its line, and a message with a hint (``did you mean``, how to quote)."""

from __future__ import annotations

import difflib
import json
import re
import shlex
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from harness._errors import validation_message
from harness.llm._script import ScriptToolCall
from harness.scenario._hints import dedent_hint
from harness.scenario._schema import Scenario
from harness.scenario._yamlsource import Located, dotted

__all__ = ["Issue", "IssueSink", "validation_issues"]

# (file, line or None, dotted field path, message): one problem of a scenario file.
Issue = tuple[str, int | None, str, str]
# What a check beyond the schema is given to report a problem: issue(field path, message);
# the loader makes each call an Issue, with the file and the field's line.
IssueSink = Callable[[tuple[str | int, ...], str], None]


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


def _message(err: Mapping[str, Any], spelled: str | None = None) -> str:
    if err["type"] == "extra_forbidden":
        name = str(err["loc"][-1])
        # The key itself is a known word when it sits at the wrong level: no "did you
        # mean 'final'?" for 'final' (the indentation hint says where it belongs).
        hint = [w for w in difflib.get_close_matches(name, _WORDS, n=2) if w != name][:1]
        return f"unknown key {name!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "")
    message = validation_message(err)
    value = err.get("input")
    if err["type"] in ("int_type", "float_type") and isinstance(value, str):
        # Values are read as written: `status: "429"` is a string, not a number.
        number = re.fullmatch(r"\s*-?\d+(\.\d+)?\s*", value)
        fix = f": write {value.strip()} without quotes" if number else ""
        message += f", got the string {value!r}{fix}"
    key = err["loc"][-1] if err["loc"] else None
    if (
        err["type"] == "string_type"
        and isinstance(value, int | float)
        and not isinstance(value, bool)  # `true` is no number to quote
        and isinstance(key, str)
    ):
        message += f', got {value!r}: quote it to make it text ({key}: "{value}")'
    if err["type"] == "string_type" and isinstance(value, bool) and isinstance(key, str):
        # YAML 1.1 reads an unquoted yes/no/on/off/true/false as a boolean.
        word = spelled or str(value).lower()
        message += (
            f", got the boolean {str(value).lower()} (YAML reads an unquoted {word} as one): "
            f'quote it to make it text ({key}: "{word}")'
        )
    if err["type"] == "list_type" and isinstance(key, str):
        if isinstance(value, str):
            message += f": write {key}: [{_flow_item(value)}]"
        elif isinstance(value, dict):
            message += f": put the mapping in a list, {key}: [{{...}}]"
        elif isinstance(value, int | float) and not isinstance(value, bool):
            # `contains: 72`: a number where text (or a list of texts) goes.
            quoted = f'"{value}"'
            example = quoted if key == "contains" else f"[{quoted}]"
            if key == "contains":
                message = "expected a text or a list of texts"
            message = (
                f"{message}, got the number {value!r}: quote it to make it text ({key}: {example})"
            )
    return message


def _flow_item(text: str) -> str:
    return text if re.fullmatch(r"[\w./@+-]+", text) else json.dumps(text)


def _form(path: tuple[str | int, ...], value: Any) -> str | None:
    """The right form of a value of the wrong type at ``path``, with an example.

    pydantic would say what it expected in its terms ("expected a mapping or expected
    'timeout'"); these say what to write.
    """
    if path == ("target",) and not isinstance(value, dict):
        if isinstance(value, list):
            example = f"command: [{', '.join(_flow_item(str(v)) for v in value)}]"
        else:
            example = f"python: {value if isinstance(value, str) and ':' in value else 'm:fn'}"
        return (
            f"expected a mapping naming the target's kind: write target: {{{example}}} "
            "(python: module:callable, or command: [argv] for a program)"
        )
    if path == ("target", "command") and isinstance(value, str):
        try:
            argv = shlex.split(value)
        except ValueError:
            argv = value.split()
        example = ", ".join(_flow_item(a) for a in argv) or "python, agent.py"
        return f"expected a list (the program and its arguments): write command: [{example}]"
    if path == ("target", "command") and value == []:
        return (
            "an empty command: give the program and its arguments, like command: [python, agent.py]"
        )
    if path == ("repeat",) and not isinstance(value, dict):
        shown = f", got {json.dumps(value)}" if not isinstance(value, str) else f", got {value!r}"
        return (
            f"expected a number of runs from 1 to 10000{shown}: write repeat: 5, or "
            "repeat: {runs: 10, min_pass_rate: 0.8} to pass when 80% of the runs pass"
        )
    scripts = (("llm", "script"), ("llm", "judge_script"))
    if path[-4:-2] in scripts and path[-1] == "error" and not isinstance(value, dict):
        status = value if isinstance(value, int) and 400 <= value <= 599 else 429
        return (
            f"expected an HTTP error or timeout: write error: {{status: {status}}} "
            "(and a message: if you like) or error: timeout"
        )
    return None


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


_CALL_KEYS = frozenset(ScriptToolCall.model_fields)


def _odd_calls(data: Any) -> dict[tuple[str | int, ...], str]:
    """Script calls that are neither {tool: args} nor the long form, with what to write.

    pydantic would report each key of ``{a: {}, b: {}}`` as unknown and `name` as
    missing: three messages for one mistake.
    """
    out: dict[tuple[str | int, ...], str] = {}
    llm = data.get("llm") if isinstance(data, dict) else None
    script = llm.get("script") if isinstance(llm, dict) else None
    for i, step in enumerate(script if isinstance(script, list) else []):
        calls = step.get("tool_calls") if isinstance(step, dict) else None
        for j, call in enumerate(calls if isinstance(calls, list) else []):
            if not isinstance(call, dict) or len(call) == 1 or set(call) & _CALL_KEYS:
                continue
            path = ("llm", "script", i, "tool_calls", j)
            if call:
                names = ", ".join(repr(k) for k in call)
                out[path] = (
                    f"one tool per mapping: this call names {names}; write each call as its "
                    "own item, like [{a: {x: 1}}, {b: {}}]"
                )
            else:
                out[path] = "an empty call: write {tool_name: {arguments}}"
    return out


def validation_issues(exc: ValidationError, located: Located) -> list[Issue]:
    """Each problem of a file that failed the schema: its line, field and message."""
    grouped: dict[tuple[str | int, ...], list[str]] = {}
    # Paths whose errors come from a union branch the value did not take at all.
    branches: set[tuple[str | int, ...]] = set()
    odd = _odd_calls(located.data)
    for err in exc.errors(include_url=False):
        keep_last = err["type"] in ("missing", "extra_forbidden")
        path = _real_path(located.data, tuple(err["loc"]), keep_last)
        if len(path) < len(err["loc"]) and not keep_last:
            branches.add(path)
        message = _message(err, located.spelled.get(path))
        if path[:5] in odd:
            path, message = path[:5], odd[path[:5]]
        hint = dedent_hint(Scenario, located.data, path)
        if hint is not None:
            message = f"{message}; {hint}"
        messages = grouped.setdefault(path, [])
        if message not in messages:
            messages.append(message)
    issues = []
    for path, messages in grouped.items():
        # `error: {status: "429"}`: the mapping branch failed inside it, so the other
        # branch's "expected 'timeout'" is noise.
        if path in branches and any(p[: len(path)] == path and p != path for p in grouped):
            continue
        line = located.line_of(path)
        form = _form(path, _value_at(located.data, path))
        # Several messages at one place come from the branches of a union: any would do.
        file = located.file_of(path)
        issues.append((file, line, dotted(path), form or " or ".join(messages)))
    return issues


def _value_at(data: Any, path: tuple[str | int, ...]) -> Any:
    for part in path:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data
