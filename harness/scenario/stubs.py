"""Tool stubs: scripted tools built from a scenario's ``tools:`` section.

A stub validates its arguments like a real tool (short-form types or JSON Schema,
extra arguments forbidden), spends simulated latency, raises on the calls its
``errors`` name, and returns its ``returns`` / ``results`` rendered as Jinja2 over
``args``, ``call`` (1-based, per tool) and ``faker`` (seeded per call). A real tool
(``use:``) gets the same ``latency`` and ``errors`` around its own function.
"""

from __future__ import annotations

import ast
import asyncio
import functools
import hashlib
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Optional

import jsonschema
from jinja2 import StrictUndefined, TemplateError, TemplateSyntaxError, nodes
from jinja2.meta import find_undeclared_variables
from jinja2.sandbox import SandboxedEnvironment
from pydantic import Field, TypeAdapter, ValidationError

from harness import simclock
from harness.canonical import canonical_json
from harness.errors import AbortRun, HarnessError, where_defined
from harness.messages import ToolCall
from harness.scenario.schema import ParamSpec, ToolSpec
from harness.tools import (
    Tool,
    ToolArgumentsError,
    arguments_model,
    as_tool,
    format_errors,
    schema_of,
)

__all__ = ["TEMPLATE_MARKERS", "SpecError", "build_tool", "parse_type", "seed_for"]

_ENV = SandboxedEnvironment(undefined=StrictUndefined, keep_trailing_newline=True, autoescape=False)
# A string holding one of these is a Jinja template; any other string is plain text.
TEMPLATE_MARKERS = ("{{", "{%", "{#")
# The names a template sees (with the environment's globals: range, dict, ...).
TEMPLATE_NAMES = ("args", "call", "faker")
_KNOWN_NAMES = frozenset(TEMPLATE_NAMES) | frozenset(_ENV.globals)


class SpecError(Exception):
    """A problem in one tool spec: ``field`` is relative to ``tools.<name>``."""

    def __init__(self, field: tuple[str | int, ...], message: str, line_in_text: int | None = None):
        super().__init__(message)
        self.field = field
        self.message = message
        # The line inside a multi-line template (1-based), when the problem is there.
        self.line_in_text = line_in_text


# -- short-form types ---------------------------------------------------------------------

_BASE_TYPES: dict[str, Any] = {
    "str": str,
    "string": str,
    "int": int,
    "integer": int,
    "float": float,
    "number": float,
    "bool": bool,
    "boolean": bool,
    "dict": dict[str, Any],
    "object": dict[str, Any],
    "list": list[Any],
    "array": list[Any],
    "any": Any,
    "Any": Any,
    "None": type(None),
    "null": type(None),
}


def _split_top(text: str, sep: str) -> list[str]:
    parts, depth, current = [], 0, []
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts]


def parse_type(text: str) -> Any:
    """A short-form type (``str``, ``list[int]``, ``str | None``, ``Literal['a', 'b']``)."""
    text = text.strip()
    options = _split_top(text, "|")
    if len(options) > 1:
        types = [parse_type(option) for option in options]
        union = types[0]
        for t in types[1:]:
            union = union | t if union is not Any and t is not Any else Any
        return union
    if text.endswith("]") and "[" in text:
        head, inner = text[: text.index("[")].strip(), text[text.index("[") + 1 : -1]
        if head == "Literal":
            try:
                values = ast.literal_eval(f"({inner},)")
            except (ValueError, SyntaxError):
                raise ValueError(
                    f"Literal[{inner}] must list literal values, like Literal['a', 'b']"
                ) from None
            return Literal[values]  # type: ignore[valid-type]
        if head in ("list", "List"):
            return list[parse_type(inner)]  # type: ignore[misc]
        if head in ("dict", "Dict"):
            key_value = _split_top(inner, ",")
            if len(key_value) != 2 or parse_type(key_value[0]) is not str:
                raise ValueError(
                    f"{text!r}: a dict type names its key and value types, and JSON keys are "
                    "strings: dict[str, T] (or dict for any values)"
                )
            return dict[str, parse_type(key_value[1])]  # type: ignore[misc]
        if head == "Optional":
            return Optional[parse_type(inner)]  # noqa: UP045
    if text in _BASE_TYPES:
        return _BASE_TYPES[text]
    raise ValueError(
        f"unknown type {text!r}; use str, int, float, bool, dict, list[T], T | None or "
        "Literal['a', 'b']"
    )


def _short_form_tool_schema(name: str, parameters: dict[str, str | ParamSpec]) -> tuple[Any, dict]:
    """(argument model, JSON schema), shared by every stub with the same name and parameters.

    Building a pydantic model and its schema costs about a millisecond; a suite of many
    scenarios declaring the same tools would pay it again for each file (and each xdist
    worker loads every file).
    """
    key = canonical_json(
        [
            name,
            {
                k: v if isinstance(v, str) else v.model_dump(exclude_unset=True)
                for k, v in parameters.items()
            },
        ]
    )
    cached = _MODELS.get(key)
    if cached is None:
        model = _short_form_model(name, parameters)
        cached = _MODELS[key] = (model, schema_of(model))
    return cached


_MODELS: dict[str, tuple[Any, dict]] = {}


def _short_form_model(name: str, parameters: dict[str, str | ParamSpec]) -> Any:
    fields: dict[str, tuple[Any, Any]] = {}
    for arg, spec in parameters.items():
        detail = spec if isinstance(spec, ParamSpec) else ParamSpec(type=spec)
        try:
            annotation = parse_type(detail.type)
        except ValueError as exc:
            at = ("parameters", arg) if isinstance(spec, str) else ("parameters", arg, "type")
            raise SpecError(at, str(exc)) from None
        default = ...
        if detail.has_default:
            default = detail.default
            try:
                # Strict, as arguments from JSON are: `{type: int, default: "3"}` is a string.
                TypeAdapter(annotation).validate_python(default, strict=True)
            except ValidationError as exc:
                problem = format_errors(exc.errors(include_url=False))
                at = ("parameters", arg, "default")
                raise SpecError(
                    at,
                    f"default {default!r} is not a {detail.type} ({problem}); fix the default "
                    f"or the type (`{detail.type} | None` allows null)",
                ) from None
        fields[arg] = (annotation, Field(default, description=detail.description))
    return arguments_model(name, fields)


# -- JSON Schema parameters ------------------------------------------------------------------


class SchemaTool(Tool):
    """A tool whose arguments are checked against a JSON Schema (with ``jsonschema``)."""

    def __init__(self, fn: Callable[..., Any], *, name: str, schema: dict[str, Any], **kw: Any):
        # Stubs forbid extra arguments unless the schema says otherwise.
        schema = {"type": "object", "additionalProperties": False, **schema}
        schema.setdefault("properties", {})
        super().__init__(fn, name=name, parameters=schema, **kw)
        validator_class = jsonschema.validators.validator_for(schema)
        self._validator = validator_class(schema)

    def validate(self, call: ToolCall) -> dict[str, Any]:
        """The arguments, or ToolArgumentsError listing every schema violation."""
        arguments = super().validate(call)  # raw_arguments that do not parse fail here
        errors = [
            {
                "type": error.validator,
                "loc": list(error.absolute_path),
                "msg": error.message,
                "input": error.instance,
            }
            for error in sorted(
                self._validator.iter_errors(arguments), key=lambda e: list(e.absolute_path)
            )
        ]
        if errors:
            raise ToolArgumentsError(errors)
        return arguments


# -- templates -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Template:
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
    return _Compiled(_ENV.from_string(tree), lines)


def _compile(value: Any, field: tuple[str | int, ...]) -> Any:
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
        return _Template(compiled.template, field, "faker" in compiled.free)
    if isinstance(value, dict):
        return {k: _compile(v, (*field, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_compile(v, (*field, i)) for i, v in enumerate(value)]
    return value


def _uses_faker(value: Any) -> bool:
    if isinstance(value, _Template):
        return value.uses_faker
    if isinstance(value, dict):
        return any(_uses_faker(v) for v in value.values())
    if isinstance(value, list):
        return any(_uses_faker(v) for v in value)
    return False


def seed_for(seed: int | str, tool: str, call: int) -> int:
    """Faker's seed for one stub call: sha256(scenario seed, tool name, call number).

    Never hash() (randomized per process) or the global Faker.seed (shared by parallel
    calls): the same file gives the same results however the calls interleave.
    """
    digest = hashlib.sha256(f"{seed}\x00{tool}\x00{call}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


_faker: Any = None


def _faker_instance() -> Any:
    # One Faker per process (building one loads every provider: milliseconds); it is
    # re-seeded before each render, and stubs render on the event loop thread only.
    global _faker
    if _faker is None:
        from faker import Faker

        _faker = Faker("en_US")
    return _faker


# -- the stub itself -------------------------------------------------------------------------


class _Faults:
    """Per-tool call numbers, simulated latency and injected errors (stubs and use: tools)."""

    def __init__(self, spec: ToolSpec) -> None:
        self.latency = spec.latency
        self.timeout = spec.timeout
        self.calls = 0
        self.errors: dict[int | None, Any] = {}
        for i, error in enumerate(spec.errors):
            if error.on_call in self.errors:
                which = "every call" if error.on_call is None else f"call {error.on_call}"
                raise SpecError(
                    ("errors", i, "on_call"),
                    f"{which} already has an error; give each call one (an entry without "
                    "on_call is for the calls no other entry names)",
                )
            self.errors[error.on_call] = error

    def next_call(self) -> int:
        """Count a call, spend its latency, raise its error if it has one; -> its number."""
        # Counted when the call starts, on the event loop thread, in the model's order:
        # the Nth call is the same one however parallel calls finish.
        self.calls += 1
        call = self.calls
        if self.timeout is not None and self.latency > self.timeout:
            # The caller gives up when its timeout runs out, not when the call would end.
            simclock.sleep(self.timeout)
            raise TimeoutError(
                f"no answer within the tool's timeout of {self.timeout:g} s "
                f"(it would take {self.latency:g} s)"
            )
        if self.latency:
            simclock.sleep(self.latency)
        failure = self.errors.get(call, self.errors.get(None))
        if failure is not None:
            raise _exception_type(failure.type)(failure.raise_)
        return call


class _Stub(_Faults):
    """The callable behind a stub tool: call numbers, errors, latency, templates."""

    def __init__(self, name: str, spec: ToolSpec, seed: int | str, where: Callable[..., str]):
        super().__init__(spec)
        self.name = name
        self.seed = seed
        self.where = where
        self.default = _compile(spec.returns, ("returns",))
        self.per_call: dict[int, Any] = {}
        for i, r in enumerate(spec.results or []):
            if r.on_call in self.per_call:
                raise SpecError(
                    ("results", i, "on_call"),
                    f"call {r.on_call} already has a result; give each call one",
                )
            self.per_call[r.on_call] = _compile(r.returns, ("results", i, "returns"))

    async def __call__(self, **args: Any) -> Any:
        call = self.next_call()
        value = self.per_call.get(call, self.default)
        context = {"args": args, "call": call}
        if _uses_faker(value):
            faker = _faker_instance()
            faker.seed_instance(seed_for(self.seed, self.name, call))
            # seed_instance leaves faker.unique's memory of values given: cleared, or
            # `faker.unique` would depend on the calls (and runs) before this one.
            faker.unique.clear()
            context["faker"] = faker
        return self._render(value, context)

    def _render(self, value: Any, context: dict[str, Any]) -> Any:
        if isinstance(value, _Template):
            try:
                return value.template.render(context)
            except TemplateError as exc:
                # A template that fails is a scenario bug, not a tool failure.
                raise AbortRun(f"{self._where(value, exc)}: template error: {exc}") from None
            except Exception as exc:
                raise AbortRun(
                    f"{self._where(value, exc)}: template error: {type(exc).__name__}: {exc}"
                ) from None
        if isinstance(value, dict):
            return {k: self._render(v, context) for k, v in value.items()}
        if isinstance(value, list):
            return [self._render(v, context) for v in value]
        return value

    def _where(self, value: _Template, exc: Exception) -> str:
        return self.where(value.field, _template_line(exc))


def _template_line(exc: BaseException) -> int | None:
    """The template line an error was raised at (Jinja maps it into the traceback)."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


class _Faulty(_Faults):
    """A real tool's function with the scenario's latency and errors around it."""

    def __init__(self, fn: Callable[..., Any], is_async: bool, spec: ToolSpec) -> None:
        super().__init__(spec)
        self.fn = fn
        self.is_async = is_async
        self.__doc__ = getattr(fn, "__doc__", None)

    async def __call__(self, **args: Any) -> Any:
        self.next_call()
        if self.is_async:
            return await self.fn(**args)
        # This wrapper is async (so calls are numbered in the model's order), so it runs
        # a sync tool as the loop would: in a thread for a parallel plan, else inline (a
        # tool holding thread-bound resources, a sqlite3 connection say, keeps working).
        if simclock.in_parallel_plan():
            return await asyncio.to_thread(self.fn, **args)
        return self.fn(**args)


_EXCEPTIONS: dict[str, type[Exception]] = {}


def _exception_type(name: str) -> type[Exception]:
    # The model sees "<ExceptionType>: <message>", so the scenario picks the type name.
    if name not in _EXCEPTIONS:
        _EXCEPTIONS[name] = type(name, (Exception,), {"__module__": "harness.scenario.stubs"})
    return _EXCEPTIONS[name]


def _import_target(target: str, root: Path) -> Any:
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise SpecError(
            ("use",), f"use {target!r}: write 'module:function' or a registered tool's name"
        )
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise SpecError(
            ("use",), f"cannot import {module_name!r}: {type(exc).__name__}: {exc}"
        ) from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except Exception:
            raise SpecError(("use",), f"module {module_name!r} has no attribute {attr!r}") from None
    return obj


def _real_tool(use: str, root: Path, registered: Callable[[str], Tool]) -> Tool:
    if ":" in use:
        target = _import_target(use, root)
    else:
        try:
            target = registered(use)
        except HarnessError as exc:
            raise SpecError(("use",), str(exc)) from None
    if not callable(target):
        # Named by its import path: the object's repr may hold a memory address.
        kind = where_defined(type(target))
        raise SpecError(
            ("use",),
            f"cannot use {use!r} as a tool: it is a {kind} object, not a function; point "
            "use: at a function or a @tool",
        )
    try:
        real = as_tool(target)
    except Exception as exc:  # no signature, parameters without a JSON Schema, ...
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SpecError(("use",), f"cannot use {use!r} as a tool: {reason}") from None
    return real


def build_tool(
    name: str,
    spec: ToolSpec,
    *,
    seed: int | str,
    root: Path,
    registered: Callable[[str], Tool],
    where: Callable[..., str],
) -> Tool:
    """The Tool for one ``tools:`` entry; SpecError for anything that cannot work."""
    if spec.use is not None:
        real = _real_tool(spec.use, root, registered)
        faulty = bool(spec.latency or spec.errors or spec.timeout)
        if real.name == name and spec.description is None and not spec.strict and not faulty:
            return real
        return Tool(
            _Faulty(real.fn, real.is_async, spec) if faulty else real.fn,
            name=name,
            description=spec.description if spec.description is not None else real.description,
            model=real.model,
            parameters=real.parameters,
            strict=spec.strict or real.strict,
        )

    stub = _Stub(name, spec, seed, where)
    description = spec.description or ""
    if spec.schema_ is not None:
        try:
            jsonschema.validators.validator_for(spec.schema_).check_schema(spec.schema_)
        except jsonschema.SchemaError as exc:
            raise SpecError(("schema",), f"not a valid JSON Schema: {exc.message}") from None
        if spec.schema_.get("type", "object") != "object":
            raise SpecError(
                ("schema", "type"),
                f"type {spec.schema_['type']!r}: a tool's arguments are a JSON object, so the "
                "schema's type is object (describe the arguments under properties:)",
            )
        return SchemaTool(
            stub, name=name, schema=spec.schema_, description=description, strict=spec.strict
        )
    model, schema = _short_form_tool_schema(name, spec.parameters or {})
    return Tool(
        stub, name=name, description=description, model=model, parameters=schema, strict=spec.strict
    )
