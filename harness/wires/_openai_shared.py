"""What OpenAI's two APIs share on the wire: usage, errors, tool definitions.

Both answer errors as ``{"error": {message, type, param, code}}`` and define function
tools alike (Chat Completions nests them under ``function``, the Responses API does not):
``openai_chat`` and ``openai_responses`` read and write them here, once.
"""

from __future__ import annotations

from typing import Any

from harness.wires._neutral import ToolOffer, ToolSpec, WireError

__all__ = ["error_body", "read_error", "tool_offer", "tools", "usage_of"]

_USAGE = (
    ("prompt_tokens", "input_tokens"),
    ("completion_tokens", "output_tokens"),
    ("total_tokens", "total_tokens"),
)

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    409: "conflict_error",
    422: "invalid_request_error",
    429: "rate_limit_error",
}


def usage_of(raw: Any) -> dict[str, int]:
    """Token counts of a usage object under Chat Completions' names (the Responses API's
    ``input_tokens``/``output_tokens`` mapped; counts that are not integers left out)."""
    out: dict[str, int] = {}
    if not isinstance(raw, dict):
        return out
    for name, alias in _USAGE:
        value = raw.get(name, raw.get(alias))
        if isinstance(value, int) and not isinstance(value, bool):
            out[name] = value
    return out


def error_body(error: WireError) -> dict[str, Any]:
    """``{"error": {message, type, param, code}}``, the type following the status."""
    status = error.status
    kind = _ERROR_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {
        "error": {"message": error.message, "type": kind, "param": error.param, "code": error.code}
    }


def read_error(status: int, payload: Any) -> WireError:
    """The message and code of an ``{"error": {...}}`` body (``HTTP <status>`` without one)."""
    details = payload.get("error") if isinstance(payload, dict) else None
    message = code = None
    if isinstance(details, dict):
        message, code = details.get("message"), details.get("code")
    text = message if isinstance(message, str) and message else f"HTTP {status}"
    return WireError(status, text, None if code is None else str(code))


def _function(tool: dict[str, Any]) -> dict[str, Any]:
    return tool["function"] if isinstance(tool.get("function"), dict) else tool


def tools(raw: Any) -> list[ToolSpec]:
    """Function tools in either API's layout; any other tool kept as it is, unnamed."""
    specs = []
    for tool in raw or []:
        if not isinstance(tool, dict):
            specs.append(ToolSpec(None, raw=tool))
            continue
        function = _function(tool)
        name = function.get("name")
        if tool.get("type", "function") != "function" or not name or not isinstance(name, str):
            specs.append(ToolSpec(None, raw=tool))
            continue
        specs.append(
            ToolSpec(
                name,
                function.get("description"),
                function.get("parameters"),
                bool(function.get("strict", False)),
                tool,
            )
        )
    return specs


def tool_offer(body: dict[str, Any]) -> ToolOffer:
    """The tools' names, ``tool_choice: "none"``, and the function a choice object forces."""
    names = [spec.name for spec in tools(body.get("tools")) if spec.name]
    choice = body.get("tool_choice")
    forced = None
    if isinstance(choice, dict) and choice.get("type") == "function":
        name = _function(choice).get("name")
        forced = name if isinstance(name, str) else None
    return ToolOffer(names, choice == "none", forced)


def model_info(name: str) -> dict[str, Any]:
    """``GET /v1/models/{id}``'s answer: any model a client names."""
    return {"id": name, "object": "model", "created": 0, "owned_by": "harness"}
