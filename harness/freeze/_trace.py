"""A trace of a real agent run, read back for ``harness freeze --trace``: its model calls
as recorded calls, as a cassette's would be.

The file is read by ``harness.freeze._otlp`` (bounded, every level checked). A model call
is a span whose ``gen_ai.operation.name`` is ``chat`` (or ``text_completion``,
``generate_content``) or whose OpenInference kind is ``LLM``; its messages are read from
whichever convention the instrumentation wrote (``harness.freeze._conventions``): the
current GenAI conventions (``gen_ai.input.messages`` and the rest), the older
``gen_ai.prompt.N.*`` attributes, or OpenInference's ``llm.input_messages.N.*``, whatever
the vendor (OpenAI's, Anthropic's and google-genai's spans each say it their way).

Each call becomes a Chat Completions request and answer, so the rest of freeze (script,
stubs, the replay check) is the cassette's. The model calls are taken in the order they
started, whichever trace they belong to (an instrumented client with no agent span around
it makes a trace per call); a trace each is a run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness._modelwires import wire_named
from harness.freeze._conventions import Malformed, Read, read_call, usage
from harness.freeze._otlp import Span, read_spans
from harness.freeze._recorded import FreezeError, RecordedCall

__all__ = ["read_trace"]

_MODEL_CALLS = ("chat", "text_completion", "generate_content")

# The GenAI conventions' events that carry messages: the current one holds the span's
# content attributes; the older ones are a message each (their role in the name).
_DETAILS = "gen_ai.client.inference.operation.details"
_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
# Finish reasons as each vendor says them -> Chat Completions'.
_FINISH = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "content_filter": "content_filter",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
}


def _choice(given: dict[str, Any]) -> dict[str, Any]:
    """A ``gen_ai.choice`` event's attributes with its ``message`` (JSON text or a map)
    spread in."""
    message = given.get("message")
    if isinstance(message, str):
        try:
            message = json.loads(message)
        except (ValueError, RecursionError) as exc:
            raise Malformed(f"gen_ai.choice event: message is not JSON ({exc})") from None
    if message is not None and not isinstance(message, dict):
        raise Malformed("gen_ai.choice event: message: expected an object")
    return {**given, **(message or {})}


def _event_calls(calls: Any, name: str) -> list[Any]:
    if isinstance(calls, str):
        try:
            calls = json.loads(calls)
        except (ValueError, RecursionError) as exc:
            raise Malformed(f"{name} event: tool_calls is not JSON ({exc})") from None
    if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
        raise Malformed(f"{name} event: tool_calls: expected a list of call objects")
    return calls


def _with_events(attributes: dict[str, Any], events: list[tuple[str, dict[str, Any]]]) -> None:
    """Read the messages a span's events carry into its attributes, as the attributes
    the readers know: ``gen_ai.input.messages`` and the rest, or ``gen_ai.prompt.N`` /
    ``gen_ai.completion.N`` of the older per-message events."""
    prompts = completions = 0
    for name, given in events:
        if name == _DETAILS:
            for key, value in given.items():
                attributes.setdefault(key, value)
            continue
        if name not in _MESSAGE_EVENTS and name != "gen_ai.choice":
            continue
        if name == "gen_ai.choice":
            prefix, completions = f"gen_ai.completion.{completions}", completions + 1
            given = _choice(given)
            given.setdefault("role", "assistant")
        else:
            prefix, prompts = f"gen_ai.prompt.{prompts}", prompts + 1
            given = {"role": _MESSAGE_EVENTS[name], **given}
            if "id" in given and given["role"] == "tool":
                given["tool_call_id"] = given.pop("id")
        calls = given.pop("tool_calls", None)
        for key, value in given.items():
            if key in ("role", "tool_call_id", "finish_reason"):
                attributes[f"{prefix}.{key}"] = value
            elif key == "content":
                text = value if isinstance(value, str) or value is None else json.dumps(value)
                attributes[f"{prefix}.content"] = text
        for number, call in enumerate(_event_calls(calls, name) if calls is not None else []):
            function = call.get("function") or {}
            if not isinstance(function, dict):
                raise Malformed(f"{name} event: tool_calls[{number}].function: expected an object")
            attributes[f"{prefix}.tool_calls.{number}.id"] = call.get("id")
            attributes[f"{prefix}.tool_calls.{number}.name"] = function.get("name")
            attributes[f"{prefix}.tool_calls.{number}.arguments"] = function.get("arguments")


def _is_model_call(attributes: dict[str, Any]) -> bool:
    return (
        attributes.get("gen_ai.operation.name") in _MODEL_CALLS
        or attributes.get("openinference.span.kind") == "LLM"
    )


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


def _recorded(number: int, span: Span, read: Read) -> RecordedCall:
    messages, outputs, tools = read
    model = span.attributes.get("gen_ai.request.model") or span.attributes.get("llm.model_name")
    model = model if isinstance(model, str) and model else "unknown"
    body: dict[str, Any] = {"model": model, "messages": messages}
    if tools:
        body["tools"] = tools
    wire = wire_named("chat")
    reply = None
    if outputs:
        message = {k: v for k, v in outputs[0].items() if k != "finish_reason"}
        finish = "tool_calls" if message.get("tool_calls") else outputs[0].get("finish_reason")
        answer: dict[str, Any] = {
            "object": "chat.completion",
            "model": model,
            "choices": [
                {"index": 0, "message": message, "finish_reason": _FINISH.get(str(finish), "stop")}
            ],
        }
        counted = usage(span.attributes)
        if counted is not None:
            answer["usage"] = counted
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
            except (ValueError, RecursionError):
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


def _runs(spans: list[Span]) -> tuple[list[list[Span]], str | None]:
    """The model calls grouped by trace, a run each, and a note; calls that are each a
    trace of their own (an instrumented client with no agent span around them) are one run."""
    traces: dict[str, list[Span]] = {}
    for span in spans:
        traces.setdefault(span.trace, []).append(span)
    if len(traces) > 1 and all(len(calls) == 1 for calls in traces.values()):
        note = (
            "each model call is a trace of its own (no agent span around them): they are "
            "taken as one run, in the order they started"
        )
        return [spans], note
    return list(traces.values()), None


def _call(shown: str, number: int, span: Span, scopes: set[str]) -> RecordedCall:
    """Model call ``number`` of the file, read from ``span``; a FreezeError naming the span
    when its contents are missing or malformed."""
    where = f"{shown}: model call {number} (span {span.name!r}, line {span.line})"
    try:
        _with_events(span.attributes, span.events)
        read = read_call(span.attributes)
        if read is None:
            raise FreezeError(
                f"{shown}: the trace's model calls carry no message contents, which "
                f"freezing needs: {_hint(scopes)}; then record the run again"
            )
        return _recorded(number, span, read)
    except Malformed as exc:
        raise FreezeError(f"{where}: {exc}") from None
    except (ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError) as exc:
        # What the checks above did not foresee is still the trace's, said in one line.
        raise FreezeError(
            f"{where}: its messages are malformed ({type(exc).__name__}: {exc})"
        ) from None


def read_trace(path: Path, shown: str) -> tuple[list[list[RecordedCall]], list[str]]:
    """The runs in the trace file at ``path`` (a trace each), their model calls in the
    order they started (numbered through the file), and notes."""
    every = read_spans(path, shown)
    # Sorted stably: calls that started at the same time keep the file's order.
    spans = sorted((s for s in every if _is_model_call(s.attributes)), key=lambda s: s.start)
    if not spans:
        raise FreezeError(
            f"{shown} holds no model call (no span with gen_ai.operation.name chat, or "
            "OpenInference's LLM kind): export the trace of an instrumented agent run"
        )
    scopes = {s.scope for s in spans}
    groups, note = _runs(spans)
    notes = [note] if note else []
    runs: list[list[RecordedCall]] = []
    number = 0
    for group in groups:
        calls: list[RecordedCall] = []
        for span in group:
            number += 1
            calls.append(_call(shown, number, span, scopes))
        if _infer_tools(calls) and not any("no tool definitions" in n for n in notes):
            notes.append(
                "the trace holds no tool definitions: the stubs take the arguments the "
                "recorded calls gave, untyped (add a schema to each tool to check them)"
            )
        runs.append(calls)
    return runs, notes
