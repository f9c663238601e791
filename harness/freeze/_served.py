"""A target's tools that harness serves over MCP, frozen into stubs with per-call results.

A target scenario's ``tools:`` are served to the agent over MCP (docs/external.md); the
agent's requests to the model carry only what it made of their results (pydantic-ai sends
a failed call back as a retry prompt, say), so the recording does not say what each call
returned. Freeze runs the target once with the tools as the original scenario defines
them, the model answering from the recorded replies, and reads what harness's MCP server
answered, call by call (``mcp_call`` events and the calls' records): each tool becomes a
stub with its definition (as the agent was shown it) and those answers as ``results:``
(an ``isError`` result stays one) or ``errors:`` (a JSON-RPC error keeps its code). The
frozen run that follows is checked to send the recorded requests, as any frozen run is.
"""

from __future__ import annotations

from typing import Any

from harness._results import ScenarioResult
from harness.events import MCPCallEvent
from harness.freeze._recorded import FreezeError
from harness.scenario._schema import Scenario
from harness.scenario._templates import TEMPLATE_MARKERS

__all__ = ["served_stubs", "served_tools"]

# What a served stub keeps of the original's entry: how it is shown and when it changes.
_KEPT = {"latency", "timeout", "rug_pull", "strict"}
# What it keeps of an original stub: its definition in the form it was given (a short
# form's arguments are checked as the short form checks them, with its messages).
_STUB_DEFINITION = {*_KEPT, "description", "parameters", "schema_"}


def served_tools(original: Scenario) -> dict[str, Any]:
    """The original's ``tools:`` as written (served as they were for the first run)."""
    return {
        name: spec.model_dump(by_alias=True, exclude_unset=True)
        for name, spec in original.tools.items()
    }


def _definitions(original: Scenario) -> dict[str, dict[str, Any]]:
    """Each served tool's definition as a stub's: a stub's as it was given, a ``use:`` or
    ``code:`` tool's description and JSON Schema as the agent was shown them."""
    from harness._errors import HarnessError
    from harness.scenario._loader import build_tools

    try:
        built = build_tools(original)
    except HarnessError as exc:
        raise FreezeError(f"the scenario's tools cannot be built: {exc}") from None
    definitions: dict[str, dict[str, Any]] = {}
    for name, spec in original.tools.items():
        tool = built.get(name)
        if tool is None:
            continue
        if spec.use is None and spec.code is None:
            definitions[name] = spec.model_dump(
                by_alias=True, exclude_unset=True, include=_STUB_DEFINITION
            )
            continue
        kept = spec.model_dump(by_alias=True, exclude_unset=True, include=_KEPT)
        definition: dict[str, Any] = {}
        if tool.description:
            definition["description"] = tool.description
        definition["schema"] = tool.parameters
        definitions[name] = {**definition, **kept}
    return definitions


def _returns(value: Any) -> Any:
    # Stub results are Jinja templates: a text that looks like one stays literal.
    if isinstance(value, str) and any(marker in value for marker in TEMPLATE_MARKERS):
        return "{% raw %}" + value + "{% endraw %}"
    return value


def served_stubs(original: Scenario, result: ScenarioResult) -> dict[str, Any]:
    """The original's served tools as stubs answering each call as ``result``'s run saw
    harness's MCP server answer it."""
    stubs = _definitions(original)
    records = {record.id: record for record in result.tool_calls}
    counts: dict[str, int] = {}
    for event in result.events:
        if not isinstance(event, MCPCallEvent) or event.tool not in stubs:
            continue
        # A call that failed validation (or named no tool) never reached the stub, which
        # counts the calls it runs.
        if event.status in ("invalid", "unknown_tool"):
            continue
        counts[event.tool] = on_call = counts.get(event.tool, 0) + 1
        record = records.get(event.call_id) if event.call_id is not None else None
        answer = record.result if record is not None else None
        stub = stubs[event.tool]
        if event.code is not None:
            message = str(answer) if answer else f"JSON-RPC error {event.code}"
            entry = {"on_call": on_call, "raise": message, "mcp": event.code}
            stub.setdefault("errors", []).append(entry)
        elif event.is_error:
            entry = {"on_call": on_call, "returns": _returns(answer), "is_error": True}
            stub.setdefault("results", []).append(entry)
        else:
            stub.setdefault("results", []).append({"on_call": on_call, "returns": _returns(answer)})
    return stubs
