"""Templates in stub results: Jinja2 (sandboxed) over ``args``, ``call`` and ``faker``,
compiled once per file and checked for unknown names, and Faker seeded per call."""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from typing import Any

from jinja2 import TemplateSyntaxError, nodes
from jinja2.meta import find_undeclared_variables

from harness.scenario.params import SpecError
from harness.scenario.template_bounds import bound, bounded_environment

__all__ = [
    "TEMPLATE_MARKERS",
    "TEMPLATE_NAMES",
    "Template",
    "compile_value",
    "faker_instance",
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
    return _Compiled(_ENV.from_string(bound(tree)), lines)


def compile_value(value: Any, field: tuple[str | int, ...]) -> Any:
    """Compile every templated string in a (nested) value; plain strings stay as they are."""
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
        unknown = {n: line for n, line in compiled.free.items() if n not in _KNOWN_NAMES}
        if unknown:
            names = ", ".join(repr(n) for n in unknown)
            raise SpecError(
                field,
                f"unknown name{'s' if len(unknown) > 1 else ''} {names} "
                f"(templates see {', '.join(TEMPLATE_NAMES)})",
                line_in_text=min(unknown.values()),
            )
        return Template(compiled.template, field, "faker" in compiled.free)
    if isinstance(value, dict):
        return {k: compile_value(v, (*field, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [compile_value(v, (*field, i)) for i, v in enumerate(value)]
    return value


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
        from harness.scenario.faker_now import fixed_now_faker

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
