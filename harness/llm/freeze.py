"""``harness freeze``: turn a recorded cassette into an editable scripted scenario.

The scenario replays the recorded run with no cassette: the model's replies
become ``llm.script`` (with their call ids), the tools become stubs that return,
call by call, what the recorded tools returned, and ``expect`` holds the recorded
outcome. It is a starting point for edge cases: edit a reply, a tool result, add
an error step.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from harness.errors import HarnessError
from harness.files import atomic_write
from harness.llm.cassettes.format import (
    CassetteFormatError,
    LoadedInteraction,
    load_cassette_file,
)
from harness.llm.cassettes.matching import parse_json_body
from harness.messages import parse_arguments

__all__ = ["FreezeError", "freeze", "freeze_main"]

_TEMPLATE_MARKERS = ("{{", "{%", "{#")
# agentbuilder spends two iterations per reply (request, then tools or completion).
_DEFAULT_MAX_ITERATIONS = 80


class FreezeError(HarnessError):
    """A cassette that cannot be frozen into a scenario."""


class _Dumper(yaml.SafeDumper):
    """Readable scenario YAML: block style, multi-line strings as literal blocks."""


def _str(dumper: Any, data: str) -> Any:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str)


# -- reading the recorded replies --------------------------------------------------------------


def _sse_data(text: str) -> list[dict[str, Any]]:
    events = []
    for line in text.splitlines():
        if line.startswith("data:"):
            payload = line[5:].strip()
            if payload and payload != "[DONE]":
                try:
                    events.append(json.loads(payload))
                except ValueError:
                    continue
    return events


def _chat_reply(body: Any, streamed: bool) -> dict[str, Any]:
    """-> {content, tool_calls: [(id, name, arguments text)], finish_reason, usage}."""
    if not streamed:
        choice = (body.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        calls = []
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            calls.append((call.get("id"), function.get("name", ""), function.get("arguments")))
        return {
            "content": message.get("content") or None,
            "tool_calls": calls,
            "finish_reason": choice.get("finish_reason"),
            "usage": body.get("usage"),
        }
    parts: list[str] = []
    slots: dict[int, dict[str, Any]] = {}
    finish = None
    usage = None
    for chunk in body:
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if delta.get("content"):
                parts.append(delta["content"])
            for tc in delta.get("tool_calls") or []:
                slot = slots.setdefault(tc.get("index", 0), {"id": None, "name": "", "args": []})
                if tc.get("id") and not slot["id"]:
                    slot["id"] = tc["id"]
                function = tc.get("function") or {}
                # Some providers resend the name in every chunk: keep it once.
                if function.get("name") and function["name"] != slot["name"]:
                    slot["name"] += function["name"]
                if function.get("arguments"):
                    slot["args"].append(function["arguments"])
            if choice.get("finish_reason"):
                finish = choice["finish_reason"]
    calls = [(s["id"], s["name"], "".join(s["args"])) for _, s in sorted(slots.items())]
    content = "".join(parts) or None
    return {"content": content, "tool_calls": calls, "finish_reason": finish, "usage": usage}


def _responses_reply(body: Any, streamed: bool) -> dict[str, Any]:
    if streamed:
        final = next(
            (
                e.get("response")
                for e in reversed(body)
                if e.get("type") in ("response.completed", "response.incomplete")
            ),
            None,
        )
        if final is None:
            done = [e["item"] for e in body if e.get("type") == "response.output_item.done"]
            final = {"output": done}
        body = final
    texts: list[str] = []
    calls = []
    for item in body.get("output") or []:
        if item.get("type") == "message":
            texts.extend(p.get("text") or p.get("refusal") or "" for p in item.get("content") or [])
        elif item.get("type") == "function_call":
            calls.append((item.get("call_id"), item.get("name", ""), item.get("arguments")))
    usage = body.get("usage")
    if usage:
        usage = {
            "prompt_tokens": usage.get("input_tokens", 0),
            "completion_tokens": usage.get("output_tokens", 0),
            "total_tokens": usage.get("total_tokens"),
        }
    truncated = body.get("status") == "incomplete"
    return {
        "content": "".join(texts) or None,
        "tool_calls": calls,
        "finish_reason": "length" if truncated and not calls else None,
        "usage": usage,
    }


def _response_body(interaction: LoadedInteraction) -> tuple[Any, bool]:
    raw = (interaction.response.get("body") or {}).get("string") or b""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    stripped = text.lstrip()
    if stripped.startswith("data:") or stripped.startswith("event:"):
        return _sse_data(text), True
    try:
        return json.loads(text), False
    except ValueError:
        raise FreezeError(
            f"a recorded response is neither JSON nor Server-Sent Events: {text[:80]!r}"
        ) from None


# -- building the scenario ---------------------------------------------------------------------


def _returns(text: str) -> str:
    # Stub results are Jinja templates: a recorded text that looks like one stays literal.
    if any(marker in text for marker in _TEMPLATE_MARKERS):
        return "{% raw %}" + text + "{% endraw %}"
    return text


def _tool_specs(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    specs: dict[str, dict[str, Any]] = {}
    for tool in tools or []:
        function = tool.get("function") if "function" in tool else tool
        if not isinstance(function, dict) or not function.get("name"):
            continue
        spec: dict[str, Any] = {}
        if function.get("description"):
            spec["description"] = function["description"]
        spec["schema"] = function.get("parameters") or {"type": "object", "properties": {}}
        if function.get("strict"):
            spec["strict"] = True
        specs[function["name"]] = spec
    return specs


def _conversation_start(body: dict[str, Any], api: str) -> tuple[str | None, str, list[Any]]:
    """(system, input, history) from the first recorded request."""
    if api == "responses":
        items = body.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        messages = [i for i in items or [] if isinstance(i, dict) and i.get("role")]
        if len(messages) != len(items or []):
            raise FreezeError("the first request already holds model output: cannot freeze it")
        system = body.get("instructions")
    else:
        messages = list(body.get("messages") or [])
        system = None
    rest = []
    for message in messages:
        if message.get("role") in ("system", "developer") and system is None and not rest:
            system = _text(message.get("content"))
        else:
            rest.append(message)
    if not rest or rest[-1].get("role") != "user":
        raise FreezeError("the first recorded request does not end with a user message")
    return system, _text(rest[-1].get("content")) or "", rest[:-1]


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def _tool_outputs(bodies: list[dict[str, Any]], api: str) -> dict[str, str]:
    """call id -> the tool result sent back to the model (first time it was sent)."""
    outputs: dict[str, str] = {}
    for body in bodies:
        if api == "responses":
            for item in body.get("input") or []:
                if isinstance(item, dict) and item.get("type") == "function_call_output":
                    outputs.setdefault(item.get("call_id", ""), _text(item.get("output")) or "")
        else:
            for message in body.get("messages") or []:
                if message.get("role") == "tool":
                    content = _text(message.get("content")) or ""
                    outputs.setdefault(message.get("tool_call_id", ""), content)
    return outputs


def freeze(cassette_path: str | Path) -> str:
    """The scenario YAML (text) that replays the run recorded in ``cassette_path``."""
    path = Path(cassette_path)
    try:
        interactions = load_cassette_file(path)
    except (OSError, CassetteFormatError) as exc:
        raise FreezeError(f"cannot read cassette {path}: {exc}") from None
    calls = []
    for interaction in interactions:
        route = urlparse(interaction.request.get("uri", "")).path
        if route.endswith("/chat/completions"):
            api = "chat"
        elif route.endswith("/responses"):
            api = "responses"
        else:
            continue
        request = interaction.request_json
        if request is None:
            request = parse_json_body(interaction.request.get("body"))
        if not isinstance(request, dict):
            raise FreezeError(f"a recorded request to {route} has no JSON body")
        calls.append((api, request, interaction))
    if not calls:
        raise FreezeError(f"{path} records no Chat Completions or Responses API request")
    apis = {api for api, _, _ in calls}
    if len(apis) > 1:
        raise FreezeError(f"{path} mixes Chat Completions and Responses API requests")
    api = calls[0][0]
    first = calls[0][1]
    system, user_input, history = _conversation_start(first, api)
    tools = _tool_specs(first.get("tools") or [])

    script: list[dict[str, Any]] = []
    tool_order: list[tuple[str, str]] = []  # (call id, tool name) in the model's order
    final_content: str | None = None
    error: dict[str, Any] | None = None
    for _, _request, interaction in calls:
        status = interaction.response.get("status", {}).get("code", 200)
        body, streamed = _response_body(interaction)
        if status >= 400:
            details = body.get("error") if isinstance(body, dict) else None
            message = (details or {}).get("message") if isinstance(details, dict) else None
            error = {"status": status, "message": message or f"HTTP {status}"}
            script.append({"error": dict(error)})
            continue
        error = None
        reply = _chat_reply(body, streamed) if api == "chat" else _responses_reply(body, streamed)
        step: dict[str, Any] = {}
        if reply["content"] is not None:
            step["content"] = reply["content"]
        if reply["tool_calls"]:
            step["tool_calls"] = []
            for call_id, name, arguments in reply["tool_calls"]:
                args, raw = parse_arguments(arguments)
                entry: dict[str, Any] = {"id": call_id, "name": name}
                if raw is not None:
                    entry["raw_arguments"] = raw
                else:
                    entry["arguments"] = args
                step["tool_calls"].append(entry)
                tool_order.append((call_id, name))
                if name not in tools:
                    step["unknown_tools"] = True
        if reply["finish_reason"] == "length" and not reply["tool_calls"]:
            step["finish_reason"] = "length"
        usage = reply.get("usage")
        if isinstance(usage, dict) and usage.get("prompt_tokens") is not None:
            step["usage"] = {
                "prompt_tokens": int(usage.get("prompt_tokens") or 0),
                "completion_tokens": int(usage.get("completion_tokens") or 0),
            }
        script.append(step)
        final_content = reply["content"] if not reply["tool_calls"] else None

    outputs = _tool_outputs([request for _, request, _ in calls], api)
    counts: dict[str, int] = {}
    for call_id, name in tool_order:
        if call_id not in outputs or name not in tools:
            continue
        counts[name] = counts.get(name, 0) + 1
        tools[name].setdefault("results", []).append(
            {"on_call": counts[name], "returns": _returns(outputs[call_id])}
        )

    replies = sum(1 for step in script if "error" not in step)
    scenario: dict[str, Any] = {"description": f"frozen from {path.name} by harness freeze"}
    agent: dict[str, Any] = {}
    if system is not None:
        agent["system"] = system
    if 2 * replies + 2 > _DEFAULT_MAX_ITERATIONS:
        agent["max_iterations"] = 2 * replies + 2
    if agent:
        scenario["agent"] = agent
    scenario["input"] = user_input
    if history:
        scenario["history"] = history
    if tools:
        scenario["tools"] = tools
    scenario["llm"] = {"script": script}
    expect: dict[str, Any] = {}
    if error is not None:
        expect["termination"] = "llm_error"
        expect["final"] = {"error": {"status": error["status"]}}
    else:
        expect["termination"] = "completed"
        expect["llm_calls"] = len(script)
        if tool_order:
            expect["tool_calls"] = {"sequence": [name for _, name in tool_order], "exact": True}
        if final_content is not None:
            expect["final"] = {"equals": final_content}
    expect["script_consumed"] = True
    scenario["expect"] = expect
    header = (
        f"# Frozen from {path.name} by `harness freeze`:\n"
        "# a scripted scenario that replays the recorded run with no cassette.\n"
        "# Edit replies and tool results to make edge cases.\n"
    )
    body = yaml.dump(scenario, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
    return header + body


def freeze_main(argv: Sequence[str] | None = None) -> int:
    """``harness freeze CASSETTE [-o SCENARIO]`` (stdout without -o)."""
    parser = argparse.ArgumentParser(
        prog="harness freeze",
        description="Turn a recorded cassette into an editable scripted scenario.",
    )
    parser.add_argument("cassette", type=Path, help="a vcrpy cassette (YAML)")
    parser.add_argument("-o", "--output", type=Path, help="the *.scenario.yaml file to write")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        text = freeze(args.cassette)
        if args.output is not None:
            # Check it before writing: a frozen scenario must load as written.
            from harness.scenario.loader import load_scenario_text

            load_scenario_text(text, args.output.resolve())
    except HarnessError as exc:
        print(f"harness freeze: {exc}", file=sys.stderr)
        return 2
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        atomic_write(args.output, text)
    except OSError as exc:
        # Like harness report: an output that cannot be written is exit 3, not a bug.
        print(f"harness freeze: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 3
    print(f"harness freeze: wrote {args.output}", file=sys.stderr)
    return 0
