"""Whether a scripted reply fits the request it answers.

The real API never answers tool calls to a request that offers no tools, offers other
tools, or says ``tool_choice: "none"``. Serving such a reply anyway lets the client fail
later with its own confusing error (``Tool get_weather not found in agent``); a 400 that
names the script step, the tool and what the request offered points at the script.
"""

from __future__ import annotations

from typing import Any

from harness.serve.state import Reply
from harness.serve.wire import ApiError

__all__ = ["check_fits"]


def _function_name(tool: Any) -> str | None:
    """A function tool's name in either API's layout (None for other tools)."""
    if not isinstance(tool, dict) or tool.get("type", "function") != "function":
        return None
    function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
    name = function.get("name")
    return name if isinstance(name, str) else None


def _forced(tool_choice: Any) -> str | None:
    """The function a ``tool_choice`` object forces, in either API's layout."""
    if isinstance(tool_choice, dict) and tool_choice.get("type") == "function":
        return _function_name(tool_choice)
    return None


def _names(names: list[str]) -> str:
    return ", ".join(names)


def check_fits(reply: Reply, body: dict[str, Any]) -> None:
    """Raise a 400 when the reply's tool calls could not be the answer to ``body``."""
    step = reply.step
    # `unknown_tools: true` marks a step that misbehaves on purpose (as some
    # OpenAI-compatible providers do): it is served whatever the request offered.
    if step is None or not step.tool_calls or step.unknown_tools:
        return
    called = [call.name for call in step.tool_calls]
    offered = [n for n in (_function_name(t) for t in body.get("tools") or []) if n]
    where = f"script step {reply.number or reply.n} (reply {reply.n})"
    tool_choice = body.get("tool_choice")
    problem = None
    if tool_choice == "none":
        problem = 'the request says tool_choice "none"'
    elif not offered:
        problem = "the request offers no tools"
    else:
        missing = [name for name in called if name not in offered]
        forced = _forced(tool_choice)
        if missing:
            problem = f"the request offers only {_names(offered)}"
            called = missing
        elif forced is not None and any(name != forced for name in called):
            problem = f"the request's tool_choice forces {forced}"
    if problem is None:
        return
    raise ApiError(
        400,
        f"{where} calls {_names(dict.fromkeys(called))}, but {problem}: "
        "the script does not fit the agent's request (fix the step, or the agent's tools)",
        "script_step_mismatch",
    )
