"""A third-party plugin adding a model API harness has never heard of (docs/plugins.md#a-model-api-from-a-plugin).

The made-up Acme Complete API: ``POST {ACME_BASE_URL}/acme/v1/complete`` with the key in
an ``x-acme-key`` header, a body of ``turns`` (``speaker`` ``system`` / ``user`` /
``agent`` / ``outcome``; an agent turn's ``actions`` are its tool calls, an outcome turn
answers one by its ``ref``) and ``functions``; the answer is ``{"reply": {"say",
"actions"}, "stop": "actions" | "done" | "cut", "tokens": {"prompt", "reply"}}``, an error
``{"failure": {"status", "reason", "kind"}}``. It has no streaming.

The wire converts Acme's turns to Chat Completions' messages and lets harness's Chat
Completions wire read those: a wire may be written any way, as long as it has the methods
of ``harness.wires._neutral.Wire``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from harness.plugin import WireVendor, hookimpl
from harness.wires import (
    OPENAI_CHAT,
    Item,
    ServedReply,
    ServedRequest,
    StatelessRequests,
    ToolOffer,
    ToolResult,
    ToolSpec,
    WireError,
    WireReply,
    renamed,
)

PATH = "/acme/v1/complete"
ACME = WireVendor(
    name="acme",
    base_url="https://api.acme.invalid",
    base_url_variable="ACME_BASE_URL",
    key_variables=("ACME_API_KEY",),
    key_header="x-acme-key",
    key_params=("acme_key",),
    secret_variables=("ACME_ACCOUNT_ID",),
)
_ROLES = {"system": "system", "user": "user", "agent": "assistant"}
_STOPS = {"actions": "tool_calls", "done": "stop", "cut": "length"}


def _message(turn: Any) -> Any:
    """One Acme turn as a Chat Completions message (anything else as it is)."""
    if not isinstance(turn, dict):
        return turn
    speaker = turn.get("speaker")
    if speaker == "outcome":
        return {"role": "tool", "tool_call_id": turn.get("ref"), "content": turn.get("say")}
    message: dict[str, Any] = {"role": _ROLES.get(speaker, speaker), "content": turn.get("say")}
    if turn.get("actions"):
        message["tool_calls"] = [
            {
                "id": action.get("ref"),
                "type": "function",
                "function": {"name": action.get("fn"), "arguments": json.dumps(action["input"])},
            }
            for action in turn["actions"]
        ]
    return message


def _functions(functions: Any) -> list[Any]:
    return [
        {
            "type": "function",
            "function": {
                "name": f.get("fn"),
                "description": f.get("about"),
                "parameters": f.get("input_schema"),
            },
        }
        for f in functions or []
        if isinstance(f, dict)
    ]


class AcmeWire(StatelessRequests):
    """Acme Complete, read into and written from harness's neutral request and reply."""

    name = "acme-complete"
    api = "acme"
    label = "Acme Complete"
    paths = (PATH,)
    items_field = "turns"

    def serves(self, path: str) -> bool:
        return path.endswith(PATH)

    # -- requests ----------------------------------------------------------------------

    def messages(self, items: list[Any], names: dict[str, str] | None = None) -> list[Any]:
        return OPENAI_CHAT.messages([_message(t) for t in items], names)

    def instructions(self, body: dict[str, Any]) -> list[Any]:
        return []  # the system text is a turn

    def tool_results(self, items: list[Any], start: int = 0) -> dict[str, ToolResult]:
        return OPENAI_CHAT.tool_results([_message(t) for t in items], start)

    def with_call_ids(self, item: Any, rename: Callable[[str], str]) -> Any:
        if isinstance(item, dict) and isinstance(item.get("actions"), list):
            item = {**item, "actions": [renamed(a, "ref", rename) for a in item["actions"]]}
        return renamed(item, "ref", rename)

    def tools(self, tools: Any) -> list[ToolSpec]:
        return OPENAI_CHAT.tools(_functions(tools))

    def tool_offer(self, body: dict[str, Any]) -> ToolOffer:
        return OPENAI_CHAT.tool_offer({"tools": _functions(body.get("functions"))})

    def normalized(self, body: dict[str, Any]) -> tuple[Item, ...]:
        return OPENAI_CHAT.normalized({"messages": [_message(t) for t in self.items(body)]})

    # -- answers -----------------------------------------------------------------------

    def read_reply(self, payload: Any, streamed: bool) -> WireReply | None:
        if streamed or not isinstance(payload, dict) or not isinstance(payload.get("reply"), dict):
            return None
        reply, tokens = payload["reply"], payload.get("tokens") or {}
        usage = {
            "prompt_tokens": tokens.get("prompt", 0),
            "completion_tokens": tokens.get("reply", 0),
        }
        return WireReply(
            content=reply.get("say"),
            tool_calls=[
                (a.get("ref"), a.get("fn"), json.dumps(a.get("input")))
                for a in reply.get("actions") or []
            ],
            finish_reason=_STOPS.get(payload.get("stop")),
            usage={**usage, "total_tokens": sum(usage.values())},
        )

    def read_error(self, status: int, payload: Any) -> WireError:
        failure = payload.get("failure") if isinstance(payload, dict) else None
        if not isinstance(failure, dict):
            return WireError(status, f"HTTP {status}")
        return WireError(status, str(failure.get("reason")), failure.get("kind"))

    def stream_reader(self) -> Any:
        raise NotImplementedError("Acme Complete does not stream")

    def client(self) -> Any:
        raise NotImplementedError("harness has no Acme SDK source")

    # -- serving -----------------------------------------------------------------------

    def served_request(self, body: dict[str, Any], known: int, path: str) -> ServedRequest:
        turns = body.get("turns")
        if not isinstance(turns, list):
            raise WireError(400, "turns must be a list", "bad_request")
        agent = sum(1 for t in turns if isinstance(t, dict) and t.get("speaker") == "agent")
        return ServedRequest(agent, turns)

    def streams(self, body: dict[str, Any], path: str) -> bool:
        return False

    def render_reply(
        self, reply: ServedReply, body: dict[str, Any], asked: ServedRequest
    ) -> dict[str, Any]:
        actions = [
            {"ref": ref or f"act_{reply.n}_{i}", "fn": fn, "input": json.loads(args or "{}")}
            for i, (ref, fn, args) in enumerate(reply.tool_calls)
        ]
        stop = {v: k for k, v in _STOPS.items()}.get(reply.finish_reason, "done")
        tokens = {
            "prompt": reply.usage.get("prompt_tokens", 0),
            "reply": reply.usage.get("completion_tokens", 0),
        }
        return {
            "id": f"acme-{reply.n}",
            "reply": {"say": reply.content, "actions": actions},
            "stop": stop,
            "tokens": tokens,
        }

    def render_stream(
        self, reply: ServedReply, body: dict[str, Any], asked: ServedRequest
    ) -> Iterator[str]:
        raise NotImplementedError("Acme Complete does not stream")

    def render_error(self, error: WireError) -> dict[str, Any]:
        return {"failure": {"status": error.status, "reason": error.message, "kind": error.code}}


WIRE = AcmeWire()


@hookimpl
def harness_register_wires(register):
    register(WIRE, vendor=ACME)
