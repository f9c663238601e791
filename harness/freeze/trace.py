"""A trace of a real agent run, read back for ``harness freeze --trace``: its model calls
as recorded calls, as a cassette's would be.

The file is OTLP JSON (``ExportTraceServiceRequest`` in protobuf's JSON mapping, one per
line as a collector's file exporter writes them, or one whole object). A model call is a
span whose ``gen_ai.operation.name`` is ``chat`` (or ``text_completion``) or whose
OpenInference kind is ``LLM``; its messages are read from whichever convention the
instrumentation wrote:

- the current GenAI conventions: ``gen_ai.input.messages`` / ``gen_ai.output.messages``
  (JSON arrays of role and parts), ``gen_ai.system_instructions``, ``gen_ai.tool.definitions``;
- the older ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` attributes (and
  ``llm.request.functions.N.*`` for the tools);
- OpenInference's ``llm.input_messages.N.message.*`` / ``llm.output_messages.N.message.*``
  (and ``llm.tools.N.tool.json_schema``).

Each call becomes a Chat Completions request and answer, so the rest of freeze (script,
stubs, the replay check) is the cassette's. The model calls are taken in the order they
started, whichever trace they belong to (an instrumented client with no agent span around
it makes a trace per call).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.freeze.recorded import FreezeError, RecordedCall
from harness.wires import wire_named

__all__ = ["read_trace"]

_MODEL_CALLS = ("chat", "text_completion", "generate_content")
_NOT_OTLP = (
    "is not an OTLP JSON trace (an ExportTraceServiceRequest with resourceSpans, as a "
    "collector's file exporter writes it)"
)


@dataclass
class _Span:
    start: int
    scope: str
    attributes: dict[str, Any]
    trace: str = ""


def _value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as Python."""
    if not isinstance(value, dict) or not value:
        return None
    kind, inner = next(iter(value.items()))
    if kind == "arrayValue":
        return [_value(v) for v in (inner or {}).get("values", [])]
    if kind == "kvlistValue":
        return {kv.get("key"): _value(kv.get("value")) for kv in (inner or {}).get("values", [])}
    if kind == "intValue":
        return int(inner)
    if kind == "bytesValue":
        return base64.b64decode(inner)
    return inner


def _requests(text: str, shown: str) -> list[tuple[int, dict[str, Any]]]:
    """(line, request) of each ``ExportTraceServiceRequest`` in the file."""
    try:
        whole = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        return [(1, whole)]
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            found.append((number, json.loads(line)))
        except ValueError as exc:
            raise FreezeError(f"{shown}:{number}: {_NOT_OTLP} ({exc})") from None
    return found


def _attributes(given: Any) -> dict[str, Any]:
    return {kv.get("key"): _value(kv.get("value")) for kv in given or []}


# The GenAI conventions' events that carry messages: the current one holds the span's
# content attributes; the older ones are a message each (their role in the name).
_DETAILS = "gen_ai.client.inference.operation.details"
_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def _with_events(attributes: dict[str, Any], events: list[Any]) -> None:
    """Read the messages a span's events carry into its attributes, as the attributes
    the readers know: ``gen_ai.input.messages`` and the rest, or ``gen_ai.prompt.N`` /
    ``gen_ai.completion.N`` of the older per-message events."""
    prompts = completions = 0
    for event in events:
        name, given = event.get("name"), _attributes(event.get("attributes"))
        if name == _DETAILS:
            for key, value in given.items():
                attributes.setdefault(key, value)
        elif name in _MESSAGE_EVENTS or name == "gen_ai.choice":
            if name == "gen_ai.choice":
                prefix, completions = f"gen_ai.completion.{completions}", completions + 1
                message = given.get("message")
                given = {
                    **given,
                    **(json.loads(message) if isinstance(message, str) else message or {}),
                }
                given.setdefault("role", "assistant")
            else:
                prefix, prompts = f"gen_ai.prompt.{prompts}", prompts + 1
                given.setdefault("role", _MESSAGE_EVENTS[name])
                if "id" in given and given["role"] == "tool":
                    given["tool_call_id"] = given.pop("id")
            calls = given.pop("tool_calls", None)
            for key, value in given.items():
                if key in ("role", "content", "tool_call_id", "finish_reason"):
                    attributes[f"{prefix}.{key}"] = value if key != "content" else _text(value)
            for number, call in enumerate(
                json.loads(calls) if isinstance(calls, str) else calls or []
            ):
                function = call.get("function") or {}
                attributes[f"{prefix}.tool_calls.{number}.id"] = call.get("id")
                attributes[f"{prefix}.tool_calls.{number}.name"] = function.get("name")
                attributes[f"{prefix}.tool_calls.{number}.arguments"] = function.get("arguments")


def _spans(text: str, shown: str) -> list[_Span]:
    spans = []
    for line, request in _requests(text, shown):
        if not isinstance(request, dict) or not isinstance(request.get("resourceSpans"), list):
            raise FreezeError(f"{shown}:{line}: {_NOT_OTLP}")
        for resource in request["resourceSpans"]:
            for scoped in resource.get("scopeSpans") or []:
                scope = (scoped.get("scope") or {}).get("name") or ""
                for span in scoped.get("spans") or []:
                    attributes = _attributes(span.get("attributes"))
                    _with_events(attributes, span.get("events") or [])
                    start = int(span.get("startTimeUnixNano") or 0)
                    trace = str(span.get("traceId") or "")
                    spans.append(_Span(start, scope, attributes, trace))
    return spans


def _is_model_call(attributes: dict[str, Any]) -> bool:
    return (
        attributes.get("gen_ai.operation.name") in _MODEL_CALLS
        or attributes.get("openinference.span.kind") == "LLM"
    )


def _indexed(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.N.rest`` attributes as a list (by N) of ``{rest: value}``."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix + "."):
            continue
        number, _, rest = key[len(prefix) + 1 :].partition(".")
        if number.isdigit():
            found.setdefault(int(number), {})[rest] = value
    return [found[n] for n in sorted(found)]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value or {}, ensure_ascii=False)


def _call(call_id: Any, name: Any, arguments: Any) -> dict[str, Any]:
    function = {"name": name, "arguments": _arguments(arguments)}
    return {"id": call_id, "type": "function", "function": function}


# -- the current GenAI conventions: role and parts ----------------------------------------


def _from_parts(messages: Any) -> list[dict[str, Any]]:
    """Chat Completions messages of ``gen_ai.input.messages`` / ``.output.messages``."""
    if isinstance(messages, str):
        messages = json.loads(messages)
    out: list[dict[str, Any]] = []
    for message in messages or []:
        role = message.get("role")
        texts, calls = [], []
        for part in message.get("parts") or []:
            kind = part.get("type")
            if kind == "text":
                texts.append(part.get("content") or "")
            elif kind == "tool_call":
                calls.append(_call(part.get("id"), part.get("name"), part.get("arguments")))
            elif kind == "tool_call_response":
                # pydantic-ai sends results in a user message; Chat Completions in tool ones.
                content = _text(part.get("response", part.get("result", "")))
                out.append({"role": "tool", "tool_call_id": part.get("id"), "content": content})
        if role == "assistant":
            reply: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
            if calls:
                reply["tool_calls"] = calls
            if message.get("finish_reason"):
                reply["finish_reason"] = message["finish_reason"]
            out.append(reply)
        elif texts:
            out.append({"role": "system" if role == "system" else role, "content": "".join(texts)})
    return out


def _flat_tools(definitions: Any) -> list[dict[str, Any]]:
    """Chat Completions tools of ``gen_ai.tool.definitions`` (flat or nested)."""
    if isinstance(definitions, str):
        definitions = json.loads(definitions)
    tools = []
    for tool in definitions or []:
        function = tool.get("function", tool)
        tools.append(
            {"type": "function", "function": {k: v for k, v in function.items() if k != "type"}}
        )
    return tools


def _current(attributes: dict[str, Any]) -> tuple[list[Any], list[Any], list[Any]] | None:
    if "gen_ai.input.messages" not in attributes:
        return None
    messages = _from_parts(attributes["gen_ai.input.messages"])
    instructions = attributes.get("gen_ai.system_instructions")
    if instructions:
        parts = json.loads(instructions) if isinstance(instructions, str) else instructions
        text = "".join(p.get("content") or "" for p in parts if p.get("type") == "text")
        messages.insert(0, {"role": "system", "content": text})
    output = _from_parts(attributes.get("gen_ai.output.messages") or [])
    return messages, output, _flat_tools(attributes.get("gen_ai.tool.definitions"))


# -- numbered attributes: the older GenAI ones and OpenInference's -------------------------


def _numbered(entry: dict[str, Any], prefix: str, call_prefix: str) -> dict[str, Any]:
    """One message of numbered attributes (``prefix`` before role/content, ``call_prefix``
    before each call's id/name/arguments)."""
    role = entry.get(f"{prefix}role")
    message: dict[str, Any] = {"role": role, "content": entry.get(f"{prefix}content")}
    if message["content"] is None:
        texts = _indexed(entry, f"{prefix}contents")
        message["content"] = "".join(t.get("message_content.text") or "" for t in texts) or None
    calls = _indexed(entry, f"{prefix}tool_calls")
    if calls:
        message["tool_calls"] = [
            _call(
                c.get(f"{call_prefix}id"),
                c.get(f"{call_prefix}function.name", c.get(f"{call_prefix}name")),
                c.get(f"{call_prefix}function.arguments", c.get(f"{call_prefix}arguments")),
            )
            for c in calls
        ]
    call_id = entry.get(f"{prefix}tool_call_id")
    if call_id is not None:
        message["tool_call_id"] = call_id
        message["content"] = message["content"] or ""
    if entry.get("finish_reason"):
        message["finish_reason"] = entry["finish_reason"]
    return message


def _older(attributes: dict[str, Any]) -> tuple[list[Any], list[Any], list[Any]] | None:
    prompts = _indexed(attributes, "gen_ai.prompt")
    if not prompts:
        return None
    messages = [_numbered(p, "", "") for p in prompts]
    output = [_numbered(c, "", "") for c in _indexed(attributes, "gen_ai.completion")]
    tools: list[dict[str, Any]] = []
    for given in _indexed(attributes, "llm.request.functions"):
        function = {k: v for k, v in given.items() if v is not None}
        if isinstance(function.get("parameters"), str):
            function["parameters"] = json.loads(function["parameters"])
        tools.append({"type": "function", "function": function})
    return messages, output, tools


def _openinference(attributes: dict[str, Any]) -> tuple[list[Any], list[Any], list[Any]] | None:
    inputs = _indexed(attributes, "llm.input_messages")
    if not inputs:
        return None
    messages = [_numbered(m, "message.", "tool_call.") for m in inputs]
    outputs = [
        _numbered(m, "message.", "tool_call.") for m in _indexed(attributes, "llm.output_messages")
    ]
    if outputs and attributes.get("llm.finish_reason"):
        outputs[0].setdefault("finish_reason", attributes["llm.finish_reason"])
    tools = []
    for tool in _indexed(attributes, "llm.tools"):
        schema = tool.get("tool.json_schema")
        tools.extend(_flat_tools([json.loads(schema) if isinstance(schema, str) else schema]))
    return messages, outputs, tools


_READERS = (_current, _older, _openinference)


# -- the calls --------------------------------------------------------------------------------


def _hint(scopes: set[str]) -> str:
    """Which setting of which instrumentation records message contents."""
    hints = []
    if any("openai_v2" in s or "util.genai" in s for s in scopes):
        hints.append(
            "opentelemetry-instrumentation-openai-v2 records them on its spans with "
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only and "
            "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental"
        )
    if any(s.startswith("openinference") for s in scopes):
        hints.append(
            "OpenInference records them unless OPENINFERENCE_HIDE_INPUTS / _OUTPUTS / "
            "_INPUT_MESSAGES / _OUTPUT_MESSAGES is set: unset them"
        )
    if any("pydantic" in s or "logfire" in s for s in scopes):
        hints.append("pydantic-ai records them with InstrumentationSettings(include_content=True)")
    if "harness" in scopes:
        hints.append("harness run records them with --otel-content")
    if not hints:
        hints.append(
            "turn on your instrumentation's content capture (openai-v2: "
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only; OpenInference: "
            "unset OPENINFERENCE_HIDE_INPUTS/OUTPUTS; pydantic-ai: include_content=True)"
        )
    return "; ".join(hints)


def _usage(attributes: dict[str, Any]) -> dict[str, int] | None:
    prompt = attributes.get("gen_ai.usage.input_tokens", attributes.get("llm.token_count.prompt"))
    completion = attributes.get(
        "gen_ai.usage.output_tokens", attributes.get("llm.token_count.completion")
    )
    if prompt is None or completion is None:
        return None
    return {"prompt_tokens": int(prompt), "completion_tokens": int(completion)}


def _recorded(
    number: int, span: _Span, read: tuple[list[Any], list[Any], list[Any]]
) -> RecordedCall:
    messages, outputs, tools = read
    model = span.attributes.get("gen_ai.request.model") or span.attributes.get("llm.model_name")
    body: dict[str, Any] = {"model": model or "unknown", "messages": messages}
    if tools:
        body["tools"] = tools
    wire = wire_named("chat")
    reply = None
    if outputs:
        message = {k: v for k, v in outputs[0].items() if k != "finish_reason"}
        finish = "tool_calls" if message.get("tool_calls") else outputs[0].get("finish_reason")
        if finish not in ("stop", "length", "tool_calls", "content_filter"):
            finish = "stop"
        answer: dict[str, Any] = {
            "object": "chat.completion",
            "model": model or "unknown",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        usage = _usage(span.attributes)
        if usage is not None:
            answer["usage"] = usage
        reply = wire.read_reply(answer, False)
    error = None
    if reply is None:
        why = span.attributes.get("error.type") or "no reply"
        error = {"status": 500, "message": str(why)}
    return RecordedCall(number, "chat", body, reply, error, wire.normalized(body))


def _infer_tools(calls: list[RecordedCall]) -> bool:
    """Give calls whose trace has no tool definitions the tools their replies called, with
    the arguments they were given as (untyped) properties; True when it did."""
    if any(call.body.get("tools") for call in calls):
        return False
    properties: dict[str, dict[str, Any]] = {}
    for call in calls:
        for _, name, arguments in call.reply.tool_calls if call.reply else []:
            try:
                given = json.loads(arguments) if isinstance(arguments, str) else arguments
            except ValueError:
                given = {}
            known = properties.setdefault(name, {})
            for key in given if isinstance(given, dict) else {}:
                known.setdefault(key, {})
    if not properties:
        return False
    tools = [
        {
            "type": "function",
            "function": {"name": name, "parameters": {"type": "object", "properties": props}},
        }
        for name, props in properties.items()
    ]
    for call in calls:
        call.body["tools"] = tools
    return True


def _runs(spans: list[_Span]) -> tuple[list[list[_Span]], str | None]:
    """The model calls grouped by trace, a run each, and a note; calls that are each a
    trace of their own (an instrumented client with no agent span around it) are one run."""
    traces: dict[str, list[_Span]] = {}
    for span in spans:
        traces.setdefault(span.trace, []).append(span)
    if len(traces) > 1 and all(len(calls) == 1 for calls in traces.values()):
        note = (
            "each model call is a trace of its own (no agent span around them): they are "
            "taken as one run, in the order they started"
        )
        return [spans], note
    return list(traces.values()), None


def read_trace(path: Path, shown: str) -> tuple[list[list[RecordedCall]], list[str]]:
    """The runs in the trace file at ``path`` (a trace each), their model calls in the
    order they started (numbered through the file), and notes."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FreezeError(f"cannot read trace {shown}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise FreezeError(f"{shown}: the trace is not UTF-8 text ({exc.reason})") from None
    spans = sorted(
        (s for s in _spans(text, shown) if _is_model_call(s.attributes)), key=lambda s: s.start
    )
    if not spans:
        raise FreezeError(
            f"{shown} holds no model call (no span with gen_ai.operation.name chat, or "
            "OpenInference's LLM kind): export the trace of an instrumented agent run"
        )
    groups, note = _runs(spans)
    notes = [note] if note else []
    runs: list[list[RecordedCall]] = []
    number = 0
    for group in groups:
        calls: list[RecordedCall] = []
        for span in group:
            number += 1
            read = next((r for r in (f(span.attributes) for f in _READERS) if r), None)
            if read is None:
                raise FreezeError(
                    f"{shown}: the trace's model calls carry no message contents, which "
                    f"freezing needs: {_hint({s.scope for s in spans})}; then record the run "
                    "again"
                )
            try:
                calls.append(_recorded(number, span, read))
            except (ValueError, TypeError, AttributeError) as exc:
                raise FreezeError(
                    f"{shown}: model call {number}: its messages are malformed ({exc})"
                ) from None
        if _infer_tools(calls) and not any("no tool definitions" in n for n in notes):
            notes.append(
                "the trace holds no tool definitions: the stubs take the arguments the "
                "recorded calls gave, untyped (add a schema to each tool to check them)"
            )
        runs.append(calls)
    return runs, notes
