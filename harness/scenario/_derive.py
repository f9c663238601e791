"""What produces a behaviour: a scenario's data edited so that its run covers one cell
(``harness coverage --suggest``, docs/coverage.md#suggestions).

``derive(data, cell, context)`` edits a scenario file's data (a copy) with the scenario
format's own means, and says whether it could: a stub tool's ``errors`` entry, an
``error:`` script step with a status or ``timeout``, a call's arguments broken (not JSON,
or not the tool's schema), a call to a tool that does not exist, a reply cut by its length,
a call inserted for a tool never called. ``harness explore``'s fault catalogue can take its
place: it is the one function the suggestions call.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from harness._coverage import Cell

__all__ = ["Context", "derive", "describe", "example_arguments"]

# The argument a schema never allows (extra arguments are refused by every stub).
EXTRA_ARGUMENT = "coverage_unexpected_argument"
# The name of a tool no scenario defines.
UNKNOWN_TOOL = "coverage_unknown_tool"
# Arguments that are no JSON object.
BROKEN_JSON = '{"coverage": '
_STATUSES = {"http_429": 429, "http_500": 500, "http_503": 503, "overloaded": 529}


@dataclass
class Context:
    """What a derivation knows besides the data: the tools the scenario's run called
    (``called``: asked for; ``ran``: ran, ok or not), each tool's JSON Schema (for the
    arguments of a call it inserts), and whether it is a target's."""

    called: set[str] = field(default_factory=set)
    ran: set[str] = field(default_factory=set)
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    target: bool = False


def derive(data: dict[str, Any], cell: Cell, context: Context) -> bool:
    """Edit ``data`` so that a run of it exercises ``cell``; False when this scenario
    cannot be made to (the cell needs what it lacks)."""
    kind, key = cell
    if kind == "model_fault":
        return _model_fault(data, key, context)
    if kind == "tool":
        return _call_tool(data, key, context)
    if kind == "tool_outcome":
        tool, _, status = key.rpartition(":")
        if status == "ok":
            return _call_tool(data, tool, context)
        if status == "error":
            ran = tool in context.ran or _call_tool(data, tool, context)
            return ran and _raise(data, tool)
        if status == "not_run":
            return not context.target and _stopped_beside(data, tool, context)
        if not _scripted_call(data, tool, context):
            return False
        if status == "invalid":
            return _break_call(data, tool, json=False)
    return False


def _scripted_call(data: dict[str, Any], tool: str, context: Context) -> bool:
    """Whether a script calls ``tool`` (in a step given whole), after adding such a first
    reply when none does."""
    if any("chunks" not in step for step, _ in _calls_of(data, tool)):
        return True
    return _call_tool(data, tool, context)


def describe(cell: Cell) -> str:
    """What a derivation for ``cell`` does, in words (the derived file's description)."""
    kind, key = cell
    if kind == "tool":
        return f"A first reply calls {key}, which the suite never called"
    tool, _, status = key.rpartition(":")
    if kind == "tool_outcome":
        return {
            "ok": f"A first reply calls {tool} with arguments its schema accepts",
            "error": f"The first call of {tool} raises",
            "invalid": f"A call of {tool} is sent with an argument its schema refuses",
            "not_run": f"A plan calling {tool} stops on its other call's invalid arguments",
        }.get(status, f"{tool} ends {status}")
    return {
        "timeout": "The first request to the model times out",
        "truncated": "The last reply with text is cut by its length",
        "unknown_tool": "A first reply calls a tool that does not exist",
        "malformed_arguments": "A call's arguments are sent as text that is no JSON",
        "schema_arguments": "A call is sent with an argument its schema refuses",
    }.get(key, f"The first request to the model is answered with HTTP {_STATUSES.get(key)}")


# -- the edits ------------------------------------------------------------------------------


def _model_fault(data: dict[str, Any], key: str, context: Context) -> bool:
    script = _script(data)
    if script is None:
        return False
    if key in _STATUSES:
        status = _STATUSES[key]
        script.insert(0, {"error": {"status": status, "message": f"injected HTTP {status}"}})
        return True
    if key == "timeout":
        script.insert(0, {"error": "timeout"})
        return True
    if key == "truncated":
        return _truncate(script)
    if key == "unknown_tool" and not context.target:
        script.insert(0, {"tool_calls": [{UNKNOWN_TOOL: {}}], "unknown_tools": True})
        return True
    if key in ("malformed_arguments", "schema_arguments"):
        name = next((n for n in sorted(context.called) if _calls_of(data, n)), None)
        return name is not None and _break_call(data, name, json=key == "malformed_arguments")
    return False


def _truncate(script: list[Any]) -> bool:
    """The last reply with text, cut by its length (``finish_reason: length``)."""
    for step in reversed(script):
        if isinstance(step, dict) and step.get("content") and "chunks" not in step:
            if "error" in step or "finish_reason" in step:
                return False
            step["finish_reason"] = "length"
            return True
    return False


def _call_tool(data: dict[str, Any], tool: str, context: Context) -> bool:
    """A first reply that calls ``tool`` with arguments its schema accepts."""
    script = _script_for(data, tool)
    if script is None:
        return False
    schema = context.schemas.get(tool)
    arguments = example_arguments(schema) if schema is not None else {}
    if arguments is None:
        return False
    script.insert(0, {"tool_calls": [{tool: arguments}]})
    return True


def _raise(data: dict[str, Any], tool: str) -> bool:
    """The tool's first call raises (a stub's or ``use:`` tool's ``errors`` entry)."""
    spec = _tool_spec(data, tool)
    if spec is None or any(k in spec for k in ("remote", "mcp")):
        return False
    errors = [e for e in spec.get("errors") or [] if isinstance(e, dict) and e.get("on_call") != 1]
    errors.insert(0, {"on_call": 1, "raise": "injected failure", "type": "ToolError"})
    spec["errors"] = errors
    return True


def _break_call(data: dict[str, Any], tool: str, *, json: bool) -> bool:
    """The first scripted call of ``tool`` sent with arguments that are no JSON
    (``json=True``: malformed) or that its schema refuses (an extra argument)."""
    for step, index in _calls_of(data, tool):
        if "chunks" in step:
            continue
        call = step["tool_calls"][index]
        if json:
            step["tool_calls"][index] = {"name": tool, "raw_arguments": BROKEN_JSON}
        else:
            arguments = dict(_arguments(call, tool) or {})
            arguments[EXTRA_ARGUMENT] = True
            step["tool_calls"][index] = {tool: arguments}
        return True
    return False


def _stopped_beside(data: dict[str, Any], tool: str, context: Context) -> bool:
    """A first reply of two calls of ``tool``, the second with an argument its schema
    refuses: under ``on_validation_error: stop`` the plan stops and the first never runs."""
    script = _script_for(data, tool)
    schema = context.schemas.get(tool)
    arguments = example_arguments(schema) if schema is not None else None
    if script is None or arguments is None:
        return False
    broken = {**arguments, EXTRA_ARGUMENT: True}
    script.insert(0, {"tool_calls": [{tool: arguments}, {tool: broken}]})
    agent = data.setdefault("agent", {})
    if isinstance(agent, dict):
        agent["on_validation_error"] = "stop"
    return True


# -- finding things in the data -----------------------------------------------------------


def _script(data: dict[str, Any]) -> list[Any] | None:
    """The main script (a scripted model's), or None."""
    llm = data.get("llm")
    if not isinstance(llm, dict) or llm.get("provider", "scripted") != "scripted":
        return None
    script = llm.setdefault("script", [])
    return script if isinstance(script, list) else None


def _script_for(data: dict[str, Any], tool: str) -> list[Any] | None:
    """The script of the agent that has ``tool``: a sub-agent's when its ``tools:`` name
    it, else the scenario's (a target's tools, an MCP server's are offered there)."""
    if tool not in (data.get("tools") or {}) and data.get("target") is None:
        for agent in (data.get("agents") or {}).values():
            if isinstance(agent, dict) and tool in (agent.get("tools") or {}):
                return _script(agent)
    return _script(data)


def _tool_spec(data: dict[str, Any], tool: str) -> dict[str, Any] | None:
    agents = [a for a in (data.get("agents") or {}).values() if isinstance(a, dict)]
    for found in [data.get("tools") or {}, *(a.get("tools") or {} for a in agents)]:
        spec = found.get(tool)
        if isinstance(spec, dict):
            return spec
    return None


def _scripts(data: dict[str, Any]) -> Iterator[list[Any]]:
    """Every script of the data: the main one, a target's other conversations', the
    sub-agents'."""
    for holder in (data, *(data.get("agents") or {}).values()):
        llm = holder.get("llm") if isinstance(holder, dict) else None
        if not isinstance(llm, dict):
            continue
        if isinstance(llm.get("script"), list):
            yield llm["script"]
        for rule in llm.get("conversations") or []:
            if isinstance(rule, dict) and isinstance(rule.get("script"), list):
                yield rule["script"]


def _calls_of(data: dict[str, Any], tool: str) -> list[tuple[dict[str, Any], int]]:
    """(step, index) of each scripted call of ``tool``, in script order."""
    found = []
    for script in _scripts(data):
        for step in script:
            calls = step.get("tool_calls") if isinstance(step, dict) else None
            for index, call in enumerate(calls or []):
                if _arguments(call, tool) is not None:
                    found.append((step, index))
    return found


def _arguments(call: Any, tool: str) -> dict[str, Any] | None:
    """A scripted call's arguments when it calls ``tool`` ({} for one whose arguments are
    raw text), else None. The long form has a ``name`` key; ``{name: {...}}`` is the short
    form of a tool called ``name`` (harness.llm._script reads them so)."""
    if not isinstance(call, dict):
        return None
    if "name" in call and not (len(call) == 1 and isinstance(call["name"], dict)):
        if call["name"] != tool:
            return None
        arguments = call.get("arguments")
        return arguments if isinstance(arguments, dict) else {}
    if len(call) == 1 and tool in call:
        value = call[tool]
        return value if isinstance(value, dict) else {}
    return None


# -- arguments a schema accepts -------------------------------------------------------------


def example_arguments(schema: dict[str, Any]) -> dict[str, Any] | None:
    """Arguments that the JSON Schema of a tool's parameters accepts: each required
    property with a value of its type (its default, first enum value, minimum, ...);
    None when the schema says too little to make one."""
    value = _example(schema, schema, 0)
    return value if isinstance(value, dict) else None


def _example(schema: Any, root: dict[str, Any], depth: int) -> Any:
    if not isinstance(schema, dict) or depth > 20:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, dict) else None
        return _example(target, root, depth + 1)
    for key in ("default", "const"):
        if key in schema:
            return schema[key]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in schema.get(key) or [] if o.get("type") != "null"]
        if options:
            return _example(options[0], root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return _typed(kind, schema, root, depth)


def _typed(kind: Any, schema: dict[str, Any], root: dict[str, Any], depth: int) -> Any:
    if kind == "string":
        return "x" * max(int(schema.get("minLength", 1)), 1)
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = low + 1 if "exclusiveMinimum" in schema else max(low, 1)
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return True
    if kind == "array":
        count = int(schema.get("minItems", 0))
        item = _example(schema.get("items", {}), root, depth + 1)
        return [item] * count
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        return {
            name: _example(properties.get(name, {}), root, depth + 1)
            for name in schema.get("required") or []
        }
    return None
