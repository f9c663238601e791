"""Templates in stub results: Jinja2 (sandboxed) over ``args``, ``call``, ``faker`` (and
``case``, in a scenario with cases), compiled once per file and checked for unknown names
and arguments, and Faker seeded per call."""

from __future__ import annotations

import difflib
import functools
import hashlib
from dataclasses import dataclass
from typing import Any

from jinja2 import TemplateSyntaxError, nodes
from jinja2.meta import find_undeclared_variables

from harness.scenario._params import SpecError
from harness.scenario._template_bounds import bound, bounded_environment

__all__ = [
    "TEMPLATE_MARKERS",
    "TEMPLATE_NAMES",
    "Template",
    "case_fields",
    "compile_value",
    "faker_instance",
    "parse_template",
    "seed_for",
    "template_line",
    "uses_faker",
]

_ENV = bounded_environment()
# A string holding one of these is a Jinja template; any other string is plain text.
TEMPLATE_MARKERS = ("{{", "{%", "{#")
# The names a template sees (with the environment's globals: range, dict, ...).
TEMPLATE_NAMES = ("args", "call", "faker")
_KNOWN_NAMES = frozenset(TEMPLATE_NAMES) | frozenset(_ENV.globals)
# What a mapping answers to as an attribute: `args.get('city')` reads no argument `get`.
_DICT_METHODS = frozenset(dir(dict))


@dataclass(frozen=True)
class Template:
    """A compiled template string of a stub's result, and where it is in the file."""

    template: Any  # jinja2.Template
    field: tuple[str | int, ...]
    uses_faker: bool


@dataclass(frozen=True)
class _Compiled:
    template: Any  # jinja2.Template
    # Names the template reads but never sets, with the line of their first use.
    free: dict[str, int]
    # The keys read from each free name as `name.key`, `name['key']` or `name.get('key')`,
    # with the line of their first use: {"args": {"city": 1}}.
    keys: dict[str, dict[str, int]]


@functools.lru_cache(maxsize=4096)
def _template(source: str) -> _Compiled:
    # Compiled templates are immutable and reusable: a suite repeating the same
    # templates compiles each once. Parsed once, for the names and the code.
    tree = _ENV.parse(source)
    free = find_undeclared_variables(tree)
    lines: dict[str, int] = {}
    for node in tree.find_all(nodes.Name):
        if node.name in free:
            lines.setdefault(node.name, node.lineno)
    return _Compiled(_ENV.from_string(bound(tree)), lines, _keys_read(tree, free))


def _keys_read(tree: nodes.Template, free: set[str]) -> dict[str, dict[str, int]]:
    keys: dict[str, dict[str, int]] = {}

    def of(node: nodes.Node) -> str | None:
        return node.name if isinstance(node, nodes.Name) and node.name in free else None

    for node in tree.find_all((nodes.Getattr, nodes.Getitem, nodes.Call)):
        name, key = None, None
        if isinstance(node, nodes.Getattr) and node.attr not in _DICT_METHODS:
            name, key = of(node.node), node.attr
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
            name, key = of(node.node), node.arg.value
        elif (
            isinstance(node, nodes.Call)
            and isinstance(node.node, nodes.Getattr)
            and node.node.attr == "get"
            and node.args
            and isinstance(node.args[0], nodes.Const)
        ):
            name, key = of(node.node.node), node.args[0].value
        if name is not None and isinstance(key, str):
            keys.setdefault(name, {}).setdefault(key, node.lineno)
    return keys


def parse_template(source: str) -> _Compiled | None:
    """The compiled template of a text (its free names in ``.free``), None when it does
    not parse."""
    try:
        return _template(source)
    except TemplateSyntaxError:
        return None


def case_fields(source: str) -> list[str]:
    """The case keys a text reads (``{{ case.city }}``), in order; none when it does not
    parse as a template."""
    compiled = parse_template(source) if any(m in source for m in TEMPLATE_MARKERS) else None
    return list(compiled.keys.get("case", {})) if compiled is not None else []


def compile_value(
    value: Any,
    field: tuple[str | int, ...],
    *,
    arguments: frozenset[str] | None = None,
    case: dict[str, Any] | None = None,
) -> Any:
    """Compile every templated string in a (nested) value; plain strings stay as they are.

    ``arguments``: the tool's argument names, when known (``args.KEY`` must name one);
    ``case``: the case's keys, in a scenario with cases (``case.KEY`` must name one).
    """
    if isinstance(value, str):
        if not any(marker in value for marker in TEMPLATE_MARKERS):
            return value
        try:
            compiled = _template(value)
        except TemplateSyntaxError as exc:
            raise SpecError(
                field,
                f"template does not parse: {exc.message} (template line {exc.lineno})",
                line_in_text=exc.lineno or 1,
            ) from None
        _check_names(compiled, field, case)
        _check_keys(compiled, field, "args", arguments, "argument")
        _check_keys(compiled, field, "case", None if case is None else frozenset(case), "case key")
        return Template(compiled.template, field, "faker" in compiled.free)
    if isinstance(value, dict):
        return {
            k: compile_value(v, (*field, k), arguments=arguments, case=case)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [
            compile_value(v, (*field, i), arguments=arguments, case=case)
            for i, v in enumerate(value)
        ]
    return value


def _check_names(
    compiled: _Compiled, field: tuple[str | int, ...], case: dict[str, Any] | None
) -> None:
    known = _KNOWN_NAMES | ({"case"} if case is not None else set())
    unknown = {n: line for n, line in compiled.free.items() if n not in known}
    if not unknown:
        return
    names = ", ".join(repr(n) for n in unknown)
    seen = ", ".join([*TEMPLATE_NAMES, *(["case"] if case is not None else [])])
    why = (
        "; case is known in a scenario with cases: (docs/scenarios.md#cases)"
        if "case" in unknown
        else ""
    )
    raise SpecError(
        field,
        f"unknown name{'s' if len(unknown) > 1 else ''} {names} (templates see {seen}){why}",
        line_in_text=min(unknown.values()),
    )


def _check_keys(
    compiled: _Compiled,
    field: tuple[str | int, ...],
    name: str,
    known: frozenset[str] | None,
    what: str,
) -> None:
    """``name.KEY`` for a KEY ``known`` does not hold: it would fail when rendered."""
    if known is None:
        return
    for key, line in compiled.keys.get(name, {}).items():
        if key in known:
            continue
        hint = difflib.get_close_matches(key, sorted(known), n=1)
        listed = ", ".join(sorted(known)) or "none"
        raise SpecError(
            field,
            f"{name}.{key}: no {what} {key!r}"
            + (f" (did you mean {name}.{hint[0]}?)" if hint else "")
            + f"; {what}s: {listed}",
            line_in_text=line,
        )


def uses_faker(value: Any) -> bool:
    if isinstance(value, Template):
        return value.uses_faker
    if isinstance(value, dict):
        return any(uses_faker(v) for v in value.values())
    if isinstance(value, list):
        return any(uses_faker(v) for v in value)
    return False


def seed_for(seed: int | str, tool: str, call: int) -> int:
    """Faker's seed for one stub call: sha256(scenario seed, tool name, call number).

    Never hash() (randomized per process) or the global Faker.seed (shared by parallel
    calls): the same file gives the same results however the calls interleave.
    """
    digest = hashlib.sha256(f"{seed}\x00{tool}\x00{call}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


_faker: Any = None


def faker_instance() -> Any:
    # One Faker per process (building one loads every provider: milliseconds); it is
    # re-seeded before each render, and stubs render on the event loop thread only.
    global _faker
    if _faker is None:
        from harness.scenario._faker_now import fixed_now_faker

        # Its "now" is fixed: a seeded date is the same on any day (docs/scenarios.md).
        _faker = fixed_now_faker("en_US")
    return _faker


def template_line(exc: BaseException) -> int | None:
    """The template line an error was raised at (Jinja maps it into the traceback)."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line
