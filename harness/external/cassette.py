"""Serving a cassette over HTTP: replay with docs/recording.md#matching, and the recording
proxy.

``cassette_app`` answers each request from the cassette (``match: body`` or
``sequential``, through the same indexed vcrpy cassette the ``openai`` source uses). A
request the cassette cannot answer gets HTTP 400 with the explained miss (the file, the
scenario, the request's index in the run, a diff with the nearest recorded request);
under a record mode that allows it, it is sent on to the upstream API instead (the real
key from harness's own environment, never the target's dummy) and the interaction is
recorded. ``close()`` writes what was recorded (scrubbed, atomically, in the readable
format of docs/recording.md#the-cassette-file).
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

from harness.cassettes.session import CassetteSession, key_refused, no_key_refusal
from harness.secrets import Scrubber
from harness.wires import OPENAI_CHAT, wire_for
from harness.wires.neutral import WireError

__all__ = ["DEFAULT_UPSTREAM", "GEMINI_UPSTREAM", "CassetteApp"]

DEFAULT_UPSTREAM = "https://api.openai.com/v1"
GEMINI_UPSTREAM = "https://generativelanguage.googleapis.com"

# Hop-by-hop or length headers that do not describe a body served again decoded.
_DROPPED = {"content-length", "content-encoding", "transfer-encoding", "connection"}
# Sent upstream: what the API reads. The target's own authorization is a dummy.
_FORWARDED = {"content-type", "accept", "openai-beta", "user-agent", "x-goog-api-client"}


def _httpx() -> Any:
    try:
        import httpx2

        return httpx2
    except ImportError:  # pragma: no cover - openai 1.x/2.x environments
        import httpx

        return httpx


class CassetteApp:
    """An ASGI app answering from ``session``'s cassette (recording the misses it may)."""

    def __init__(
        self,
        session: CassetteSession,
        upstream: str | None = None,
        *,
        repeat: bool = False,
        provider: str = "openai",
    ) -> None:
        self.session = session
        # Serving to anything (`harness serve --cassette`): once every matching interaction
        # was played, the cassette starts over, as a stateless server would answer again.
        self.repeat = repeat
        # `upstream` is the scenario's llm.base_url: its provider's API root.
        given = upstream if provider == "openai" else None
        self.upstream = (given or os.environ.get("OPENAI_BASE_URL") or DEFAULT_UPSTREAM).rstrip("/")
        given = upstream if provider == "gemini" else None
        self.gemini_upstream = (
            given or os.environ.get("GOOGLE_GEMINI_BASE_URL") or GEMINI_UPSTREAM
        ).rstrip("/")
        # Read now: the target gets a dummy key in the same environment later.
        self.key = os.environ.get("OPENAI_API_KEY")
        self.gemini_key = next(
            (
                os.environ[name]
                for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY")
                if os.environ.get(name)
            ),
            None,
        )
        self.refused: str | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """The ASGI entry point."""
        if scope["type"] != "http":
            return
        if scope["method"] == "POST" and scope["path"] == "/v1/reset":
            self.session.cassette.rewind()
            self.session.requests_sent = 0
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        status, headers, content = await self._answer(scope, body)
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content, "more_body": False})

    async def _answer(self, scope: dict[str, Any], body: bytes) -> tuple[int, list, bytes]:
        from vcr.request import Request

        session = self.session
        session.requests_sent += 1
        path = scope["path"]
        query = scope.get("query_string", b"").decode()
        if _is_gemini(path):
            # Gemini paths hold their API version (/v1beta/models/...): the root goes before.
            uri = f"{self.gemini_upstream}{path}" + (f"?{query}" if query else "")
        else:
            suffix = path[3:] if path.startswith("/v1/") else path
            uri = f"{self.upstream}{suffix}" + (f"?{query}" if query else "")
        request = Request(scope["method"], uri, body or None, {})
        cassette = session.cassette
        if request in cassette:
            return _served(cassette.play_response(request))
        if self.repeat and session.replays_only:
            cassette.rewind()
            if request in cassette:
                return _served(cassette.play_response(request))
        if session.replays_only or self.refused:
            miss = session.miss_error(
                SimpleNamespace(failed_request=request),  # type: ignore[arg-type]
                session.requests_sent,
            )
            return _error(path, 400, miss.message, "cassette_miss")
        return await self._forward(scope, request, body)

    async def _forward(self, scope: dict[str, Any], request: Any, body: bytes) -> tuple:
        gemini = _is_gemini(scope["path"])
        if gemini:
            from harness.providers.gemini import no_key

            refusal = no_key(_host(request.uri), self.gemini_key)
        else:
            refusal = no_key_refusal(_host(request.uri), self.key)
        if refusal is not None:
            # Refused before anything goes out, as the own loop refuses it; a 401 so that
            # the target's SDK gives up at once instead of retrying.
            self.refused = refusal
            return _error(scope["path"], 401, refusal, "recording_refused")
        httpx = _httpx()
        headers = {
            k.decode("latin-1"): v.decode("latin-1")
            for k, v in scope.get("headers", [])
            if k.decode("latin-1").lower() in _FORWARDED
        }
        headers["accept-encoding"] = "gzip, deflate"
        if gemini and self.gemini_key:
            headers["x-goog-api-key"] = self.gemini_key
        elif self.key and not gemini:
            headers["authorization"] = f"Bearer {self.key}"
        try:
            async with httpx.AsyncClient(timeout=600) as client:
                answer = await client.request(
                    request.method, request.uri, content=body, headers=headers
                )
                content = await answer.aread()
        except Exception as exc:
            message = Scrubber().text(
                f"recording proxy: {request.uri}: {type(exc).__name__}: {exc}"
            )
            return _error(scope["path"], 502, message, "upstream_error")
        kept = {k: [v] for k, v in answer.headers.items() if k.lower() not in _DROPPED}
        refused = _refused(gemini, answer.status_code, content)
        if refused is not None:
            # Never written: every later run would replay the refusal.
            self.refused = refused
        else:
            self.session.cassette.append(
                request,
                {
                    "status": {"code": answer.status_code, "message": answer.reason_phrase},
                    "headers": kept,
                    "body": {"string": content},
                },
            )
        return answer.status_code, _headers(kept), content

    def close(self) -> None:
        """Write the recording (if anything was recorded and the key was not refused)."""
        if self.refused:
            self.session.refused = self.refused
        self.session.save()


def _is_gemini(path: str) -> bool:
    from harness.wires import GEMINI

    return GEMINI.serves(path)


def _refused(gemini: bool, status: int, content: bytes) -> str | None:
    """The one line for a key the upstream refused, None for any other answer."""
    if gemini:
        from harness.providers.gemini import key_refused as gemini_refused

        return gemini_refused(status, content)
    return key_refused(status, content) if status in (401, 403) else None


def _host(uri: str) -> str | None:
    from urllib.parse import urlsplit

    return urlsplit(uri).hostname


def _headers(headers: dict[str, list[str]]) -> list[tuple[bytes, bytes]]:
    return [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, values in headers.items()
        if name.lower() not in _DROPPED
        for value in values
    ]


def _served(response: dict[str, Any]) -> tuple[int, list, bytes]:
    content = response["body"]["string"] or b""
    if isinstance(content, str):
        content = content.encode("utf-8")
    return int(response["status"]["code"]), _headers(response.get("headers") or {}), content


def _error(path: str, status: int, message: str, code: str) -> tuple[int, list, bytes]:
    """An error answer in the form of the wire of ``path`` (OpenAI's for any other path)."""
    import json

    body = (wire_for(path) or OPENAI_CHAT).render_error(WireError(status, message, code))
    return status, [(b"content-type", b"application/json")], json.dumps(body).encode()
