"""Whether a scripted reply fits the request it answers.

The real API never answers tool calls to a request that offers no tools, offers other
tools, or says ``tool_choice: "none"``. Serving such a reply anyway lets the client fail
later with its own confusing error (``Tool get_weather not found in agent``); a 400 that
names the script step, the tool and what the request offered points at the script.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.serve._http import ApiError
from harness.serve._state import Reply
from harness.wires._neutral import ToolOffer

__all__ = ["check_fits"]


def _names(names: Iterable[str]) -> str:
    return ", ".join(names)


def check_fits(reply: Reply, offer: ToolOffer) -> None:
    """Raise a 400 when the reply's tool calls could not be the answer to a request that
    offers ``offer`` (read by its wire)."""
    step = reply.step
    # `unknown_tools: true` marks a step that misbehaves on purpose (as some
    # OpenAI-compatible providers do): it is served whatever the request offered.
    if step is None or not step.tool_calls or step.unknown_tools:
        return
    called = [call.name for call in step.tool_calls]
    offered = offer.names
    where = f"script step {reply.number or reply.n} (reply {reply.n})"
    problem = None
    if offer.none:
        problem = 'the request says tool_choice "none"'
    elif not offered:
        problem = "the request offers no tools"
    else:
        missing = [name for name in called if name not in offered]
        forced = offer.forced
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
