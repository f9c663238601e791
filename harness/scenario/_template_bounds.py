"""The Jinja environment of stub templates, with bounds on the work one render may do.

A template is code in a scenario file, and one line of it can ask for years of CPU or all
of memory: ``{{ 9 ** 999999999 }}``, ``{{ 'x' * 3000000000 }}``, nested loops, a value
doubled in a loop. A timer cannot stop CPU-bound Python, so the operations that blow up
are refused before they run, and the rest is counted (docs/scenarios.md, "Bounds"):

- no value a template makes (a text, a list, a number's digits) is longer than
  MAX_VALUE characters or items (numbers: MAX_DIGITS digits);
- a render takes at most MAX_STEPS steps: loop iterations, calls, operators, ``~``,
  attribute and item lookups;
- its output is at most MAX_OUTPUT characters.

Breaking one raises TemplateBoundError, a template error saying which bound and why.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from jinja2 import StrictUndefined, TemplateRuntimeError, nodes
from jinja2.runtime import Context, missing
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer

__all__ = [
    "MAX_DIGITS",
    "MAX_OUTPUT",
    "MAX_STEPS",
    "MAX_VALUE",
    "TemplateBoundError",
    "bound",
    "bounded_environment",
    "render",
]

MAX_VALUE = 1_000_000
MAX_OUTPUT = 1_000_000
MAX_STEPS = 100_000
# Python itself prints no int of more digits (sys.int_info.default_max_str_digits).
MAX_DIGITS = 4_300
_MAX_BITS = int(MAX_DIGITS * math.log2(10))


class TemplateBoundError(TemplateRuntimeError):
    """A template asked for more work than one render may do."""


class _Budget:
    """The steps one render has left."""

    __slots__ = ("steps",)

    def __init__(self) -> None:
        self.steps = MAX_STEPS

    def step(self) -> None:
        self.steps -= 1
        if self.steps < 0:
            raise TemplateBoundError(
                f"the template takes more than {MAX_STEPS:,} steps (loop iterations, calls, "
                "operators): render less"
            )


_budget: ContextVar[_Budget | None] = ContextVar("harness_template_budget", default=None)


def _step() -> None:
    budget = _budget.get()
    if budget is not None:
        budget.step()


def _check_size(value: Any, what: str) -> Any:
    """``value``, unless it is longer than a template may make."""
    if isinstance(value, str | bytes | list | tuple | dict | set | frozenset):
        if len(value) > MAX_VALUE:
            raise TemplateBoundError(
                f"{what} would make {len(value):,} characters or items; a template makes at "
                f"most {MAX_VALUE:,} in one value"
            )
    elif isinstance(value, int) and value.bit_length() > _MAX_BITS:
        raise TemplateBoundError(_digits(what))
    return value


def _digits(what: str) -> str:
    return (
        f"{what} would make a number of more than {MAX_DIGITS:,} digits, the most a template makes"
    )


def _sized(value: Any) -> int | None:
    if isinstance(value, str | bytes | list | tuple):
        return len(value)
    return None


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _precheck(op: str, left: Any, right: Any) -> None:
    """Refuse ``left op right`` when its result is too big, before computing it."""
    shown = f"{_short(left)} {op} {_short(right)}"
    if op == "**" and _int(left) and _int(right) and right > 0 and abs(left) > 1:
        if right * math.log2(abs(left)) > _MAX_BITS:
            raise TemplateBoundError(_digits(shown))
    elif op == "*":
        if _int(left) and _int(right):
            if left.bit_length() + right.bit_length() > _MAX_BITS + 1:
                raise TemplateBoundError(_digits(shown))
            return
        size, times = (_sized(left), right) if _int(right) else (_sized(right), left)
        if size is not None and _int(times) and size * max(times, 0) > MAX_VALUE:
            raise TemplateBoundError(
                f"{shown} would make {size * times:,} characters or items; a template makes "
                f"at most {MAX_VALUE:,} in one value"
            )
    elif op == "+":
        first, second = _sized(left), _sized(right)
        if first is not None and second is not None and first + second > MAX_VALUE:
            raise TemplateBoundError(
                f"{shown} would make {first + second:,} characters or items; a template "
                f"makes at most {MAX_VALUE:,} in one value"
            )
    elif op == "%" and isinstance(left, str):
        _check_printf(left, right, shown)


def _check_printf(text: str, args: Any, shown: str) -> None:
    """``text % args`` makes at most its text, its arguments and its widths."""
    widths = [int(w) for w in re.findall(r"%[-#0 +]*(\d+)", text)]
    widths += [int(w) for w in re.findall(r"%[-#0 +]*\d*\.(\d+)", text)]
    if "*" in text or any(w > MAX_VALUE for w in widths):
        raise TemplateBoundError(
            f"{shown}: a width or precision above {MAX_VALUE:,} (or given by *) is not "
            "allowed in a template"
        )
    values = (
        args.values() if isinstance(args, dict) else args if isinstance(args, tuple) else [args]
    )
    longest = max((len(str(v)) for v in values), default=0)
    if len(text) + text.count("%") * longest + sum(widths) > MAX_VALUE:
        raise TemplateBoundError(
            f"{shown} would make more than {MAX_VALUE:,} characters; a template makes at "
            f"most {MAX_VALUE:,} in one value"
        )


def _short(value: Any) -> str:
    text = repr(value) if not _int(value) or value.bit_length() < 64 else "a big number"
    return text if len(text) <= 20 else f"{text[:17]}..."


# str methods whose integer arguments are sizes of what they make.
_SIZED_METHODS = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs"})


class _Context(Context):
    """A render's context that reads the environment's globals (``range``, ``dict``, ...)
    where they are: Jinja's own copies them into a new dict for every render, which was a
    quarter of the CPU of a scenario loop calling a templated stub (docs/performance.md)."""

    def resolve_or_missing(self, key: str) -> Any:
        """The template's variable, else the environment's global (Jinja's documented
        place for a lookup of one's own)."""
        if key in self.vars:
            return self.vars[key]
        if key in self.parent:
            return self.parent[key]
        return self.environment.globals.get(key, missing)


class _Bounded(ImmutableSandboxedEnvironment):
    """The sandbox (no Python internals, no mutation of lists and dicts), counting steps
    and refusing values too big to make."""

    context_class = _Context

    def make_globals(self, d: Any) -> Any:
        """A template's globals: the environment's own (stub templates are given none of
        their own), not a ChainMap over them that a render would walk."""
        return self.globals if not d else super().make_globals(d)

    intercepted_binops = frozenset({"+", "-", "*", "/", "//", "%", "**"})
    intercepted_unops = frozenset({"+", "-"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        """``left operator right``, unless too big to make."""
        _step()
        _precheck(operator, left, right)
        return _check_size(
            self.binop_table[operator](left, right), f"{_short(left)} {operator} ..."
        )

    def call_unop(self, context: Any, operator: str, arg: Any) -> Any:
        """A counted unary operator."""
        _step()
        return self.unop_table[operator](arg)

    def getattr(self, obj: Any, attribute: str) -> Any:
        """A counted attribute lookup."""
        _step()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        """A counted item lookup (a slice is a value made: its size is checked)."""
        _step()
        return _check_size(super().getitem(obj, argument), "a slice")

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        """A counted call; a str method asked for a size above the bound is refused."""
        _step()
        name = getattr(__obj, "__name__", "")
        if isinstance(getattr(__obj, "__self__", None), str) and name in _SIZED_METHODS:
            tabs = __obj.__self__.count("\t") if name == "expandtabs" else 1
            for value in (*args, *kwargs.values()):
                if _int(value) and value * max(tabs, 1) > MAX_VALUE:
                    raise TemplateBoundError(
                        f"{name}({value}) would make more than {MAX_VALUE:,} characters; a "
                        f"template makes at most {MAX_VALUE:,} in one value"
                    )
        result = super().call(__context, __obj, *args, **kwargs)
        return _check_size(result, f"{name or 'a call'}(...)")

    def bounded_loop(self, iterable: Any) -> Any:
        """A for loop's iterable: each iteration is a step."""
        for item in iterable:
            _step()
            yield item

    def bounded_concat(self, *parts: Any) -> str:
        """``a ~ b``, unless too long."""
        texts = [str(part) for part in parts]
        if sum(map(len, texts)) > MAX_VALUE:
            raise TemplateBoundError(
                f"~ would make {sum(map(len, texts)):,} characters; a template makes at most "
                f"{MAX_VALUE:,} in one value"
            )
        return "".join(texts)


def bounded_environment() -> Any:
    """The environment stub templates compile in (undefined names are errors)."""
    return _Bounded(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)


class _Counted(NodeTransformer):
    """Loops and ``~`` rewritten to go through the environment's counted versions."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)  # in place: it returns the node it was given
        node.iter = _environment_call("bounded_loop", [node.iter])
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)
        return _environment_call("bounded_concat", node.nodes)


def _environment_call(name: str, args: Sequence[nodes.Node]) -> nodes.Call:
    return nodes.Call(nodes.EnvironmentAttribute(name), args, [], None, None)


def bound(tree: nodes.Template) -> nodes.Template:
    """The parsed template with its loops and ``~`` going through the counted versions
    (a Concat also stops being folded into a constant at compile time)."""
    return _Counted().visit(tree)


def render(template: Any, context: dict[str, Any]) -> str:
    """Render with a fresh step budget, the output cut off past MAX_OUTPUT characters."""
    token = _budget.set(_Budget())
    try:
        parts: list[str] = []
        size = 0
        for part in _generate(template, context):
            size += len(part)
            if size > MAX_OUTPUT:
                raise TemplateBoundError(
                    f"the template renders more than {MAX_OUTPUT:,} characters, the most a "
                    "template renders"
                )
            parts.append(part)
        return "".join(parts)
    finally:
        _budget.reset(token)


def _generate(template: Any, context: dict[str, Any]) -> Any:
    """``template.generate(context)``, with ``context`` as the render's variables as they
    are (``shared``: _Context reads the globals where they are) instead of a copy of the
    globals with them."""
    ctx = template.new_context(context, shared=True)
    try:
        yield from template.root_render_func(ctx)
    except Exception:
        # What generate does: the error re-raised with the template's lines in its traceback.
        yield template.environment.handle_exception()
