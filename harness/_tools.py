"""Tools: ``@tool``, argument validation, and the OpenAI schema sent to the model."""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Iterable
from typing import Annotated, Any, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from harness._actions import SubRun
from harness._errors import HarnessError, describe, format_errors, where_defined
from harness._messages import ToolCall

__all__ = [
    "Tool",
    "ToolArgumentsError",
    "ToolFault",
    "ToolResult",
    "arguments_model",
    "as_tool",
    "schema_of",
    "tool",
    "toolset",
]


class ToolArgumentsError(Exception):
    """A call's arguments do not match its tool; ``errors`` are pydantic-style error dicts."""

    def __init__(self, errors: list[dict[str, Any]]):
        super().__init__(format_errors(errors))
        self.errors = errors


class ToolFault(Exception):
    """A failure of the protocol a tool is served on rather than of the tool: over MCP
    (docs/mcp.md) a JSON-RPC error (``kind="error"`` with ``code``), a dropped connection
    (``"disconnect"``) or a call never answered (``"hang"``). Called by harness's own loop,
    it is an ordinary tool failure that the model sees as ``Type: message``."""

    def __init__(self, message: str, *, kind: str = "error", code: int = -32000) -> None:
        super().__init__(message)
        self.message = message
        self.kind = kind
        self.code = code


class ToolResult:
    """What a tool may return instead of a plain value: the value, whether it is an error
    result (the model sees it as one, the record's status is ``error``) and, for a
    sub-agent tool, the run it made. Raising is the other way to give an error result."""

    __slots__ = ("content", "is_error", "sub_run")

    def __init__(self, content: Any, *, is_error: bool = False, sub_run: SubRun | None = None):
        self.content = content
        self.is_error = is_error
        self.sub_run = sub_run

    def __repr__(self) -> str:
        return f"ToolResult({self.content!r}, is_error={self.is_error})"


def _pydantic_errors(exc: ValidationError) -> list[dict[str, Any]]:
    # The JSON form is plain data (ctx may hold exception objects otherwise).
    return json.loads(exc.json(include_url=False))


class Tool:
    """A callable the model can use: name, description, argument validation, the function."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str,
        description: str = "",
        model: type[BaseModel] | None = None,
        parameters: dict[str, Any] | None = None,
        strict: bool = False,
        ends_run: bool = False,
    ) -> None:
        self.fn = fn
        # An output tool: a call to it that runs ends the run (harness._toolplan).
        self.ends_run = ends_run
        self.name = name
        self.description = description
        self.model = model
        self.parameters = parameters if parameters is not None else schema_of(model)
        self.strict = strict
        # An object with an async __call__ counts as async too.
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004
        )
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__wrapped__ = fn
        self._schema: dict[str, Any] | None = None
        # (attribute, argument name): arguments are aliases so that any name works,
        # even one that would shadow a BaseModel attribute (json, schema, model_*).
        self._fields = [
            (key, field.alias or key)
            for key, field in (model.model_fields.items() if model else ())
        ]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # A decorated function stays callable as before.
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Tool {self.name}>"

    @property
    def origin(self) -> str:
        """Where the tool's function is defined (for error messages)."""
        return where_defined(self.fn)

    def validate(self, call: ToolCall) -> dict[str, Any]:
        """The keyword arguments for this call, or ToolArgumentsError listing every problem."""
        if self.model is None:
            if call.raw_arguments is not None:
                raise ToolArgumentsError([_json_error(call.raw_arguments)])
            return dict(call.arguments)
        try:
            if call.raw_arguments is not None:
                value = self.model.model_validate_json(call.raw_arguments)
            else:
                value = self.model.model_validate(call.arguments)
        except ValidationError as exc:
            raise ToolArgumentsError(_pydantic_errors(exc)) from None
        return {alias: getattr(value, key) for key, alias in self._fields}

    def openai_schema(self) -> dict[str, Any]:
        """The Chat Completions ``tools`` entry for this tool (built once)."""
        if self._schema is None:
            function: dict[str, Any] = {"name": self.name}
            if self.description:
                function["description"] = self.description
            function["parameters"] = self.parameters
            if self.strict:
                function["strict"] = True
            self._schema = {"type": "function", "function": function}
        return self._schema


def _json_error(raw: str) -> dict[str, Any]:
    try:
        json.loads(raw)
    except ValueError as exc:
        return {"type": "json_invalid", "loc": [], "msg": f"Invalid JSON: {exc}", "input": raw}
    return {"type": "model_type", "loc": [], "msg": "Arguments must be a JSON object", "input": raw}


_NON_SCHEMA_KEYS = frozenset({"default", "enum", "const", "examples", "properties"})


def _strip_titles(node: Any, parent_key: str | None = None) -> Any:
    """Drop pydantic's generated ``title`` strings: they add tokens and nothing for the model."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "title" and isinstance(value, str) and parent_key != "properties":
                continue
            if key in _NON_SCHEMA_KEYS and key != "properties":
                out[key] = value
            else:
                out[key] = _strip_titles(value, key)
        return out
    if isinstance(node, list):
        return [_strip_titles(item, parent_key) for item in node]
    return node


def schema_of(model: type[BaseModel] | None) -> dict[str, Any]:
    """The JSON schema sent to the model for an arguments model (titles dropped)."""
    if model is None:
        return {"type": "object", "properties": {}}
    schema = _strip_titles(model.model_json_schema())
    schema.setdefault("properties", {})
    return schema


def _model_from_signature(
    fn: Callable[..., Any], name: str, hints_of: Callable[..., Any] | None = None
) -> type[BaseModel]:
    signature = inspect.signature(fn)
    target = hints_of or fn
    try:
        hints = get_type_hints(target, include_extras=True)
    except Exception:  # unresolvable forward references: fall back to Any
        hints = {}
    fields: dict[str, tuple[Any, Any]] = {}
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise HarnessError(
                f"tool {name!r} ({where_defined(target)}): *args and **kwargs cannot "
                "become tool parameters; name each parameter"
            )
        annotation = hints.get(param.name, Any)
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (annotation, default)
    return arguments_model(name, fields)


def arguments_model(name: str, fields: dict[str, tuple[Any, Any]]) -> type[BaseModel]:
    """A pydantic model for a tool's arguments: ``{arg: (type, default or Field)}``, extras
    forbidden. Arguments become aliases of internal field names, so any argument name works."""
    definitions: dict[str, Any] = {}
    for index, (arg, (annotation, default)) in enumerate(fields.items()):
        if isinstance(default, FieldInfo):
            # pydantic merges a FieldInfo in Annotated with the alias given here.
            definitions[f"arg_{index}"] = (Annotated[annotation, default], Field(alias=arg))
        else:
            definitions[f"arg_{index}"] = (annotation, Field(default, alias=arg))
    return create_model(
        f"{name}_arguments",
        __config__=ConfigDict(extra="forbid", serialize_by_alias=True, validate_by_alias=True),
        **definitions,
    )


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    strict: bool = False,
) -> Any:
    """Make a function a tool: parameters from type hints, description from the docstring.

    Use as ``@tool`` or ``@tool(name=..., description=...)``; sync and async functions work.
    """

    def wrap(func: Callable[..., Any]) -> Tool:
        tool_name = name or getattr(func, "__name__", None)
        if not isinstance(tool_name, str):
            raise HarnessError(
                f"{describe(func)} has no __name__ to name the tool by: give it one "
                "with tool(fn, name=...)"
            )
        # A partial's docstring and type hints are those of the function it wraps.
        documented = func.func if isinstance(func, functools.partial) else func
        return Tool(
            func,
            name=tool_name,
            description=description
            if description is not None
            else inspect.getdoc(documented) or "",
            model=_model_from_signature(func, tool_name, hints_of=documented),
            strict=strict,
        )

    return wrap(fn) if fn is not None else wrap


def as_tool(obj: Any) -> Tool:
    """A Tool as is; a plain function becomes one as with ``@tool``."""
    if isinstance(obj, Tool):
        return obj
    if callable(obj):
        return tool(obj)
    raise HarnessError(f"{describe(obj)} is not a tool: decorate a function with @harness.tool")


def toolset(tools: Iterable[Any], resolve: Callable[[str], Tool] | None = None) -> dict[str, Tool]:
    """Tools by name; names are looked up with ``resolve``. Duplicate names are an error."""
    out: dict[str, Tool] = {}
    for item in tools:
        if isinstance(item, str):
            if resolve is None:
                raise HarnessError(f"tool {item!r} given by name, but no registry to look it up in")
            item = resolve(item)
        t = as_tool(item)
        if t.name in out:
            raise HarnessError(
                f"duplicate tool name {t.name!r}: defined by {out[t.name].origin} and by "
                f"{t.origin}; give one of them another name with @tool(name=...)"
            )
        out[t.name] = t
    return out
