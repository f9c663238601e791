"""pydantic's validation errors of a scenario file as issues for people: the real YAML path
of each, its line, and a message with a hint (``did you mean``, how to quote)."""

from __future__ import annotations

import difflib
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from harness.llm.script import ScriptToolCall
from harness.scenario.hints import dedent_hint
from harness.scenario.schema import Scenario
from harness.scenario.yamlsource import Located, dotted

__all__ = ["Issue", "validation_issues"]

# (file, line or None, dotted field path, message): one problem of a scenario file.
Issue = tuple[str, int | None, str, str]


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
        # The key itself is a known word when it sits at the wrong level: no "did you
        # mean 'final'?" for 'final' (the indentation hint says where it belongs).
        hint = [w for w in difflib.get_close_matches(key, _WORDS, n=2) if w != key][:1]
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
    grouped: dict[tuple[str | int, ...], list[str]] = {}
    odd = _odd_calls(located.data)
    for err in exc.errors(include_url=False):
        keep_last = err["type"] in ("missing", "extra_forbidden")
        path = _real_path(located.data, tuple(err["loc"]), keep_last)
        message = _message(err)
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
        line = located.line_of(path)
        # Several messages at one place come from the branches of a union: any would do.
        issues.append((located.file, line, dotted(path), " or ".join(messages)))
    return issues
