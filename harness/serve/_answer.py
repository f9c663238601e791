"""Answering a model request on any wire: read it, pick the script's reply, write it.

The wire (``harness.wires``) says how many replies the request's conversation holds and
what tools it offers, and writes the reply whole or streamed in its own form; the script
state (``state``) picks the reply; what an error step or an exhausted script answers is
``wire.check_reply``.
"""

from __future__ import annotations

import json
from typing import Any

from harness._canonical import canonical_json
from harness.llm._base import JUDGE_ROLE, request_role
from harness.serve._fit import check_fits
from harness.serve._http import ApiError, check_reply, cut_answer, json_response, read_json, sse
from harness.serve._state import ScriptState
from harness.wires import Wire
from harness.wires._neutral import WireError

__all__ = ["answer", "count_endpoint", "endpoint"]


async def answer(request: Any, wire: Wire) -> Any:
    """The answer to a POST of ``wire``'s API."""
    state: ScriptState = request.app.state.script
    sent = await read_json(request)
    try:
        # A thread's continue stands for the whole request (harness.serve._threads).
        body = state.threads.resume(wire, sent)
        asked = wire.served_request(body, state.known(), request.url.path)
    except WireError as error:
        raise ApiError(error.status, error.message, error.code, error.param) from None
    if request_role(request.headers) == JUDGE_ROLE:
        reply = state.pick_judge()
    else:
        reply = state.pick_request(wire, body, asked)
    await check_reply(state, reply, wire)
    check_fits(reply, wire.tool_offer(body))
    await state.hold(reply.step.latency if reply.step else 0)
    streamed = wire.streams(body, request.url.path)
    served = reply.served(streamed)
    if reply.cut is not None:
        if streamed:
            events = list(wire.render_stream(served, body, asked))
            return cut_answer(events[: int(len(events) * reply.cut)], "text/event-stream")
        text = json.dumps(wire.render_reply(served, body, asked), ensure_ascii=False)
        return cut_answer([text[: int(len(text) * reply.cut)]], "application/json")
    held = wire.held(sent) is not None
    whole = wire.render_reply(served, body, asked) if held or not streamed else None
    if held:
        state.threads.keep(wire, sent, body, (whole, False))
    if whole is not None and not streamed:
        return json_response(whole)
    return sse(wire.render_stream(served, body, asked))


def endpoint(wire: Wire) -> Any:
    """The route endpoint of ``wire``'s API (a plain function, as Starlette wants)."""

    async def answer_wire(request: Any) -> Any:
        return await answer(request, wire)

    answer_wire.__doc__ = f"POST {', '.join(wire.paths)}."
    return answer_wire


def count_endpoint(wire: Any) -> Any:
    """The endpoint counting a request's input tokens on ``wire``'s API (Anthropic's
    ``count_tokens``): an estimate, a token per four characters of the request's JSON,
    written by ``wire.render_count``. No reply is picked and no attempt counted."""

    async def count_tokens(request: Any) -> Any:
        body = await read_json(request)
        return json_response(wire.render_count(max(1, len(canonical_json(body)) // 4)))

    return count_tokens
