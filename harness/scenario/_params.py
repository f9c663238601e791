"""Tool parameters in scenario files: short-form types (``{city: str}``) and JSON Schema
tools, and the SpecError every tool-spec check raises."""

from __future__ import annotations

import ast
import unicodedata
from collections.abc import Callable
from typing import Any, Literal, Optional

import jsonschema
from pydantic import Field, TypeAdapter, ValidationError

from harness._canonical import canonical_json
from harness._errors import describe_errors
from harness._messages import ToolCall
from harness._tools import Tool, ToolArgumentsError, arguments_model, schema_of
from harness.scenario._tool_schema import ParamSpec

__all__ = [
    "SchemaTool",
    "SpecError",
    "check_parameter_names",
    "parse_type",
    "short_form_tool_schema",
]


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
    parts: list[str] = []
    current: list[str] = []
    depth = 0
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
            return Literal[values]
        # Types built at run time from the scenario's text: mypy reads only the type
        # expressions written in the source.
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


def check_parameter_names(names: Any, at: tuple[str | int, ...]) -> None:
    """SpecError for a parameter name (a key of ``names``, at ``at``) with a control
    character: a NUL or a line break in an argument's name reaches the model's tool schema,
    the arguments and every file that records them."""
    for name in names:
        bad = next((c for c in str(name) if unicodedata.category(c) == "Cc"), None)
        if bad is not None:
            raise SpecError(
                (*at, name),
                f"a parameter name holds a control character ({bad!r}): name it with "
                "printable characters",
            )


def short_form_tool_schema(name: str, parameters: dict[str, str | ParamSpec]) -> tuple[Any, dict]:
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
    check_parameter_names(parameters, ("parameters",))
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
                problem = describe_errors(exc.errors(include_url=False))
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
