"""``harness serve``: an OpenAI-compatible server answering from a scenario's script.

It lets agents written in any language be tested against scripted replies, and
lets recording be exercised with no internet. It is stateless (DESIGN section 7):
a request whose input holds k assistant replies gets the script's reply k+1. An
error step takes no position of its own: it fails one attempt at the next reply's
position; attempts are counted per hash of the conversation, so a client's retry
of the same request gets the reply. ``POST /v1/reset`` forgets those counts.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import ipaddress
import json
import re
import socket
import sys
import threading
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.canonical import canonical_json
from harness.errors import HarnessError
from harness.llm.script import ScriptStep, parse_step

__all__ = [
    "DEFAULT_MAX_DELAY",
    "ScriptState",
    "create_app",
    "listening_sockets",
    "running_app",
    "running_server",
    "serve",
    "serve_main",
]

DEFAULT_MAX_DELAY = 30.0
DEFAULT_PORT = 8000
MODEL_ID = "harness-script"
_REASONING_INCLUDE = "reasoning.encrypted_content"


def _pieces(text: str, size: int = 0) -> list[str]:
    """Stream chunks: words (with their trailing space), or fixed-size slices."""
    if not text:
        return []
    if size:
        return [text[i : i + size] for i in range(0, len(text), size)]
    return re.findall(r"\S+\s*|\s+", text)


def _error_type(status: int) -> str:
    return {
        400: "invalid_request_error",
        401: "authentication_error",
        403: "permission_error",
        404: "not_found_error",
        409: "conflict_error",
        422: "invalid_request_error",
        429: "rate_limit_error",
    }.get(status, "server_error" if status >= 500 else "invalid_request_error")


def _error_body(status: int, message: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": _error_type(status), "param": None, "code": code}}


def _opaque_reasoning(reply: int) -> str:
    # Stands for a reasoning model's encrypted state: the server checks that the
    # client sends it back unchanged.
    return base64.b64encode(f"harness-reasoning:{reply}".encode()).decode()


@dataclass
class _Position:
    """The reply at one position, and the errors that fail the attempts before it."""

    errors: list[ScriptStep]
    reply: ScriptStep | None  # None past the end of the script


def _positions(steps: Sequence[ScriptStep]) -> tuple[list[_Position], list[ScriptStep]]:
    positions: list[_Position] = []
    pending: list[ScriptStep] = []
    for step in steps:
        for _ in range(step.repeat):
            if step.error is not None:
                pending.append(step)
            else:
                positions.append(_Position(pending, step))
                pending = []
    return positions, pending


class _Reply:
    """What one request gets: a scripted reply (number ``n``) or an error step."""

    def __init__(self, n: int, step: ScriptStep | None, error: ScriptStep | None = None) -> None:
        self.n = n
        self.step = step
        self.error = error

    def tool_calls(self) -> list[dict[str, Any]]:
        """The step's calls with their ids and arguments as the model sends them."""
        calls = []
        for i, call in enumerate(self.step.tool_calls if self.step else []):
            if call.raw_arguments is not None:
                arguments = call.raw_arguments
            else:
                arguments = json.dumps(call.arguments or {}, ensure_ascii=False)
            # `id: null` in the step: the reply carries no id, as some OpenAI-compatible
            # servers answer; the client then makes one up.
            no_id = call.id is None and "id" in call.model_fields_set
            call_id = None if no_id else call.id or f"call_{self.n}_{i}"
            calls.append({"id": call_id, "name": call.name, "arguments": arguments})
        return calls

    def usage(self) -> dict[str, int]:
        """The step's usage (zeros when the script gives none)."""
        if self.step is not None and self.step.usage is not None:
            return self.step.usage.as_dict()
        return {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}

    def finish_reason(self) -> str:
        """The step's finish_reason, else tool_calls or stop."""
        if self.step is not None and self.step.finish_reason:
            return self.step.finish_reason
        return "tool_calls" if self.step and self.step.tool_calls else "stop"


class ScriptState:
    """The script, the attempt counts, and what the handlers need to answer."""

    def __init__(self, steps: Sequence[ScriptStep], max_delay: float = DEFAULT_MAX_DELAY) -> None:
        self.positions, self.trailing_errors = _positions(steps)
        self.max_delay = max_delay
        self.attempts: Counter[str] = Counter()
        self._stop: asyncio.Event | None = None

    def _stop_event(self) -> asyncio.Event:
        if self._stop is None:
            self._stop = asyncio.Event()
        return self._stop

    def stopping(self) -> None:
        """Wake every held response: the server is shutting down."""
        self._stop_event().set()

    async def hold(self, seconds: float) -> float | None:
        """Sleep up to ``seconds`` (bounded by max_delay), waking early on shutdown.

        Returns None after the full time, or the seconds held when shutdown cut it short.
        """
        seconds = min(seconds, self.max_delay)
        if seconds <= 0:
            return None
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            await asyncio.wait_for(self._stop_event().wait(), seconds)
        except TimeoutError:
            return None
        return loop.time() - started

    def reset(self) -> None:
        """Forget the attempt counts."""
        self.attempts.clear()

    def pick(self, k: int, conversation: Any, api: str) -> _Reply:
        """The answer to a request of ``api`` whose input holds ``k`` replies.

        Attempts are counted per endpoint: a 429 a chat request took does not use up the
        error step of the same conversation on /v1/responses.
        """
        key = f"{api}:{canonical_json(conversation)}"
        digest = hashlib.sha256(key.encode()).hexdigest()
        attempt = self.attempts[digest]
        self.attempts[digest] += 1
        if k < len(self.positions):
            position = self.positions[k]
            errors, step = position.errors, position.reply
        else:
            errors, step = self.trailing_errors, None
        if attempt < len(errors):
            return _Reply(k + 1, None, errors[attempt])
        return _Reply(k + 1, step)


# -- responses ------------------------------------------------------------------------------


def _json(body: Any, status: int = 200) -> Any:
    from starlette.responses import JSONResponse

    return JSONResponse(body, status_code=status)


def _sse(events: Iterator[str]) -> Any:
    from starlette.responses import StreamingResponse

    async def stream() -> AsyncIterator[bytes]:
        for event in events:
            yield event.encode("utf-8")

    return StreamingResponse(
        stream(), media_type="text/event-stream", headers={"cache-control": "no-cache"}
    )


async def _error_or_none(state: ScriptState, reply: _Reply, total: int) -> Any:
    """The HTTP answer for an error step or an exhausted script (None for a real reply)."""
    if reply.error is not None:
        error = reply.error.error
        if error == "timeout":
            # Hold the response past the client's timeout; a client still waiting
            # after max_delay gets a 504.
            woken = await state.hold(state.max_delay)
            if woken is None:
                message = f"timeout step: the response was held for {state.max_delay:g} s"
            else:
                message = (
                    f"timeout step: the server is shutting down: the response was released "
                    f"after {woken:.1f} s of {state.max_delay:g} s"
                )
            return _json(_error_body(504, message, "timeout"), 504)
        return _json(_error_body(error.status, error.message), error.status)
    if reply.step is None:
        message = (
            f"script exhausted: this request holds {reply.n - 1} assistant replies and the "
            f"script has {total}"
        )
        return _json(_error_body(400, message, "script_exhausted"), 400)
    return None


async def _read_json(request: Any) -> tuple[dict[str, Any] | None, Any]:
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError):
        return None, _json(_error_body(400, "the request body is not JSON"), 400)
    if not isinstance(body, dict):
        return None, _json(_error_body(400, "the request body must be a JSON object"), 400)
    return body, None


async def chat_completions(request: Any) -> Any:
    """POST /v1/chat/completions."""
    state: ScriptState = request.app.state.script
    body, problem = await _read_json(request)
    if body is None:
        return problem
    messages = body.get("messages")
    if not isinstance(messages, list):
        return _json(_error_body(400, "messages must be a list"), 400)
    k = sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")
    reply = state.pick(k, messages, "chat")
    answer = await _error_or_none(state, reply, len(state.positions))
    if answer is not None:
        return answer
    await state.hold(reply.step.latency if reply.step else 0)
    model = body.get("model") or MODEL_ID
    calls = reply.tool_calls()
    content = reply.step.content if reply.step else None
    ident = f"chatcmpl-harness-{reply.n}"
    if not body.get("stream"):
        message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
        if calls:
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": c["arguments"]},
                }
                for c in calls
            ]
        return _json(
            {
                "id": ident,
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": reply.finish_reason(),
                        "logprobs": None,
                    }
                ],
                "usage": reply.usage(),
            }
        )
    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
    return _sse(_chat_chunks(ident, model, content, calls, reply, include_usage))


def _chat_chunks(
    ident: str,
    model: str,
    content: str | None,
    calls: list[dict[str, Any]],
    reply: _Reply,
    include_usage: bool,
) -> Iterator[str]:
    base = {"id": ident, "object": "chat.completion.chunk", "created": 0, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
        return f"data: {json.dumps({**base, 'choices': [choice]}, ensure_ascii=False)}\n\n"

    # As the API streams it: "" opens a text reply, null a reply of tool calls only.
    yield chunk({"role": "assistant", "content": "" if content or not calls else None})
    for piece in _pieces(content or ""):
        yield chunk({"content": piece})
    for i, call in enumerate(calls):
        opening = {"index": i, "id": call["id"], "type": "function"}
        opening["function"] = {"name": call["name"], "arguments": ""}
        yield chunk({"tool_calls": [opening]})
        for piece in _pieces(call["arguments"], 8):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    yield chunk({}, reply.finish_reason())
    if include_usage:
        usage = {**base, "choices": [], "usage": reply.usage()}
        yield f"data: {json.dumps(usage)}\n\n"
    yield "data: [DONE]\n\n"


# -- Responses API --------------------------------------------------------------------------


def _is_model_output(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    return item.get("type") in ("reasoning", "function_call") or item.get("role") == "assistant"


# The ids serve gives a reply's items name its round: fc_harness_2_0, call_2_0, msg_harness_2.
_ROUND_ID = re.compile(r"^(?:(?:fc|msg|rs)_harness_(\d+)(?:_\d+)?|call_(\d+)_\d+)$")


def _round_of(item: dict[str, Any]) -> int | None:
    """The reply an item came in, read from serve's own ids (None for other ids)."""
    for key in ("id", "call_id"):
        found = _ROUND_ID.match(str(item.get(key) or ""))
        if found:
            return int(found.group(1) or found.group(2))
    return None


def _rounds(items: list[Any]) -> list[list[dict[str, Any]]]:
    """The model's earlier replies in ``input`` (model rounds, not function calls).

    Items serve made carry their round in their ids, so calls of one reply count once
    even with their outputs between them (``[user, call A, output A, call B, output B]``,
    a layout the real API accepts); items with other ids count by maximal runs.
    """
    rounds: list[list[dict[str, Any]]] = []
    previous, last = False, None
    for item in items:
        if not _is_model_output(item):
            previous = False
            continue
        tag = _round_of(item)
        new = tag != last if tag is not None and last is not None else not previous
        if new or not rounds:
            rounds.append([])
        rounds[-1].append(item)
        previous, last = True, tag
    return rounds


def _missing_reasoning(rounds: list[list[dict[str, Any]]]) -> str | None:
    """Like a reasoning model, refuse input whose earlier reasoning items were dropped."""
    for n, items in enumerate(rounds, 1):
        first = items[0]
        sent_back = first.get("encrypted_content") == _opaque_reasoning(n)
        if first.get("type") != "reasoning" or not sent_back:
            return (
                f"reply {n} in `input` does not start with its reasoning item (unchanged, with "
                "encrypted_content): reasoning items must be sent back"
            )
    return None


async def responses(request: Any) -> Any:
    """POST /v1/responses."""
    state: ScriptState = request.app.state.script
    body, problem = await _read_json(request)
    if body is None:
        return problem
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list):
        return _json(_error_body(400, "input must be a string or a list"), 400)
    reasoning = _REASONING_INCLUDE in (body.get("include") or [])
    rounds = _rounds(items)
    if reasoning:
        missing = _missing_reasoning(rounds)
        if missing:
            return _json(_error_body(400, missing), 400)
    reply = state.pick(len(rounds), items, "responses")
    answer = await _error_or_none(state, reply, len(state.positions))
    if answer is not None:
        return answer
    await state.hold(reply.step.latency if reply.step else 0)
    response = _response_object(body, reply, reasoning)
    if not body.get("stream"):
        return _json(response)
    return _sse(_response_events(response))


def _response_object(body: dict[str, Any], reply: _Reply, reasoning: bool) -> dict[str, Any]:
    n = reply.n
    output: list[dict[str, Any]] = []
    if reasoning:
        output.append(
            {
                "type": "reasoning",
                "id": f"rs_harness_{n}",
                "summary": [],
                "encrypted_content": _opaque_reasoning(n),
            }
        )
    content = reply.step.content if reply.step else None
    if content:
        output.append(
            {
                "type": "message",
                "id": f"msg_harness_{n}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": content, "annotations": []}],
            }
        )
    for i, call in enumerate(reply.tool_calls()):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_harness_{n}_{i}",
                "call_id": call["id"],
                "name": call["name"],
                "arguments": call["arguments"],
                "status": "completed",
            }
        )
    usage = reply.usage()
    truncated = reply.finish_reason() == "length"
    return {
        "id": f"resp_harness_{n}",
        "object": "response",
        "created_at": 0,
        "status": "incomplete" if truncated else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if truncated else None,
        "error": None,
        "instructions": body.get("instructions"),
        "model": body.get("model") or MODEL_ID,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": [_echoed_tool(t) for t in body.get("tools") or []],
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": usage["completion_tokens"],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage["total_tokens"],
        },
    }


def _echoed_tool(tool: Any) -> Any:
    """A request's tool as the Responses API echoes it: every field present.

    OpenAI fills in ``strict`` (true by default in this API) and ``description``; SDKs
    whose types require them fail to parse a ``response.completed`` event without them.
    """
    if not isinstance(tool, dict) or tool.get("type") != "function":
        return tool
    return {"description": None, **tool, "strict": tool.get("strict", True)}


def _response_events(response: dict[str, Any]) -> Iterator[str]:
    sequence = 0

    def event(kind: str, **data: Any) -> str:
        nonlocal sequence
        payload = {"type": kind, "sequence_number": sequence, **data}
        sequence += 1
        return f"event: {kind}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n"

    started = {**response, "status": "in_progress", "output": [], "usage": None}
    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    for index, item in enumerate(response["output"]):
        where = {"output_index": index}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield event("response.output_item.added", item={**item, "content": []}, **where)
            empty = {"type": "output_text", "text": "", "annotations": []}
            ids = {"item_id": item["id"], "content_index": 0, **where}
            yield event("response.content_part.added", part=empty, **ids)
            for piece in _pieces(text):
                yield event("response.output_text.delta", delta=piece, logprobs=[], **ids)
            yield event("response.output_text.done", text=text, logprobs=[], **ids)
            yield event("response.content_part.done", part=item["content"][0], **ids)
        elif item["type"] == "function_call":
            added = {**item, "arguments": "", "status": "in_progress"}
            yield event("response.output_item.added", item=added, **where)
            for piece in _pieces(item["arguments"], 8):
                delta = {"item_id": item["id"], "delta": piece}
                yield event("response.function_call_arguments.delta", **delta, **where)
            yield event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                arguments=item["arguments"],
                **where,
            )
        else:
            yield event("response.output_item.added", item=item, **where)
        yield event("response.output_item.done", item=item, **where)
    final = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
    yield event(final, response=response)


# -- the other endpoints ----------------------------------------------------------------------


async def models(request: Any) -> Any:
    """GET /v1/models."""
    return _json(
        {
            "object": "list",
            "data": [{"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "harness"}],
        }
    )


async def model(request: Any) -> Any:
    """GET /v1/models/{id}: serve answers as any model a client names."""
    name = request.path_params["model_id"]
    return _json({"id": name, "object": "model", "created": 0, "owned_by": "harness"})


async def reset(request: Any) -> Any:
    """POST /v1/reset: forget the attempt counts (204)."""
    from starlette.responses import Response

    request.app.state.script.reset()
    return Response(status_code=204)


async def _not_found(request: Any, exc: Any) -> Any:
    status = getattr(exc, "status_code", 404)
    message = f"{request.method} {request.url.path} is not an endpoint of harness serve"
    return _json(_error_body(status, message), status)


def create_app(steps: Sequence[ScriptStep], max_delay: float = DEFAULT_MAX_DELAY) -> Any:
    """The Starlette application answering from ``steps``."""
    from starlette.applications import Starlette
    from starlette.routing import Route

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat_completions, methods=["POST"]),
            Route("/v1/responses", responses, methods=["POST"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/models/{model_id:path}", model, methods=["GET"]),
            Route("/v1/reset", reset, methods=["POST"]),
        ],
        exception_handlers={404: _not_found, 405: _not_found},
    )
    app.state.script = ScriptState(steps, max_delay)
    return app


# -- running it -------------------------------------------------------------------------------


def _server(app: Any, host: str, port: int, log_level: str) -> Any:
    import uvicorn

    state = _find_state(app)

    class Server(uvicorn.Server):
        """uvicorn, waking held responses at shutdown and exiting cleanly on a signal."""

        on_started: Any = None

        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started and self.on_started is not None:
                self.on_started(self.bound_port())

        async def shutdown(self, sockets: Any = None) -> None:
            if state is not None:
                state.stopping()
            await super().shutdown(sockets)

        def handle_exit(self, sig: int, frame: Any) -> None:
            # uvicorn re-raises the signal after shutting down, which turns Ctrl-C
            # into a traceback and SIGTERM into a kill: a stop is a normal exit here.
            if self.should_exit:
                self.force_exit = True
            self.should_exit = True

        def bound_port(self) -> int:
            for server in self.servers:
                for sock in server.sockets:
                    return int(sock.getsockname()[1])
            return port

    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        lifespan="off",
        timeout_graceful_shutdown=5,
        access_log=log_level == "info",
    )
    return Server(config)


def listening_sockets(host: str, port: int) -> list[socket.socket]:
    """Bound sockets for ``host:port``, one per address the host resolves to.

    Bound here rather than by uvicorn, which logs a failure and exits with status 3
    (an internal error in harness's terms): a busy port or an unknown host is bad input,
    an OSError for the caller to report. Options as asyncio's own ``create_server``.
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    bound: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            bound.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(bound) > 1:
                # Port 0: every address on the port the first one got.
                address = (address[0], bound[0].getsockname()[1], *address[2:])
            sock.bind(address)
    except OSError:
        for sock in bound:
            sock.close()
        raise
    return bound


def _find_state(app: Any) -> ScriptState | None:
    """The ScriptState of an app made by create_app, through middleware wrappers."""
    for _ in range(20):
        state = getattr(getattr(app, "state", None), "script", None)
        if isinstance(state, ScriptState):
            return state
        app = getattr(app, "app", None)
        if app is None:
            break
    return None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
    steps: Sequence[ScriptStep],
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    max_delay: float = DEFAULT_MAX_DELAY,
    *,
    log_level: str = "info",
    on_started: Any = None,
) -> None:
    """Serve ``steps`` until SIGTERM or Ctrl-C (blocking; call it from the main thread).

    HarnessError when ``host:port`` cannot be listened on (a busy port, an unknown host).
    """
    try:
        sockets = listening_sockets(host, port)
    except OSError as exc:
        shown = f"[{host}]" if ":" in host else host
        raise HarnessError(f"cannot listen on {shown}:{port}: {exc.strerror or exc}") from None
    server = _server(create_app(steps, max_delay), host, port, log_level)
    server.on_started = on_started
    server.run(sockets=sockets)


@contextlib.contextmanager
def running_server(
    steps: Sequence[ScriptStep | dict[str, Any]],
    *,
    max_delay: float = DEFAULT_MAX_DELAY,
    host: str = "127.0.0.1",
) -> Iterator[str]:
    """Serve ``steps`` on a free port in a background thread; yield the base URL (``.../v1``)."""
    parsed = [parse_step(index, s) for index, s in enumerate(steps)]
    with running_app(create_app(parsed, max_delay), host=host) as url:
        yield url


@contextlib.contextmanager
def running_app(app: Any, *, host: str = "127.0.0.1") -> Iterator[str]:
    """Serve an app made by ``create_app`` (possibly wrapped) like ``running_server``."""
    sockets = listening_sockets(host, 0)
    server = _server(app, host, 0, "warning")
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": sockets}, name="harness-serve", daemon=True
    )
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("harness serve did not start (see the log above)")
            thread.join(0.01)
        yield f"http://{host}:{server.bound_port()}/v1"
    finally:
        server.should_exit = True
        thread.join(15)


# -- the command ------------------------------------------------------------------------------


def _script_of(path: Path) -> list[ScriptStep]:
    from harness.scenario import load_scenario

    scenario = load_scenario(path)
    return list(scenario.llm.script)


def serve_main(argv: Sequence[str] | None = None) -> int:
    """``harness serve SCENARIO [--host H] [--port N] [--max-delay S]``."""
    parser = argparse.ArgumentParser(
        prog="harness serve",
        description="Serve a scenario's llm.script as an OpenAI-compatible API "
        "(POST /v1/chat/completions, POST /v1/responses, GET /v1/models, POST /v1/reset).",
    )
    parser.add_argument("scenario", type=Path, help="a *.scenario.yaml file with llm.script")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}; 0 picks a free one"
    )
    parser.add_argument(
        "--max-delay",
        type=float,
        default=DEFAULT_MAX_DELAY,
        help="longest a response is held, for `error: timeout` and latency (default 30 s)",
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        steps = _script_of(args.scenario)
    except (HarnessError, OSError) as exc:
        print(f"harness serve: {exc}", file=sys.stderr)
        return 2
    if not steps:
        print(f"harness serve: {args.scenario} has no llm.script to serve", file=sys.stderr)
        return 2
    if args.max_delay < 0 or not 0 <= args.port <= 65535:
        print("harness serve: --port must be 0-65535 and --max-delay >= 0", file=sys.stderr)
        return 2
    if not _is_loopback(args.host):
        print(
            f"harness serve: warning: serving on {args.host}, reachable from other machines",
            file=sys.stderr,
        )

    def started(port: int) -> None:
        shown = f"[{args.host}]" if ":" in args.host else args.host
        print(
            f"harness serve: {args.scenario} at http://{shown}:{port}/v1 (Ctrl-C to stop)",
            flush=True,
        )

    try:
        serve(steps, args.host, args.port, args.max_delay, on_started=started)
    except HarnessError as exc:
        print(f"harness serve: {exc}", file=sys.stderr)
        return 2
    print("harness serve: stopped", flush=True)
    return 0
