"""The conventions instrumentations write a model call's messages in, read as Chat
Completions messages (``harness freeze --trace``).

- the current GenAI conventions: ``gen_ai.input.messages`` / ``gen_ai.output.messages``
  (JSON arrays of role and parts), ``gen_ai.system_instructions``, ``gen_ai.tool.definitions``;
- the older ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` attributes (and
  ``llm.request.functions.N.*`` for the tools);
- OpenInference's ``llm.input_messages.N.message.*`` / ``llm.output_messages.N.message.*``
  (and ``llm.tools.N.tool.json_schema``), whose instrumentations write each vendor's own
  forms: a tool's schema as Anthropic's ``input_schema`` or Gemini's ``parameters``, a
  Gemini model turn as ``role: model``, a Gemini function response as its JSON.

A value of the wrong kind is a ``Malformed`` saying which attribute and what it should
be; the caller names the span.
"""

from __future__ import annotations

import json
from typing import Any

from harness._errors import describe
from harness.wires._gemini import result_text

__all__ = ["Malformed", "Read", "read_call", "usage"]

# (messages, outputs, tools) of one model call, as Chat Completions dicts.
Read = tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]

# The roles vendors use for what Chat Completions calls so.
_ROLES = {"model": "assistant", "developer": "system", "human": "user", "ai": "assistant"}
# Where a tool definition's JSON Schema is, by vendor: OpenAI's and Gemini's `parameters`,
# Anthropic's `input_schema`, google-genai's `parameters_json_schema`.
_SCHEMA_KEYS = (
    "parameters",
    "input_schema",
    "inputSchema",
    "parameters_json_schema",
    "parametersJsonSchema",
)


class Malformed(Exception):
    """An attribute of a model call's span that does not hold what its convention says."""


def _expected(where: str, what: str, value: Any) -> Malformed:
    return Malformed(f"{where}: expected {what}, got {describe(value)}")


def _json(value: Any, where: str) -> Any:
    """An attribute holding JSON text (or, from a kvlist or array value, the value itself)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError) as exc:
        raise Malformed(f"{where} is not JSON ({exc})") from None


def _objects(value: Any, where: str, what: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _expected(where, f"a list of {what}s", value)
    for n, item in enumerate(value):
        if not isinstance(item, dict):
            raise _expected(f"{where}[{n}]", f"a {what} object", item)
    return value


def _text_or_none(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _expected(where, "a string", value)
    return value


def _role(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _expected(where, "a string", value)
    return _ROLES.get(value, value)


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value or {}, ensure_ascii=False)


def _call(call_id: Any, name: Any, arguments: Any, where: str) -> dict[str, Any]:
    call_id = _text_or_none(call_id, f"{where}.id")
    if not isinstance(name, str) or not name:
        raise _expected(f"{where}.name", "a tool's name", name)
    function = {"name": name, "arguments": _arguments(arguments)}
    return {"id": call_id, "type": "function", "function": function}


def _result(content: Any, gemini: bool) -> str:
    """A tool result's text: a Gemini function response's JSON read as the Gemini wire
    reads it (a lone ``result`` / ``output`` / ... key is its text)."""
    if not isinstance(content, str):
        return json.dumps(content, ensure_ascii=False)
    if gemini:
        try:
            return result_text(json.loads(content))
        except (ValueError, RecursionError):
            return content
    return content


# -- the current GenAI conventions: role and parts ----------------------------------------


def _from_parts(value: Any, where: str) -> list[dict[str, Any]]:
    """Chat Completions messages of ``gen_ai.input.messages`` / ``.output.messages``."""
    out: list[dict[str, Any]] = []
    for n, message in enumerate(_objects(_json(value, where), where, "message")):
        at = f"{where}[{n}]"
        role = _role(message.get("role"), f"{at}.role")
        texts, calls = [], []
        for p, part in enumerate(_objects_or(message.get("parts"), f"{at}.parts")):
            kind = part.get("type")
            if kind == "text":
                texts.append(_text_or_none(part.get("content"), f"{at}.parts[{p}].content") or "")
            elif kind == "tool_call":
                calls.append(
                    _call(
                        part.get("id"), part.get("name"), part.get("arguments"), f"{at}.parts[{p}]"
                    )
                )
            elif kind == "tool_call_response":
                # pydantic-ai sends results in a user message; Chat Completions in tool ones.
                call_id = _text_or_none(part.get("id"), f"{at}.parts[{p}].id")
                content = part.get("response", part.get("result", ""))
                content = content if isinstance(content, str) else json.dumps(content)
                out.append({"role": "tool", "tool_call_id": call_id, "content": content})
        if role == "assistant":
            reply: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
            if calls:
                reply["tool_calls"] = calls
            if isinstance(message.get("finish_reason"), str):
                reply["finish_reason"] = message["finish_reason"]
            out.append(reply)
        elif texts:
            out.append({"role": role, "content": "".join(texts)})
    return out


def _objects_or(value: Any, where: str) -> list[dict[str, Any]]:
    """A message's parts: a list of objects (checked)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _expected(where, "a list", value)
    for n, item in enumerate(value):
        if not isinstance(item, dict):
            raise _expected(f"{where}[{n}]", "an object", item)
    return value


def _flat_tools(value: Any, where: str) -> list[dict[str, Any]]:
    """Chat Completions tools of tool definitions in any vendor's form: OpenAI's nested
    ``function`` or flat, Anthropic's ``input_schema``, Gemini's ``parameters``."""
    tools = []
    for n, tool in enumerate(_objects(_json(value, where), where, "tool")):
        function = tool.get("function", tool)
        if not isinstance(function, dict):
            raise _expected(f"{where}[{n}].function", "an object", function)
        name = function.get("name")
        if not isinstance(name, str):
            raise _expected(f"{where}[{n}].name", "a string", name)
        schema = next((function[k] for k in _SCHEMA_KEYS if function.get(k) is not None), None)
        if schema is not None and not isinstance(schema, dict):
            raise _expected(f"{where}[{n}] schema", "an object", schema)
        definition: dict[str, Any] = {"name": name}
        description = function.get("description")
        if description is not None:
            definition["description"] = _text_or_none(description, f"{where}[{n}].description")
        if schema is not None:
            definition["parameters"] = schema
        tools.append({"type": "function", "function": definition})
    return tools


def _current(attributes: dict[str, Any]) -> Read | None:
    if "gen_ai.input.messages" not in attributes:
        return None
    messages = _from_parts(attributes["gen_ai.input.messages"], "gen_ai.input.messages")
    instructions = attributes.get("gen_ai.system_instructions")
    if instructions:
        where = "gen_ai.system_instructions"
        parts = _json(instructions, where)
        if not isinstance(parts, list):
            raise _expected(where, "a list of parts", parts)
        texts = [
            _text_or_none(p.get("content"), f"{where}[{n}].content") or ""
            for n, p in enumerate(_objects(parts, where, "part"))
            if p.get("type") == "text"
        ]
        messages.insert(0, {"role": "system", "content": "".join(texts)})
    output = _from_parts(attributes.get("gen_ai.output.messages") or [], "gen_ai.output.messages")
    tools = _flat_tools(attributes.get("gen_ai.tool.definitions"), "gen_ai.tool.definitions")
    return messages, output, tools


# -- numbered attributes: the older GenAI ones and OpenInference's -------------------------


def _indexed(attributes: dict[str, Any], prefix: str) -> list[tuple[str, dict[str, Any]]]:
    """``prefix.N.rest`` attributes as a list (by N) of (``prefix.N``, ``{rest: value}``)."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if not key.startswith(prefix + "."):
            continue
        number, _, rest = key[len(prefix) + 1 :].partition(".")
        if number.isdigit():
            found.setdefault(int(number), {})[rest] = value
    return [(f"{prefix}.{n}", found[n]) for n in sorted(found)]


def _numbered(
    entry: tuple[str, dict[str, Any]], prefix: str, call_prefix: str, gemini: bool
) -> dict[str, Any]:
    """One message of numbered attributes (``prefix`` before role/content, ``call_prefix``
    before each call's id/name/arguments)."""
    at, given = entry
    role = _role(given.get(f"{prefix}role"), f"{at}.{prefix}role")
    content = _text_or_none(given.get(f"{prefix}content"), f"{at}.{prefix}content")
    message: dict[str, Any] = {"role": role, "content": content}
    if content is None:
        texts = _indexed(given, f"{prefix}contents")
        message["content"] = (
            "".join(
                _text_or_none(t.get("message_content.text"), f"{at}.{p}.message_content.text") or ""
                for p, t in texts
            )
            or None
        )
    calls = _indexed(given, f"{prefix}tool_calls")
    if calls:
        message["tool_calls"] = [
            _call(
                c.get(f"{call_prefix}id"),
                c.get(f"{call_prefix}function.name", c.get(f"{call_prefix}name")),
                c.get(f"{call_prefix}function.arguments", c.get(f"{call_prefix}arguments")),
                f"{at}.{p}",
            )
            for p, c in calls
        ]
    call_id = _text_or_none(given.get(f"{prefix}tool_call_id"), f"{at}.{prefix}tool_call_id")
    if call_id is not None or role == "tool":
        message["role"] = "tool"
        message["tool_call_id"] = call_id
        message["content"] = _result(message["content"] or "", gemini)
        if call_id is None:  # matched by its place and name (_answered_in_place)
            message["name"] = _text_or_none(given.get(f"{prefix}name"), f"{at}.{prefix}name")
    finish = given.get("finish_reason")
    if isinstance(finish, str) and finish:
        message["finish_reason"] = finish
    return message


def _older(attributes: dict[str, Any]) -> Read | None:
    prompts = _indexed(attributes, "gen_ai.prompt")
    if not prompts:
        return None
    messages = [_numbered(p, "", "", False) for p in prompts]
    output = [_numbered(c, "", "", False) for c in _indexed(attributes, "gen_ai.completion")]
    tools: list[dict[str, Any]] = []
    for at, given in _indexed(attributes, "llm.request.functions"):
        function = {k: v for k, v in given.items() if v is not None}
        if isinstance(function.get("parameters"), str):
            function["parameters"] = _json(function["parameters"], f"{at}.parameters")
        tools.extend(_flat_tools([function], at))
    return messages, output, tools


def _gemini(attributes: dict[str, Any]) -> bool:
    """The call went to Gemini (OpenInference's google-genai instrumentation)."""
    said = {attributes.get("llm.provider"), attributes.get("llm.system")}
    return bool(said & {"google", "gemini", "vertexai", "vertex_ai"})


def _openinference(attributes: dict[str, Any]) -> Read | None:
    inputs = _indexed(attributes, "llm.input_messages")
    if not inputs:
        return None
    gemini = _gemini(attributes)
    messages = [_numbered(m, "message.", "tool_call.", gemini) for m in inputs]
    outputs = [
        _numbered(m, "message.", "tool_call.", gemini)
        for m in _indexed(attributes, "llm.output_messages")
    ]
    finish = attributes.get("llm.finish_reason")
    if outputs and isinstance(finish, str):
        outputs[0].setdefault("finish_reason", finish)
    tools = []
    for at, tool in _indexed(attributes, "llm.tools"):
        where = f"{at}.tool.json_schema"
        schema = _json(tool.get("tool.json_schema"), where)
        if not isinstance(schema, dict):
            raise _expected(where, "a tool object", schema)
        tools.extend(_flat_tools([schema], where))
    return messages, outputs, tools


_READERS = (_current, _older, _openinference)


def read_call(attributes: dict[str, Any]) -> Read | None:
    """A model call's messages, answer and tools, from the first convention its span
    uses; None when it carries no message contents."""
    for reader in _READERS:
        read = reader(attributes)
        if read is not None:
            _answered_in_place(read[0])
            return read
    return None


def _answered_in_place(messages: list[dict[str, Any]]) -> None:
    """Give each tool result written without the id of its call (a Gemini function
    response: OpenInference's google-genai instrumentation writes its name only) the id
    of the call it answers, by place and name among the calls of the model turn before
    it, as the Gemini wire matches them (in place)."""
    waiting: list[tuple[Any, Any]] = []  # (id, name) of the last turn's unanswered calls
    for message in messages:
        if message["role"] == "assistant":
            calls = message.get("tool_calls") or []
            waiting = [(c["id"], c["function"]["name"]) for c in calls]
        elif message["role"] == "tool":
            name = message.pop("name", None)
            answered = message.get("tool_call_id")
            at = next(
                (
                    i
                    for i, (call_id, called) in enumerate(waiting)
                    if (call_id == answered if answered is not None else called == name)
                ),
                None,
            )
            if at is not None:
                call_id, _ = waiting.pop(at)
                message["tool_call_id"] = call_id


def _count(attributes: dict[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = attributes.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise _expected(key, "a number of tokens", value)
        try:
            return int(value)
        except ValueError:
            raise _expected(key, "a number of tokens", value) from None
    return None


def usage(attributes: dict[str, Any]) -> dict[str, int] | None:
    """The call's token counts under Chat Completions' names, when the span gives both."""
    prompt = _count(attributes, "gen_ai.usage.input_tokens", "llm.token_count.prompt")
    completion = _count(attributes, "gen_ai.usage.output_tokens", "llm.token_count.completion")
    if prompt is None or completion is None:
        return None
    return {"prompt_tokens": prompt, "completion_tokens": completion}
