"""Tool stubs: scripted tools built from a scenario's ``tools:`` section.

A stub validates its arguments like a real tool (short-form types or JSON Schema,
extra arguments forbidden), spends simulated latency, raises on the calls its
``errors`` name, and returns its ``returns`` / ``results`` rendered as Jinja2 over
``args``, ``call`` (1-based, per tool) and ``faker`` (seeded per call). A real tool
(``use:``) gets the same ``latency`` and ``errors`` around its own function.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
from jinja2 import TemplateError
from pydantic_core import to_jsonable_python

from harness import simclock
from harness._errors import AbortRun, HarnessError
from harness._tools import Tool, ToolFault, ToolResult
from harness.scenario._params import (
    SchemaTool,
    SpecError,
    check_parameter_names,
    short_form_tool_schema,
)
from harness.scenario._targets import real_tool
from harness.scenario._template_bounds import render
from harness.scenario._templates import (
    Template,
    compile_value,
    faker_instance,
    seed_for,
    template_line,
    uses_faker,
)
from harness.scenario._tool_schema import ToolSpec

__all__ = ["ToolContext", "build_tool", "described"]


# -- the stub itself -------------------------------------------------------------------------


class _Faults:
    """Per-tool call numbers, simulated latency and injected errors (stubs and use: tools)."""

    def __init__(self, spec: ToolSpec) -> None:
        self.latency = spec.latency
        self.timeout = spec.timeout
        self.calls = 0
        # Calls slower than the others (``results: [{on_call, latency}]``): the extra seconds.
        self.slow = {r.on_call: r.latency for r in spec.results or [] if r.latency}
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
        # Prompt injection: text appended to the results of every call (None) or of one.
        self.injections: dict[int | None, list[str]] = {}
        for injection in spec.injections:
            if injection.into == "result":
                self.injections.setdefault(injection.on_call, []).append(injection.text)

    def inject(self, call: int, value: Any) -> Any:
        """``value`` with the injected text of call ``call`` appended, if any.

        A result that is not text is sent to the model as its JSON; the injection is
        appended to that text (as a tool whose output carries a planted instruction).
        """
        texts = self.injections.get(None, []) + self.injections.get(call, [])
        if not texts:
            return value
        if not isinstance(value, str):
            value = json.dumps(to_jsonable_python(value, fallback=str))
        return "\n\n".join([value, *texts])

    def next_call(self) -> int:
        """Count a call, spend its latency, raise its error if it has one; -> its number."""
        # Counted when the call starts, on the event loop thread, in the model's order:
        # the Nth call is the same one however parallel calls finish.
        self.calls += 1
        call = self.calls
        latency = self.latency + self.slow.get(call, 0.0)
        if self.timeout is not None and latency > self.timeout:
            # The caller gives up when its timeout runs out, not when the call would end.
            simclock.sleep(self.timeout)
            raise TimeoutError(
                f"no answer within the tool's timeout of {self.timeout:g} s "
                f"(it would take {latency:g} s)"
            )
        if latency:
            simclock.sleep(latency)
        failure = self.errors.get(call, self.errors.get(None))
        if failure is not None:
            if failure.after:
                simclock.sleep(failure.after)
            if failure.mcp is not None:
                kind, code = (
                    ("error", failure.mcp) if isinstance(failure.mcp, int) else (failure.mcp, 0)
                )
                raise _fault_type(failure.type)(failure.raise_, kind=kind, code=code)
            raise _exception_type(failure.type)(failure.raise_)
        return call


class _Stub(_Faults):
    """The callable behind a stub tool: call numbers, errors, latency, templates."""

    def __init__(
        self,
        name: str,
        spec: ToolSpec,
        seed: int | str,
        where: Callable[..., str],
        case: dict[str, Any] | None = None,
    ):
        super().__init__(spec)
        self.name = name
        self.seed = seed
        self.where = where
        self.case = case
        arguments = _argument_names(spec)
        self.default = compile_value(spec.returns, ("returns",), arguments=arguments, case=case)
        self.per_call: dict[int, Any] = {}
        # Calls whose result is an error result, its text as given (``is_error: true``).
        self.error_results: set[int] = set()
        # Calls whose result is padded to a size (``pad_to``: a huge result).
        self.padded: dict[int, int] = {}
        seen: set[int] = set()
        for i, r in enumerate(spec.results or []):
            if r.on_call in seen:
                raise SpecError(
                    ("results", i, "on_call"),
                    f"call {r.on_call} already has a result; give each call one",
                )
            seen.add(r.on_call)
            if r.has_returns or r.is_error:
                self.per_call[r.on_call] = compile_value(
                    r.returns, ("results", i, "returns"), arguments=arguments, case=case
                )
            if r.is_error:
                self.error_results.add(r.on_call)
            if r.pad_to is not None:
                self.padded[r.on_call] = r.pad_to

    async def __call__(self, **args: Any) -> Any:
        call = self.next_call()
        value = self.per_call.get(call, self.default)
        context: dict[str, Any] = {"args": args, "call": call}
        if self.case is not None:
            context["case"] = self.case
        if uses_faker(value):
            faker = faker_instance()
            faker.seed_instance(seed_for(self.seed, self.name, call))
            # seed_instance leaves faker.unique's memory of values given: cleared, or
            # `faker.unique` would depend on the calls (and runs) before this one.
            faker.unique.clear()
            context["faker"] = faker
        result = self._render(value, context)
        if call in self.padded:
            result = _padded(result, self.padded[call])
        result = self.inject(call, result)
        if call in self.error_results:
            return ToolResult(result, is_error=True)
        return result

    def _render(self, value: Any, context: dict[str, Any]) -> Any:
        if isinstance(value, Template):
            try:
                return render(value.template, context)
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

    def _where(self, value: Template, exc: Exception) -> str:
        return self.where(value.field, template_line(exc))


class _Faulty(_Faults):
    """A real tool's function with the scenario's latency and errors around it."""

    def __init__(self, fn: Callable[..., Any], is_async: bool, spec: ToolSpec) -> None:
        super().__init__(spec)
        self.fn = fn
        self.is_async = is_async
        self.__doc__ = getattr(fn, "__doc__", None)

    async def __call__(self, **args: Any) -> Any:
        call = self.next_call()
        if self.is_async:
            return self.inject(call, await self.fn(**args))
        # This wrapper is async (so calls are numbered in the model's order), so it runs
        # a sync tool as the loop would: in a thread for a parallel plan, else inline (a
        # tool holding thread-bound resources, a sqlite3 connection say, keeps working).
        if simclock.in_parallel_plan():
            return self.inject(call, await asyncio.to_thread(self.fn, **args))
        return self.inject(call, self.fn(**args))


def _padded(value: Any, size: int) -> str:
    """``value``'s text (a value that is not text as its JSON) repeated to ``size``
    characters: a huge result that still reads as the tool's."""
    text = value if isinstance(value, str) else json.dumps(to_jsonable_python(value, fallback=str))
    text = text or "."
    return (text * (size // len(text) + 1))[:size]


_EXCEPTIONS: dict[str, type[Exception]] = {}


def _exception_type(name: str) -> type[Exception]:
    # The model sees "<ExceptionType>: <message>", so the scenario picks the type name.
    if name not in _EXCEPTIONS:
        _EXCEPTIONS[name] = type(name, (Exception,), {"__module__": "harness.scenario.stubs"})
    return _EXCEPTIONS[name]


_FAULTS: dict[str, type[ToolFault]] = {}


def _fault_type(name: str) -> type[ToolFault]:
    # A ToolFault (harness's MCP server answers it as the protocol's error) that the own
    # loop's model sees as "<type>: <message>", like any stub error.
    if name not in _FAULTS:
        _FAULTS[name] = type(name, (ToolFault,), {"__module__": "harness.scenario.stubs"})
    return _FAULTS[name]


def _argument_names(spec: ToolSpec) -> frozenset[str] | None:
    """The arguments a stub takes, when its schema says them all (``args.KEY`` must name
    one); None when other keys may come."""
    if spec.schema_ is None:
        return frozenset(spec.parameters or {})
    properties = spec.schema_.get("properties", {})
    if not isinstance(properties, dict) or spec.schema_.get("additionalProperties", False):
        return None
    if any(k in spec.schema_ for k in ("patternProperties", "allOf", "anyOf", "oneOf", "$ref")):
        return None
    return frozenset(properties)


def _result_injections(spec: ToolSpec) -> bool:
    return any(i.into == "result" for i in spec.injections)


def described(spec: ToolSpec, description: str) -> str:
    """``description`` with the text ``inject: {into: description}`` plants in it."""
    planted = [i.text for i in spec.injections if i.into == "description"]
    return "\n\n".join([description, *planted]) if planted else description


def _built_in(name: str, spec: ToolSpec, agents: Callable[[str], Any] | None) -> Tool:
    """The tool of an ``agent:`` or ``code:`` entry (the sub-agent comes from ``agents``)."""
    if spec.agent is not None:
        from harness._subagents import AgentTool

        if agents is None:
            raise SpecError(("agent",), "sub-agents need the scenario's agents: section")
        agent, description = agents(spec.agent)
        return AgentTool(agent, name, spec.description or description)
    from harness.sandbox._tool import CodeExecutionTool

    code = spec.code
    assert code is not None
    try:
        return CodeExecutionTool(
            sandbox=code.sandbox,
            timeout=code.timeout,
            name=name,
            memory_mb=code.memory_mb,
            output_bytes=code.output_bytes,
            processes=code.processes,
        )
    except HarnessError as exc:  # the backend cannot run on this machine
        raise SpecError(("code", "sandbox"), str(exc)) from None


@dataclass(frozen=True)
class ToolContext:
    """What every tool of one scenario is built with."""

    # What its stubs' faker is seeded with (the scenario's seed, else its name).
    seed: int | str
    # The project root a ``use:`` tool imports from.
    root: Path
    # The tool a plugin registered under a name (``use: NAME``).
    registered: Callable[[str], Tool]
    # The Agent and description of a name of the scenario's ``agents:`` section
    # (SpecError for an unknown one).
    agents: Callable[[str], Any] | None = None
    # The keys of the case the scenario is (its stubs' templates read them).
    case: dict[str, Any] | None = None


def build_tool(name: str, spec: ToolSpec, where: Callable[..., str], context: ToolContext) -> Tool:
    """The Tool for one ``tools:`` entry; SpecError for anything that cannot work.

    ``where`` says where a field of the entry is (for render-time errors). ``ends_run:
    true`` makes it an output tool.
    """
    tool = _build(name, spec, where, context)
    if spec.ends_run:
        # A copy: a registered or imported tool is shared, and only here it ends runs.
        tool = copy.copy(tool)
        tool.ends_run = True
    return tool


def _build(name: str, spec: ToolSpec, where: Callable[..., str], context: ToolContext) -> Tool:
    """The Tool for one ``tools:`` entry, before ``ends_run``."""
    if spec.use is not None or spec.agent is not None or spec.code is not None:
        if spec.use is not None:
            real = real_tool(spec.use, context.root, context.registered)
        else:
            real = _built_in(name, spec, context.agents)
        faulty = bool(spec.latency or spec.errors or spec.timeout or _result_injections(spec))
        plain = spec.description is None and not spec.injections
        if real.name == name and plain and not spec.strict and not faulty:
            return real
        return Tool(
            _Faulty(real.fn, real.is_async, spec) if faulty else real.fn,
            name=name,
            description=described(
                spec, spec.description if spec.description is not None else real.description
            ),
            model=real.model,
            parameters=real.parameters,
            strict=spec.strict or real.strict,
        )

    stub = _Stub(name, spec, context.seed, where, context.case)
    description = described(spec, spec.description or "")
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
        properties = spec.schema_.get("properties")
        if isinstance(properties, dict):
            check_parameter_names(properties, ("schema", "properties"))
        return SchemaTool(
            stub, name=name, schema=spec.schema_, description=description, strict=spec.strict
        )
    model, schema = short_form_tool_schema(name, spec.parameters or {})
    return Tool(
        stub, name=name, description=description, model=model, parameters=schema, strict=spec.strict
    )
